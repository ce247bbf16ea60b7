"""Parquet shards of a corpus run: one per input file, written atomically.

A shard's rows are the input's kept documents in file order: ``pmid`` (the document
id) and ``spans``, a list of ``{start, end, label, score, text}`` with character
offsets into the document text (title, one space, abstract, as everywhere in the
project) and the span's text. The shard's Parquet metadata holds a fingerprint of
everything its rows depend on (the input's bytes, which of its documents were kept,
the model's weights, the tagging settings) and its counts; resume skips a shard
whose fingerprint matches, and a shard is written to a temporary file renamed into
place only when complete, so an interrupted run leaves complete shards or none.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..documents import Document, Source
from ..errors import InputError
from ..fileio import atomic_write
from ..formats import FORMATS

SCHEMA_VERSION = 1
SPAN_TYPE = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("label", pa.string()),
                       ("score", pa.float32()), ("text", pa.string())])
SCHEMA = pa.schema([("pmid", pa.string()), ("spans", pa.list_(SPAN_TYPE))])
META_KEY = b"fastbioner"


@dataclass
class ChunkResult:
    """A tagged chunk of documents as shard rows, with what a summary counts."""

    batch: pa.RecordBatch
    documents: int
    sentences: int
    tokens: int
    entities: dict[str, int]
    seconds: float          # time the tagger spent on it (a worker's busy time)


def tag_chunk(tagger, docs: Sequence[Document]) -> ChunkResult:
    """Tag one chunk with the project's :class:`~fastbioner.inference.Tagger` and turn it
    into rows: the single tagging path both engines run (locally, or in a Ray actor)."""
    t0 = time.perf_counter()
    result = tagger.tag_chunk(docs, keep=())
    pmids, spans = [], []
    entities: Counter[str] = Counter()
    for doc in result.documents:
        model_spans = [s for s in doc.spans if s.source is Source.MODEL]
        entities.update(s.label for s in model_spans)
        pmids.append(doc.id)
        spans.append([{"start": s.start, "end": s.end, "label": s.label, "score": s.score,
                       "text": doc.text[s.start:s.end]} for s in model_spans])
    batch = pa.RecordBatch.from_arrays([pa.array(pmids, pa.string()), pa.array(spans, pa.list_(SPAN_TYPE))],
                                       schema=SCHEMA)
    return ChunkResult(batch, len(docs), result.sentences, result.tokens, dict(entities),
                       time.perf_counter() - t0)


@dataclass
class ShardStats:
    documents: int = 0
    sentences: int = 0
    tokens: int = 0
    entities: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, chunk: ChunkResult) -> None:
        self.documents += chunk.documents
        self.sentences += chunk.sentences
        self.tokens += chunk.tokens
        self.seconds += chunk.seconds
        for label, n in chunk.entities.items():
            self.entities[label] = self.entities.get(label, 0) + n


_SUFFIXES = sorted({ext for m in FORMATS.values() for ext in m.EXTENSIONS} | {".xml", ".txt"},
                   key=len, reverse=True)


def shard_name(path: str | Path) -> str:
    """``pubmed25n0001.xml.gz`` -> ``pubmed25n0001.parquet``."""
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
    return name + ".parquet"


def shard_paths(inputs: Sequence[str | Path], out_dir: Path) -> list[Path]:
    """One shard per input; two inputs that would share a shard name are refused."""
    seen: dict[str, str] = {}
    out = []
    for path in inputs:
        name = shard_name(path)
        if name in seen:
            raise InputError(f"{path} and {seen[name]} would both write the shard {name}: "
                             f"rename one of them")
        seen[name] = str(path)
        out.append(out_dir / name)
    return out


def fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def shard_fingerprint(path: Path) -> str | None:
    """The fingerprint a complete shard was written with; None when the file is not
    a readable shard of this kind."""
    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[META_KEY])["fingerprint"]
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None


def shard_record(path: Path) -> dict[str, Any]:
    """What a complete shard says about itself (counts, settings)."""
    return json.loads((pq.read_schema(path).metadata or {})[META_KEY])


def write_shard(path: Path, chunks: Iterable[ChunkResult], record: dict[str, Any],
                check=None) -> ShardStats:
    """Write the rows of ``chunks`` (in order) as one shard, atomically: a cancel or an
    error while chunks are still coming leaves no file. ``check()`` runs between
    chunks (the job's cancel check). ``record`` goes into the metadata, with counts."""
    stats = ShardStats()
    batches = []
    for chunk in chunks:
        if check is not None:
            check()
        batches.append(chunk.batch)
        stats.add(chunk)
    table = pa.Table.from_batches(batches, schema=SCHEMA)
    info = dict(record, schema_version=SCHEMA_VERSION, documents=stats.documents, sentences=stats.sentences,
                tokens=stats.tokens, entities=dict(sorted(stats.entities.items())))
    table = table.replace_schema_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return stats
