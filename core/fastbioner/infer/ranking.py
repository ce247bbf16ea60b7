"""The review queue's order: the documents a model is least sure of, first.

``rank_files(tagger, inputs, top, out)`` is a job (progress events, cancel). It
reads the inputs twice, never holding more than a chunk and the chosen documents:
once to score every document by :mod:`fastbioner.infer.uncertainty`'s figure, once to
write the ``top`` most uncertain ones, most uncertain first, to ``out`` (complete or
absent). Decisions a caller may rely on:

- The input's own spans play no part: the model reads only each document's text
  and passages.
- The order is deterministic: figure (rounded to 6 decimals, so float noise cannot
  reorder equal documents) descending, then document id, then input position.
- Documents are written as they were read (id, text, passages, spans, relations),
  with the figure and the rank added to their metadata (``uncertainty``); with
  ``suggestions`` the model's spans are added where the input has none overlapping.
- Each document is queued once: an input given twice (or a file inside a folder also
  given) is read once, and a document repeated with the same id and text is ranked
  at its first place; both are said (``RankSummary.notes``). Documents sharing an id
  but not their text are different documents: all are ranked, and that is said too.
- A file of a folder that cannot be read is left out and said (``RankSummary.errors``,
  the command's exit status 1), as ``convert`` and ``stats`` do; a file given by name
  that cannot be read stops the ranking.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from fastbioner.io.documents import Document, Source
from fastbioner.base.errors import InputError
from fastbioner.io.formats import read_any, read_documents, write_documents
from fastbioner.infer.inference import Tagger
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.infer.tagging import CHUNK_DOCUMENTS, _chunks
from fastbioner.infer.uncertainty import FIGURE, METADATA_KEY, DocumentUncertainty


@dataclass(frozen=True)
class RankedDocument:
    id: str
    position: int                  # 0-based, in the order the inputs were read
    uncertainty: DocumentUncertainty

    @property
    def value(self) -> float:
        return self.uncertainty.value


@dataclass
class RankSummary:
    out: str
    documents: int = 0                                   # documents read and scored
    ranked: list[RankedDocument] = field(default_factory=list)  # the ones written, in order
    figure: str = FIGURE
    model: str = ""
    seconds: float = 0.0
    errors: list[InputError] = field(default_factory=list)  # files of a folder left out
    notes: list[str] = field(default_factory=list)          # inputs given twice, repeated documents

    @property
    def status(self) -> int:
        """The command's exit status: 1 when a file was left out (the others ranked)."""
        return 1 if self.errors else 0

    def lines(self) -> list[str]:
        head = [f"ranked {self.documents} document(s) by {self.figure} ({self.model}); "
                f"wrote the {len(self.ranked)} most uncertain to {self.out}",
                f"{'rank':>4}  {'document':<20} {self.figure:>15} {'tokens':>7} {'per token':>9}"]
        return head + [f"{i:>4}  {r.id:<20} {r.value:>15.3f} {r.uncertainty.tokens:>7} "
                       f"{r.uncertainty.per_token:>9.4f}" for i, r in enumerate(self.ranked, 1)]


def iter_documents(inputs: Sequence[str | Path], input_format: str | None = None,
                   errors: list[InputError] | None = None) -> Iterator[Document]:
    """Every document of the input files and folders (a folder: each document file
    in it, as ``convert`` reads one), in order; the errors of a folder's files that
    could not be read (and were left out) go into ``errors``."""
    for path in inputs:
        if Path(path).is_dir():
            reader = read_any([path], input_format)
            yield from reader
            if errors is not None:
                errors.extend(reader.errors)
        else:
            yield from read_documents(path, input_format)


@dataclass
class _Census:
    """The first reading: how many documents, which positions repeat an earlier
    document (same id and text: left out), what to say about the input."""
    total: int = 0
    repeats: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


