"""Parquet shards of a corpus folder: one per input file, holding that input's
current documents, written atomically.

A shard's rows are the documents whose current copy comes from its input, in file
order: ``pmid`` (the document id), ``text`` (title, one space, abstract, as
everywhere in the project), ``passages`` (title and abstract sections as offsets
into ``text``), ``text_hash`` (of text and passages: what decides whether a
document must be tagged again) and ``spans``, a list of ``{start, end, label,
score, text}`` with character offsets into ``text``. The Parquet metadata holds the
fingerprint of what the spans depend on (:func:`fingerprint`) and the shard's
counts. A shard is written into the folder's next snapshot, which readers see only
once the whole run's snapshot is published (:mod:`.view`).

Spans are **batch-invariant**: a document's rows depend on the document alone, never
on which documents share its chunk (:func:`tag_chunk`). In float32 on a CPU the
documents of a chunk are tagged together, windows batched only with windows padded to
the same width, a function of each window's own length, in batches of at least 64
positions (:func:`fastbioner.infer.inference.invariant_batches`): measured, a batch's
padded width changed a transformer's float32 scores, and a matrix product of under 16
rows ran another kernel than larger ones, which agreed. Any other mode is tagged
one document per call: int8's dynamic quantisation scales an activation tensor by its
largest value, so batch mates moved scores by up to 0.9 and changed the spans of 7 of
100 abstracts, and bfloat16 on this machine's AMX changed the convolutional model's
scores with the batch's rows; a GPU's kernels are not known to be invariant.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fastbioner.io.documents import Document, Passage, Source
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats import FORMATS

SCHEMA_VERSION = 2
SPAN_TYPE = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("label", pa.string()),
                       ("score", pa.float32()), ("text", pa.string())])
PASSAGE_TYPE = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("kind", pa.string()),
                          ("label", pa.string())])
SCHEMA = pa.schema([("pmid", pa.string()), ("text", pa.string()), ("passages", pa.list_(PASSAGE_TYPE)),
                    ("text_hash", pa.int64()), ("spans", pa.list_(SPAN_TYPE))])
# What the folder's index and the document spool hold (no spans).
DOC_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "spans"])
META_KEY = b"fastbioner"


def text_hash(doc: Document) -> int:
    """A 64-bit hash of what the tagger reads of a document (its text and passage
    layout): equal hashes, equal spans under one fingerprint."""
    h = hashlib.blake2b(digest_size=8)
    h.update(doc.text.encode("utf-8", "surrogatepass"))
    for p in doc.passages:
        h.update(f"\0{p.start}:{p.end}:{p.kind}:{p.label or ''}".encode())
    return int.from_bytes(h.digest(), "little", signed=True)


def doc_row(doc: Document) -> dict[str, Any]:
    return {"pmid": doc.id, "text": doc.text, "text_hash": text_hash(doc),
            "passages": [{"start": p.start, "end": p.end, "kind": p.kind, "label": p.label}
                         for p in doc.passages]}


def row_document(row: dict[str, Any]) -> Document:
    """The document a shard or spool row holds (what the tagger needs: id, text, passages)."""
    return Document(row["pmid"], row["text"],
                    [Passage(p["start"], p["end"], p["kind"], p["label"]) for p in row["passages"] or []])


@dataclass
class ChunkResult:
    """A tagged chunk of documents as shard rows, with what a summary counts."""

    batch: pa.RecordBatch
    documents: int
    sentences: int
    tokens: int
    entities: dict[str, int]
    seconds: float          # time the tagger spent on it (a worker's busy time)


TRIM_EVERY_DOCUMENTS = 1000
_since_trim = 0


def release_freed_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Tagging documents of ever new shapes leaves the heap fragmented: the
    convolutional int8 model grew from 283 to 397 MB over 4,000 generated abstracts,
    and stayed at 312-318 MB over 5,000 with a trim every 1,000."""
    pa.default_memory_pool().release_unused()   # Arrow's own pool (the shards' tables)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def batches_invariantly(precision: str, device: str) -> bool:
    """Whether documents are tagged together (float32 on a CPU) or one per call (any
    other mode): see the module's doc. The fingerprint records which."""
    return precision == "fp32" and device == "cpu"


