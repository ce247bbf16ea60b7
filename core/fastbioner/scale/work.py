"""The units of work both engines share, so that they cannot tag differently: a
shard's job (which input, which of its documents), reading its kept documents in
chunks, and the model as files that can travel to another machine. Nothing here
imports torch (Ray's reading tasks run these functions)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Iterator

import numpy as np

from ..documents import Document
from ..formats import read_documents
from .updates import InputScan, scan_input


@dataclass
class ShardJob:
    """Tag the documents of ``path`` whose entry in ``keep`` is true (file order),
    ``chunk_documents`` at a time, into ``shard``."""

    path: str
    input_format: str | None
    keep: np.ndarray
    chunk_documents: int
    shard: str


def read_kept_chunks(job: ShardJob) -> Iterator[list[Document]]:
    """The kept documents of one input, in file order, as chunks of the job's size.
    The chunks are the same whichever engine reads them (and so are the batches the
    tagger forms from them)."""
    kept = (doc for doc, keep in zip(read_documents(job.path, job.input_format), job.keep) if keep)
    while chunk := list(islice(kept, job.chunk_documents)):
        yield chunk


def scan_task(path: str, input_format: str | None) -> InputScan:
    """:func:`~.updates.scan_input` as a Ray task. Ray tasks live here, in a module that
    imports no torch, so that a worker that only reads starts in a second."""
    return scan_input(path, input_format)


def read_task(job: ShardJob) -> Iterator[list[Document]]:
    """:func:`read_kept_chunks` as a Ray streaming task (chunks go to the actors as they
    are read)."""
    yield from read_kept_chunks(job)


@dataclass(frozen=True)
class ModelRef:
    """A model folder and a digest of all its files (weights, tokenizer, manifest):
    a shard records the digest, so a changed model re-tags on resume."""

    folder: Path
    name: str
    digest: str

    @classmethod
    def resolve(cls, name_or_folder: str | Path) -> "ModelRef":
        from ..inference import resolve_model

        folder, name, _ = resolve_model(name_or_folder)
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        return cls(Path(folder), name, digest.hexdigest())

    def files(self) -> dict[str, bytes]:
        """The folder's files by relative path: shipped once to every Ray worker so a
        cluster needs no shared model folder."""
        return {str(p.relative_to(self.folder)): p.read_bytes()
                for p in sorted(self.folder.rglob("*")) if p.is_file()}