def _census(inputs: Sequence[str | Path], input_format: str | None, cancel: CancelToken) -> _Census:
    census = _Census()
    seen: dict[str, set[bytes]] = {}
    repeated: list[str] = []
    clashing: list[str] = []
    for n, doc in enumerate(iter_documents(inputs, input_format, census.errors)):
        if n % 1000 == 0:
            cancel.check()
        digest = hashlib.blake2b(doc.text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        texts = seen.setdefault(doc.id, set())
        if digest in texts:
            census.repeats.add(n)
            repeated.append(doc.id)
            continue
        if texts:
            clashing.append(doc.id)
        texts.add(digest)
        census.total += 1
    if repeated:
        census.notes.append(f"{len(repeated)} document(s) repeated (same id and text), ranked once: "
                            f"{_listed(repeated)}")
    if clashing:
        census.notes.append(f"{len(clashing)} document id(s) shared by documents whose text differs, "
                            f"each ranked: {_listed(clashing)}")
    return census


def _listed(ids: list[str], n: int = 5) -> str:
    unique = list(dict.fromkeys(ids))
    return ", ".join(unique[:n]) + (", ..." if len(unique) > n else "")


def _distinct(docs: Iterator[Document], repeats: set[int]) -> Iterator[Document]:
    for n, doc in enumerate(docs):
        if n not in repeats:
            yield doc


def order_key(r: RankedDocument) -> tuple:
    return (-round(r.value, 6), r.id, r.position)


def rank_files(tagger: Tagger, inputs: Sequence[str | Path], top: int, out: str | Path,
               out_format: str | None = None, *, input_format: str | None = None,
               chunk_documents: int = CHUNK_DOCUMENTS, suggestions: bool = False,
               on_event: EventCallback | None = None, cancel: CancelToken | None = None) -> RankSummary:
    """Write the ``top`` documents of ``inputs`` the model is least sure of to ``out``
    (format ``out_format``, else from its name). Events: ``read``, then ``score`` with
    ``step`` = documents scored, then ``write``."""
    from fastbioner.io.formats import distinct_inputs

    if top < 1:
        raise InputError(f"--top must be at least 1, not {top}")
    if chunk_documents < 1:
        raise InputError(f"--chunk must be at least 1, not {chunk_documents}")
    given = list(inputs)
    inputs, twice = distinct_inputs(given)

    def job(reporter: ProgressReporter) -> RankSummary:
        reporter.stage("read", message="reading input")
        census = _census(inputs, input_format, reporter.cancel)
        notes = [f"{p} given twice (or inside a folder given): read once" for p in twice] + census.notes
        total = census.total
        if total == 0:
            raise InputError("no documents found; nothing written", given[0] if given else None)

        def documents() -> Iterator[Document]:
            return _distinct(iter_documents(inputs, input_format), census.repeats)

        reporter.stage("score", total=total, message=f"scoring {total} document(s)")
        t0 = time.perf_counter()
        scored: list[RankedDocument] = []
        for chunk in _chunks(documents(), chunk_documents):
            reporter.check()
            for doc, unsure in zip(chunk, tagger.uncertainty(chunk, reporter.cancel)):
                scored.append(RankedDocument(doc.id, len(scored), unsure))
            reporter.emit(step=len(scored), message=f"{len(scored)}/{total} documents")
        ranked = sorted(scored, key=order_key)[:top]
        reporter.stage("write", total=len(ranked), message=f"writing {len(ranked)} document(s)")
        chosen = {r.position: (rank, r) for rank, r in enumerate(ranked, 1)}
        picked: dict[int, Document] = {}
        for position, doc in enumerate(documents()):
            if position in chosen:
                picked[position] = doc
        reporter.check()
        docs = [picked[r.position] for r in ranked]
        if suggestions:
            docs = tagger.annotate(docs, keep=(Source.GOLD, Source.CURATOR), cancel=reporter.cancel)

        def written() -> Iterator[Document]:
            for doc, r in zip(docs, ranked):
                reporter.check()
                doc.metadata = {**doc.metadata,
                                METADATA_KEY: {**r.uncertainty.to_metadata(), "rank": chosen[r.position][0]}}
                yield doc

        write_documents(written(), out, out_format)
        return RankSummary(str(out), len(scored), ranked, FIGURE, tagger.describe()["model"],
                           time.perf_counter() - t0, census.errors, notes)

    return run_job(job, on_event, cancel)
