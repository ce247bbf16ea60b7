"""Turns the reading view's gestures into undoable edits of the current document,
using the core's curation rules (:mod:`fastbioner.curate.curation`)."""

from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from fastbioner.curate import curation
from fastbioner.io.documents import Source, Span
from fastbioner.curate.project import DocStatus

from .models.workspace import Workspace
from .undo import SpanChange, SpansCommand, edit_command, state_of


class CurationController(QObject):
    """Acts on the workspace row being read; every edit is one command on the stack."""

    spanAdded = Signal(object)  # the new Span, so views can select it

    def __init__(self, workspace: Workspace, stack: QUndoStack, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.stack = stack
        self.row = -1
        # (spans before, spans after an accept, the text) -> spans with proposed concept ids.
        self.propose_concepts: Callable[[Sequence[Span], list[Span], str], list[Span]] | None = None

    def set_row(self, row: int) -> None:
        self.row = row

    def add(self, start: int, end: int, label: str, exact: bool = False) -> Span | None:
        if self.row < 0:
            return None
        doc = self.workspace.document(self.row)
        if not exact:
            start, end = curation.snap_to_tokens(start, end, curation.token_bounds(doc.text))
        # Surrounding white space is never part of a mention, even in an exact selection.
        while start < end and doc.text[start].isspace():
            start += 1
        while end > start and doc.text[end - 1].isspace():
            end -= 1
        if end <= start:
            return None
        span = Span(start, end, label, Source.CURATOR)
        self._edit(lambda spans: curation.add_span(spans, span), f"Add {label} '{doc.text[start:end]}'")
        self.spanAdded.emit(span)
        return span

    def relabel(self, span: Span, label: str) -> None:
        self.relabel_many([span], label)

    def relabel_many(self, spans: Sequence[Span], label: str) -> None:
        """Give ``spans`` the label ``label``: one undoable edit however many. A gold or
        accepted entity that has that label already is left as it is (relabelling it
        would only have turned gold into "accepted"); a suggestion is accepted."""
        spans = relabel_targets(spans, label)
        if not spans:
            return

        def change(current: list[Span]) -> list[Span]:
            for span in spans:
                current = curation.relabel_span(current, span, label)
            return current
        n = len(spans)
        self._edit(change, f"Relabel as {label}" if n == 1 else f"Relabel {n} entities as {label}")

    def set_concept_id(self, span: Span, concept_id: str) -> bool:
        """Give ``span`` the concept id typed in the entity table (empty clears it):
        one undoable edit, and the edited span stays selected (``spanAdded``). False
        when the id is refused (white space inside) or the span is no longer in the
        document."""
        if self.row < 0:
            return False
        doc = self.workspace.document(self.row)
        if span not in doc.spans:
            return False
        try:
            spans = curation.set_concept_id(doc.spans, span, concept_id)
        except ValueError:
            return False
        new = next((s for s in spans if s not in doc.spans), None)
        if new is None:
            return True  # the same id: nothing to do
        what = (f"Set concept id {new.concept_id} of '{doc.span_text(span)}'" if new.concept_id
                else f"Clear the concept id of '{doc.span_text(span)}'")
        self._edit(lambda _s: spans, what)
        self.spanAdded.emit(new)
        return True

    def delete(self, spans: Sequence[Span]) -> None:
        n = len(spans)
        self._edit(lambda s: curation.remove_spans(s, spans), f"Delete {n} entit{'y' if n == 1 else 'ies'}")

    def accept(self, spans: Sequence[Span] | None = None) -> None:
        """Accept suggestions; with a concept dictionary hooked in (``propose_concepts``,
        see concept_lookup.py), one without an id gets the id its text usually names,
        in the same undo step."""
        def change(s: list[Span]) -> list[Span]:
            after = curation.accept_suggestions(s, spans)
            if self.propose_concepts is None or self.row < 0:
                return after
            return self.propose_concepts(s, after, self.workspace.document(self.row).text)
        self._edit(change, "Accept all suggestions" if spans is None else "Accept suggestion")

    def reject(self, spans: Sequence[Span] | None = None) -> None:
        """Drop suggestions and remember them as rejected, so re-tagging does not
        offer them again (undo forgets that too)."""
        if self.row < 0:
            return
        entry = self.workspace.entry(self.row)
        rejected = curation.rejected_after(entry.rejected, entry.document.spans, spans)
        self._edit(lambda s: curation.reject_suggestions(s, spans),
                   "Reject all suggestions" if spans is None else "Reject suggestion", rejected=rejected)

    def accept_rejected(self, spans: Sequence[Span]) -> None:
        """Change one's mind: rejected suggestions come back, accepted."""
        if self.row < 0:
            return
        entry = self.workspace.entry(self.row)
        back = [s for s in spans if s in entry.rejected]
        if not back:
            return
        rejected = [r for r in entry.rejected if r not in back]
        self._edit(lambda s: s + [b.with_(source=Source.CURATOR) for b in back],
                   f"Accept {len(back)} rejected suggestion{'s' if len(back) != 1 else ''}", rejected=rejected)

    def resize(self, span: Span, edge: str, tokens: int) -> Span | None:
        """Move one edge of ``span`` by whole tokens (keyboard boundary fixing); the
        resized span, or None when it could not move."""
        if self.row < 0:
            return None
        doc = self.workspace.document(self.row)
        spans = curation.resize_span(doc.spans, span, doc.text, edge, tokens)
        new = next((s for s in spans if s not in doc.spans), None)
        if new is None:
            return None
        verb = "Extend" if (edge == "end") == (tokens > 0) else "Shrink"
        self._edit(lambda _s: spans, f"{verb} '{doc.span_text(new)}'")
        self.spanAdded.emit(new)
        return new

    def toggle_reviewed(self) -> DocStatus | None:
        """Mark the document reviewed, or (when it is) reopen it for review: one
        undoable step that changes no span. Returns the new status."""
        if self.row < 0:
            return None
        status = self.workspace.entry(self.row).status
        new = DocStatus.IN_REVIEW if status is DocStatus.REVIEWED else DocStatus.REVIEWED
        self._edit(list, "Mark reviewed" if new is DocStatus.REVIEWED else "Reopen for review", new)
        return new

    def _edit(self, change: Callable[[list[Span]], list[Span]], text: str, status: DocStatus | None = None,
              rejected: Sequence[Span] | None = None) -> None:
        if self.row < 0:
            return
        spans = change(list(self.workspace.document(self.row).spans))
        command = edit_command(self.workspace, self.row, spans, text, status, rejected=rejected)
        if command is not None:
            self.stack.push(command)


def relabel_targets(spans: Sequence[Span], label: str) -> list[Span]:
    """The spans a relabel to ``label`` changes: not a gold or accepted one that has
    that label already."""
    return [s for s in spans if s.label != label or s.source is Source.MODEL]


def tagging_change(workspace: Workspace, row: int, suggested: list[Span], model: str,
                   replace_curated: bool = False) -> SpanChange | None:
    """One document's part of a tagging run, merged with its spans as they are now. A
    document in review or reviewed keeps its status (its curator's decisions stay)
    unless re-tagging may replace them."""
    before = state_of(workspace, row)
    spans = curation.merge_model_spans(before.spans, suggested, replace_curated, before.rejected)
    status = curation.status_after_tagging(before.status, replace_curated)  # the library's rule
    after = type(before)(tuple(spans), status, model, before.rejected)
    return SpanChange(row, before, after) if after != before else None


def tagging_command_of(workspace: Workspace, changes: list[SpanChange], model: str) -> SpansCommand | None:
    if not changes:
        return None
    n = len(changes)
    return SpansCommand(workspace, changes, f"Tag {n} document{'s' if n != 1 else ''} with {model}")
