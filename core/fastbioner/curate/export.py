"""Exporting a working set: which documents, which span sources, which format, one
file or one file per document. The writers themselves are :mod:`fastbioner.io.formats`;
this module only chooses what goes to them and names the files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from fastbioner.curate.curation import select_sources
from fastbioner.io.documents import Document, Source, Span
from fastbioner.io.formats import format_module, write_documents
from fastbioner.io.formats.report import WriteReport
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.text import document_sentences

# What the export dialog offers: a name, the format, and the writer's options.
EXPORT_FORMATS: dict[str, tuple[str, dict]] = {
    "BIO / CoNLL (IOB2)": ("conll", {"scheme": "IOB2"}),
    "BIO / CoNLL (IOBES)": ("conll", {"scheme": "IOBES"}),
    "PubTator": ("pubtator", {}),
    "BioC XML": ("bioc", {}),
    "JSONL (lossless)": ("jsonl", {}),
}


# What export takes unless told otherwise: entities a person stands behind (gold ones,
# and a curator's or suggestions a curator accepted), never undecided suggestions.
REVIEWED_SOURCES = (Source.GOLD, Source.CURATOR)


@dataclass
class ExportSettings:
    format: str = "BIO / CoNLL (IOB2)"    # a key of EXPORT_FORMATS
    sources: tuple[Source, ...] = REVIEWED_SOURCES
    per_document: bool = False            # one file per document, in the folder ``path``


@dataclass
class ExportResult:
    reports: list[WriteReport] = field(default_factory=list)
    # Every span a writer could not hold, one line each naming document, text and why.
    dropped: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return sum(r.documents for r in self.reports)

    @property
    def spans(self) -> int:
        return sum(r.spans for r in self.reports)

    @property
    def left_out(self) -> int:
        """Overlapping spans BIO could not hold (longest first kept)."""
        return sum(len(r.left_out) for r in self.reports)

    @property
    def off_boundary(self) -> int:
        return sum(len(r.off_boundary) for r in self.reports)

    @property
    def annotators_not_held(self) -> int:
        """Spans written without the annotator adjudication recorded (PubTator, BIO)."""
        return sum(r.annotators_not_held for r in self.reports)

    def summary(self) -> str:
        files = len(self.reports)
        text = (f"Exported {self.documents} document(s) and {self.spans} span(s) "
                f"to {files} file{'s' if files != 1 else ''}")
        if self.left_out:
            text += f"; {self.left_out} overlapping span(s) BIO could not hold were left out (longest kept)"
        if self.off_boundary:
            text += f"; {self.off_boundary} span(s) off token or sentence boundaries not written"
        if self.annotators_not_held:
            text += (f"; which annotator marked {self.annotators_not_held} span(s) is not written (this format "
                     "cannot hold it: JSONL, BioC and project files do)")
        return text


def describe_dropped(doc: Document, span: Span, why: str) -> str:
    """One line naming a span an export could not write: document, text, label,
    offsets and the reason."""
    return f"{doc.id}: '{doc.span_text(span)}' ({span.label}, {span.source.value}, {span.start}..{span.end}): {why}"


def _why_off_boundary(doc: Document, span: Span) -> str:
    for sent in document_sentences(doc):
        if sent.start <= span.start < sent.end:
            return ("crosses a sentence end (BIO holds an entity within one sentence)" if span.end > sent.end
                    else "does not start and end on token boundaries")
    return "lies outside every sentence"


def _dropped_lines(report: WriteReport, docs: Sequence[Document]) -> list[str]:
    by_id: dict[str, Document] = {}
    for d in docs:
        by_id.setdefault(d.id, d)
    lines = []
    for doc_id, span in report.off_boundary:
        doc = by_id.get(doc_id)
        lines.append(describe_dropped(doc, span, _why_off_boundary(doc, span)) if doc else f"{doc_id}: {span}")
    for doc_id, span in report.left_out:
        doc = by_id.get(doc_id)
        lines.append(describe_dropped(doc, span, "overlaps a longer span BIO kept") if doc else f"{doc_id}: {span}")
    return lines


def extension(fmt: str) -> str:
    return format_module(fmt).EXTENSIONS[0]


def file_name(doc_id: str, used: set[str], suffix: str) -> str:
    """A safe, unique file name for a document id (ids may repeat or hold slashes)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", doc_id).strip("._") or "document"
    name, n = f"{stem}{suffix}", 1
    while name in used:
        n += 1
        name = f"{stem}-{n}{suffix}"
    used.add(name)
    return name


def export_documents(docs: Sequence[Document], path: str | Path, settings: ExportSettings,
                     on_event: EventCallback | None = None, cancel: CancelToken | None = None) -> ExportResult:
    """Write ``docs`` (only the spans of ``settings.sources``) to ``path``: a file, or
    with ``per_document`` a folder of one file per document. Each file is written
    atomically; a cancel stops between files."""
    fmt, options = EXPORT_FORMATS[settings.format]
    chosen = [select_sources(d, settings.sources) for d in docs]

    def job(reporter: ProgressReporter) -> ExportResult:
        result = ExportResult()
        if not settings.per_document:
            reporter.stage("export", total=1)
            result.reports.append(write_documents(chosen, path, fmt, **options))
            result.dropped.extend(_dropped_lines(result.reports[-1], chosen))
            reporter.emit(step=1)
            return result
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        reporter.stage("export", total=len(chosen))
        used: set[str] = set()
        suffix = extension(fmt)
        for i, doc in enumerate(chosen):
            reporter.check()
            result.reports.append(write_documents([doc], folder / file_name(doc.id, used, suffix), fmt, **options))
            result.dropped.extend(_dropped_lines(result.reports[-1], [doc]))
            reporter.emit(step=i + 1)
        return result

    return run_job(job, on_event, cancel)

