"""What a writer did: counts a user needs to trust an export (spans it could not write)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastbioner.io.documents import Document, Span
from fastbioner.io.labels import DocumentTags


@dataclass
class WriteReport:
    """Returned by every ``write``. ``left_out`` (overlapping spans the BIO view could not
    hold, longest first kept) and ``off_boundary`` (spans not on token boundaries) are
    ``(document id, span)`` pairs, so a caller can list them; formats that hold every
    span leave both empty."""

    path: str
    format: str
    documents: int = 0
    sentences: int = 0
    spans: int = 0
    left_out: list[tuple[str, Span]] = field(default_factory=list)
    off_boundary: list[tuple[str, Span]] = field(default_factory=list)
    # Spans of documents written to a format that holds none (plain text, MEDLINE, PubMed XML).
    spans_not_held: int = 0
    # Spans whose annotator (adjudication's record of who marked them) the format cannot
    # hold (PubTator, BIO): the spans are written, the annotator is dropped.
    annotators_not_held: int = 0

    def add(self, doc: Document, tagged: DocumentTags | None = None, holds_spans: bool = True,
            holds_annotators: bool = True) -> None:
        """Count one written document; ``tagged`` (a labels.DocumentTags) is its BIO
        view when the format has one."""
        self.documents += 1
        if not holds_annotators:
            self.annotators_not_held += sum(s.annotator is not None for s in doc.spans)
        if not holds_spans:
            self.spans_not_held += len(doc.spans)
            return
        if tagged is None:
            self.spans += len(doc.spans)
            return
        self.sentences += len(tagged.sentences)
        self.left_out.extend((doc.id, s) for s in tagged.left_out)
        self.off_boundary.extend((doc.id, s) for s in tagged.off_boundary)
        self.spans += tagged.n_spans_written

    def summary(self) -> str:
        """One line for the CLI and the app's status bar."""
        text = f"wrote {self.documents} document(s), {self.spans} span(s) to {self.path} ({self.format})"
        if self.sentences:
            text += f", {self.sentences} sentence(s)"
        if self.off_boundary:
            text += f"; {len(self.off_boundary)} span(s) off token boundaries not written"
        if self.spans_not_held:
            text += f"; {self.spans_not_held} span(s) not written ({self.format} holds no entities)"
        if self.left_out:
            text += f"; {len(self.left_out)} overlapping span(s) left out (longest first kept)"
        if self.annotators_not_held:
            text += (f"; which annotator marked {self.annotators_not_held} span(s) not written ({self.format} "
                     "cannot hold it: JSONL, BioC and project files do)")
        return text
