"""The units of work both engines share, so that they cannot tag differently: parsing
an input once into a document spool (ids, text hashes, deletions), and the model as
files that can travel to another machine. Nothing here imports torch (Ray's parsing
tasks run these functions)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fastbioner.base.errors import FastBioNERError, InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats import read_documents
from fastbioner.base.jobs import Cancelled, CancelToken
from fastbioner.scale.shards import DOC_SCHEMA, doc_row
from fastbioner.scale.updates import InputScan

# resolve_model (the Tagger's module: torch) is imported when called: a Ray parsing task imports
# this module without torch.

SPOOL_ROWS = 2048   # documents per spool row group: what parsing holds in memory at a time


def file_digest(path: str | Path) -> tuple[int, str]:
    """(size, SHA-256) of a file: how a folder recognises an input it has seen."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return os.path.getsize(path), h.hexdigest()


def parse_input(path: str, input_format: str | None, spool: str, cancel: CancelToken | None = None
                ) -> InputScan:
    """Parse ``path`` once: every document goes to ``spool`` (a Parquet file of id, text,
    passages and text hash, written atomically, for the tagging stage to read instead
    of parsing again), and the scan (ids and hashes in file order, the PMIDs it
    deletes, size and SHA-256) is returned. Memory stays at one row group. Bad input
    raises :class:`fastbioner.base.errors.InputError` naming the file."""
    reader = read_documents(path, input_format)
    ids: list[str] = []
    hashes: list[int] = []
    rows: list[dict] = []
    with atomic_write(spool, "wb") as fh:
        writer = pq.ParquetWriter(fh, DOC_SCHEMA, compression="zstd")
        try:
            for doc in reader:
                row = doc_row(doc)
                ids.append(row["pmid"])
                hashes.append(row["text_hash"])
                rows.append(row)
                if len(rows) >= SPOOL_ROWS:
                    if cancel is not None:
                        cancel.check()
                    writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=DOC_SCHEMA))
                    rows = []
            if rows:
                writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=DOC_SCHEMA))
        finally:
            writer.close()
    size, sha = file_digest(path)
    scan = InputScan.of(str(path), ids, list(getattr(reader, "deleted", ()) or ()), sha,
                        hashes=np.array(hashes, dtype=np.int64))
    scan.size = size
    return scan


def parse_task(path: str, input_format: str | None, spool: str) -> InputScan:
    """:func:`parse_input` as a Ray task. Ray tasks live here, in a module that imports
    no torch, so that a worker that only parses starts in a second."""
    return parse_input(path, input_format, spool)


@dataclass(frozen=True)
class ModelRef:
    """A model folder, the name the user gave it (a registry name, or the folder's
    path), and a digest of all its files (weights, tokenizer, manifest): the
    folder's fingerprint holds the digest, so a changed model re-tags."""

    folder: Path
    name: str
    digest: str

    @classmethod
    def resolve(cls, name_or_folder: str | Path) -> "ModelRef":
        from fastbioner.infer.inference import resolve_model

        folder, name, _ = resolve_model(name_or_folder)
        given = Path(name_or_folder)
        # A folder given by path is named by its path (not the temporary copy a Ray
        # worker loads from, nor a bare folder name another folder could share).
        shown = str(given.resolve()) if given.is_dir() else (name or str(name_or_folder))
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        return cls(Path(folder), shown, digest.hexdigest())

    def files(self) -> dict[str, bytes]:
        """The folder's files by relative path: shipped once to every Ray worker so a
        cluster needs no shared model folder."""
        return {str(p.relative_to(self.folder)): p.read_bytes()
                for p in sorted(self.folder.rglob("*")) if p.is_file()}


def parse_failure(path: str, exc: BaseException) -> Exception:
    """What a run reports for an input that could not be parsed: the input's own
    one-line error, or one naming the file for anything unexpected. A cancel is not
    a failure: it is raised again."""
    if isinstance(exc, Cancelled):
        raise exc
    if isinstance(exc, FastBioNERError):
        return exc
    return InputError(f"cannot be read: {type(exc).__name__}: {exc}", path)
