"""Undo and redo: every change to a document's spans is one command on the
``QUndoStack``. A command stores the spans, status, tagging model and rejected
suggestions of each document it touched, before and after, so undo restores them
exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from PySide6.QtGui import QUndoCommand

from fastbioner.curate.curation import (  # the library's review-status rule (used here, imported from here)
    status_after_edit,
)
from fastbioner.io.documents import Span
from fastbioner.curate.project import DocStatus

from .models.workspace import Workspace


@dataclass(frozen=True)
class DocState:
    spans: tuple[Span, ...]
    status: DocStatus
    tagged_by: str | None
    rejected: tuple[Span, ...] = ()   # suggestions a curator rejected


@dataclass(frozen=True)
class SpanChange:
    row: int
    before: DocState
    after: DocState


class SpansCommand(QUndoCommand):
    """Replaces the spans of one or more documents (one edit, or one tagging run)."""

    def __init__(self, workspace: Workspace, changes: Sequence[SpanChange], text: str):
        super().__init__(text)
        self.workspace = workspace
        self.changes = list(changes)

    def redo(self) -> None:
        self._apply([(c.row, c.after) for c in self.changes])

    def undo(self) -> None:
        self._apply([(c.row, c.before) for c in reversed(self.changes)])

    def _apply(self, states: list[tuple[int, DocState]]) -> None:
        self.workspace.set_spans_many([(row, st.spans, st.status, st.tagged_by, st.rejected) for row, st in states])


class MergingSpansCommand(SpansCommand):
    """A part of a longer change (one chunk of a tagging run) that joins the previous
    part on the undo stack when that is the command just done, so the whole run is
    one undo step. ``key`` tells the runs apart."""

    ID = 1501

    def __init__(self, workspace: Workspace, changes: Sequence[SpanChange], key: int, text: str, total: int):
        super().__init__(workspace, changes, text)
        self.key = key
        self.total = total
        self._name = text
        self._label()

    def _label(self) -> None:
        n = len(self.changes)
        self.setText(f"{self._name} ({n} of {self.total} document{'s' if self.total != 1 else ''})"
                     if n < self.total else f"{self._name} ({n} document{'s' if n != 1 else ''})")

    def id(self) -> int:
        return self.ID

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, MergingSpansCommand) or other.key != self.key:
            return False
        self.changes.extend(other.changes)
        self._label()
        return True


def state_of(workspace: Workspace, row: int) -> DocState:
    entry = workspace.entry(row)
    return DocState(tuple(entry.document.spans), entry.status, entry.tagged_by, tuple(entry.rejected))




def edit_command(workspace: Workspace, row: int, spans: Sequence[Span], text: str,
                 status: DocStatus | None = None, tagged_by: object = None,
                 rejected: Sequence[Span] | None = None) -> SpansCommand | None:
    """A command for one document's new spans and status (by default: what an edit
    makes of its status, :func:`status_after_edit`), or None when nothing would change."""
    before = state_of(workspace, row)
    status = status_after_edit(before.status) if status is None else status
    after = DocState(tuple(spans), status, before.tagged_by if tagged_by is None else tagged_by,
                     before.rejected if rejected is None else tuple(rejected))
    if after == before:
        return None
    return SpansCommand(workspace, [SpanChange(row, before, after)], text)
