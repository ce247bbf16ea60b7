"""Counts that tell a curator what a corpus holds, and what its BIO view would lose."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from fastbioner.io.documents import Document
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.labels import document_tagged_sentences


@dataclass
class CorpusStats:
    documents: int = 0
    sentences: int = 0
    tokens: int = 0
    characters: int = 0
    entities: Counter = field(default_factory=Counter)  # all spans, per label
    off_boundary: Counter = field(default_factory=Counter)  # spans not on token boundaries
    overlapping: Counter = field(default_factory=Counter)  # spans BIO leaves out (longest first)
    relations: int = 0

    def add(self, doc: Document) -> None:
        tagged = document_tagged_sentences(doc)
        self.documents += 1
        self.sentences += len(tagged.sentences)
        self.tokens += sum(len(s.words) for s in tagged.sentences)
        self.characters += len(doc.text)
        self.entities.update(s.label for s in doc.spans)
        self.off_boundary.update(s.label for s in tagged.off_boundary)
        self.overlapping.update(s.label for s in tagged.left_out)
        self.relations += len(doc.relations)

    def lines(self) -> list[str]:
        """The report ``fastbioner stats`` prints."""
        out = [f"documents: {self.documents:,}", f"sentences: {self.sentences:,}",
               f"tokens: {self.tokens:,}", f"characters: {self.characters:,}"]
        if self.relations:
            out.append(f"relations: {self.relations:,}")
        out.append(f"entities: {sum(self.entities.values()):,}")
        for label in sorted(self.entities):
            line = f"  {label}: {self.entities[label]:,}"
            lost = []
            if self.off_boundary[label]:
                lost.append(f"{self.off_boundary[label]:,} off token boundaries")
            if self.overlapping[label]:
                lost.append(f"{self.overlapping[label]:,} overlapping (left out of BIO)")
            out.append(line + (f" ({'; '.join(lost)})" if lost else ""))
        out.append(f"spans off token boundaries: {sum(self.off_boundary.values()):,}")
        out.append(f"overlapping spans left out of BIO: {sum(self.overlapping.values()):,}")
        return out


def corpus_stats(docs: Iterable[Document], on_event: EventCallback | None = None,
                 cancel: CancelToken | None = None) -> CorpusStats:
    """Count documents, sentences, tokens and entities (per label), and the spans a
    BIO export could not hold."""
    def job(reporter: ProgressReporter) -> CorpusStats:
        reporter.stage("stats")
        stats = CorpusStats()
        for n, doc in enumerate(docs, 1):
            reporter.check()
            stats.add(doc)
            if n % 100 == 0:
                reporter.emit(step=n)
        return stats

    return run_job(job, on_event, cancel)  # ends with its final event, as every job does