def tag_chunk(tagger, docs: Sequence[Document]) -> ChunkResult:
    """Tag one chunk with the project's :class:`~fastbioner.infer.inference.Tagger` and turn it
    into rows: the single tagging path both engines run (locally, or in a Ray actor).
    Documents whose spans could depend on their chunk mates are tagged one per call
    (see the module's doc); that cost the convolutional int8 model about 1.6x its time
    on abstracts."""
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    entities: Counter[str] = Counter()
    sentences = tokens = 0
    together = batches_invariantly(tagger.precision.value, tagger.device.type)
    tagger.batch_invariant = together
    for group in ([list(docs)] if together else [[doc] for doc in docs]):
        result = tagger.tag_chunk(group, keep=())
        sentences += result.sentences
        tokens += result.tokens
        for doc, tagged in zip(group, result.documents):
            model_spans = [s for s in tagged.spans if s.source is Source.MODEL]
            entities.update(s.label for s in model_spans)
            row = doc_row(doc)
            row["spans"] = [{"start": s.start, "end": s.end, "label": s.label, "score": s.score,
                             "text": doc.text[s.start:s.end]} for s in model_spans]
            rows.append(row)
    batch = pa.RecordBatch.from_pylist(rows, schema=SCHEMA)
    global _since_trim
    _since_trim += len(docs)
    if _since_trim >= TRIM_EVERY_DOCUMENTS:   # memory bounded over a long run
        _since_trim = 0
        release_freed_memory()
    return ChunkResult(batch, len(docs), sentences, tokens, dict(entities), time.perf_counter() - t0)


_SUFFIXES = sorted({ext for m in FORMATS.values() for ext in m.EXTENSIONS} | {".xml", ".txt"},
                   key=len, reverse=True)


def shard_name(path: str | Path) -> str:
    """``pubmed25n0001.xml.gz`` -> ``pubmed25n0001.parquet``. Never starts with ``_`` or
    ``.`` (Parquet readers of the folder skip such files): ``_late.pubtator`` ->
    ``late.parquet``."""
    name = Path(path).name
    low = name.lower()
    if low.endswith(".gz"):
        name, low = name[:-3], low[:-3]
    for ext in _SUFFIXES:
        if low.endswith(ext) and len(ext) < len(low):
            name = name[:-len(ext)]
            break
    else:
        name = Path(name).stem or name
    return (name.lstrip("_.") or "input") + ".parquet"


_PUBMED_FILE = re.compile(r"^pubmed(\d+)n(\d+)\.xml(?:\.gz)?$", re.IGNORECASE)


def pubmed_file_number(path: str | Path) -> tuple[int, int] | None:
    """(release year, file number) of a PubMed baseline or update file name
    (``pubmed25n1275.xml.gz`` -> (25, 1275)); update files continue the baseline's
    numbering, so this orders them oldest first."""
    m = _PUBMED_FILE.match(Path(path).name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def file_record(path: Path) -> dict[str, Any] | None:
    """What a complete shard (or checkpoint) says about itself (fingerprint, counts);
    None when the file is not a readable one of this kind and version."""
    try:
        meta = pq.read_schema(path).metadata or {}
        record = json.loads(meta[META_KEY])
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None
    return record if record.get("schema_version") == SCHEMA_VERSION else None


def write_rows(path: Path, table: pa.Table, record: dict[str, Any]) -> dict[str, Any]:
    """Write ``table`` (shard rows) atomically with ``record`` and its counts in the
    metadata; returns the metadata written."""
    # Counted in Arrow: a Python loop over every span cost as much as tagging tiny documents.
    labels = pc.list_flatten(table.column("spans")).combine_chunks().field("label") if table.num_rows else None
    entities = {} if labels is None or not len(labels) else \
        {c["values"]: c["counts"] for c in pc.value_counts(labels).to_pylist()}
    info = dict(record, schema_version=SCHEMA_VERSION, documents=table.num_rows,
                entities=dict(sorted(entities.items())))
    table = table.cast(SCHEMA).replace_schema_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return info
