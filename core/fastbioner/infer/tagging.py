"""Tagging files as a job: read documents lazily, tag them a chunk at a time, write
them as they come, with progress events and cancel.

Memory stays bounded by the chunk (documents are read, tagged and written
``chunk_documents`` at a time; nothing accumulates), and the output is complete or
absent: the writer streams into a temporary file that is renamed only when the last
document is written, so a cancel or an error leaves no partial file.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
import sys
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from fastbioner.base.defaults import table
from fastbioner.io.documents import Document, Source
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.infer.inference import Tagger
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job

# Documents read, tagged and written together (memory is bounded by this): the defaults table's.
CHUNK_DOCUMENTS: int = table().section("tagging")["chunk"]


class Throughput:
    """Speed figures of a run that tagged ``documents`` holding ``tokens`` word tokens
    in ``seconds`` (a mixin for the dataclasses that record such runs)."""

    documents: int
    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def ms_per_abstract(self) -> float:
        return 1000.0 * self.seconds / self.documents if self.documents else 0.0


@dataclass
class TagSummary(Throughput):
    """What a tagging job did, for the CLI's summary and the app's status bar."""

    out: str
    format: str
    documents: int = 0
    sentences: int = 0
    tokens: int = 0
    entities: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""
    device: str = ""
    precision: str = ""
    threads: int = 0
    thread_choice: str = ""         # the count and why, e.g. "1 thread (2 cores, 1.9 busy elsewhere)"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(tokens_per_s=self.tokens_per_s, ms_per_abstract=self.ms_per_abstract)
        return d

    def lines(self) -> list[str]:
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.entities.items())) or "none"
        return [
            f"tagged {self.documents} document(s), {self.sentences} sentence(s), {self.tokens} token(s) "
            f"-> {self.out} ({self.format})",
            f"entities: {sum(self.entities.values())} ({types})",
            f"speed: {self.tokens_per_s:,.0f} tokens/s, {self.ms_per_abstract:.1f} ms per document "
            f"({self.model}; {self.device}, {self.precision}, "
            f"{self.thread_choice or f'{self.threads} thread(s)'})",
        ]


def iter_documents(inputs: Sequence[str | Path], input_format: str | None = None) -> Iterator[Document]:
    for path in inputs:
        yield from read_documents(path, input_format)


def _chunks(items: Iterable[Document], size: int) -> Iterator[list[Document]]:
    # A --chunk past sys.maxsize means "all at once"; islice would raise a ValueError.
    size = min(max(1, size), sys.maxsize)
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def count_documents(inputs: Sequence[str | Path], input_format: str | None = None,
                    cancel: CancelToken | None = None) -> int:
    """Documents in the inputs (one reading pass, nothing kept), for a caller that
    wants a total before it starts; ``tag_files`` does not count (it reads once)."""
    n = 0
    for _ in iter_documents(inputs, input_format):
        n += 1
        if cancel is not None and n % 1000 == 0:
            cancel.check()
    return n


def tag_files(tagger: Tagger, inputs: Sequence[str | Path], out: str | Path, out_format: str, *,
              input_format: str | None = None, chunk_documents: int = CHUNK_DOCUMENTS,
              keep: Iterable[Source] = (Source.CURATOR,), on_event: EventCallback | None = None,
              cancel: CancelToken | None = None) -> TagSummary:
    """Tag every document of ``inputs`` into ``out`` (format ``out_format``).

    Spans already in the input are dropped except those whose source is in ``keep``
    (a curator's corrections survive re-tagging). Events: stage ``tag`` with ``step``
    = documents written so far and metrics ``tokens_per_s`` and ``entities``; no total,
    since the inputs are read once (a named pipe, ``/dev/stdin`` or ``<(...)`` can be
    read only once, and counting first would read a large file twice). Bad input met
    late still leaves no output: the writer's file is complete or absent."""
    keep = tuple(keep)

    def job(reporter: ProgressReporter) -> TagSummary:
        reporter.stage("tag", message="tagging")
        summary = TagSummary(out=str(out), format=out_format, **_run_info(tagger))
        entities: Counter[str] = Counter()
        t0 = time.perf_counter()

        def tagged() -> Iterator[Document]:
            for chunk in _chunks(iter_documents(inputs, input_format), chunk_documents):
                reporter.check()
                result = tagger.tag_chunk(chunk, keep, reporter.cancel)
                for doc in result.documents:
                    entities.update(s.label for s in doc.spans if s.source is Source.MODEL)
                summary.documents += len(chunk)
                summary.sentences += result.sentences
                summary.tokens += result.tokens
                summary.seconds = time.perf_counter() - t0
                yield from result.documents
                reporter.emit(step=summary.documents, message=f"{summary.documents} documents",
                              metrics={"tokens_per_s": round(summary.tokens_per_s, 1),
                                       "entities": sum(entities.values())})

        write_documents(tagged(), out, out_format)
        summary.seconds = time.perf_counter() - t0
        summary.entities = dict(sorted(entities.items()))
        return summary

    return run_job(job, on_event, cancel)


def _run_info(tagger: Tagger) -> dict[str, Any]:
    info = tagger.describe()
    return {"model": info["model"], "device": info["device"], "precision": info["precision"],
            "threads": info["threads"], "thread_choice": info.get("thread_choice", "")}
