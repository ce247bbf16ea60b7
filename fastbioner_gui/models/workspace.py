"""The open working set as a Qt object: a :class:`fastbioner.curate.project.Project` plus the
signals every view listens to. All changes to documents go through here (and, for
curation, through the undo commands that call :meth:`Workspace.set_spans`)."""

from __future__ import annotations

from typing import Iterable, Sequence

from PySide6.QtCore import QObject, Signal

from fastbioner.io.documents import Document, Span
from fastbioner.curate.project import DocStatus, Project, ProjectEntry, entry_for

# Labels offered even before any document or model brings them, in legend order.
DEFAULT_LABELS = ("Disease", "Chemical")
KEEP = object()  # "leave as it is", where None is a value


class Workspace(QObject):
    projectReset = Signal()              # everything replaced
    documentsAdded = Signal(int, int)    # first, last row (inclusive)
    # Spans or status of rows first..last changed (one edit: first == last; a tagging
    # run: one range, so views refresh once, not once per document).
    documentsChanged = Signal(int, int)
    labelsChanged = Signal()
    modified = Signal()                  # any change a save would record

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.project = Project()
        self._labels: list[str] = list(DEFAULT_LABELS)

    # Reading ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.project.entries)

    def entry(self, row: int) -> ProjectEntry:
        return self.project.entries[row]

    def document(self, row: int) -> Document:
        return self.project.entries[row].document

    def labels(self) -> list[str]:
        return list(self._labels)

    def row_of(self, doc: Document) -> int:
        for i, e in enumerate(self.project.entries):
            if e.document is doc:
                return i
        return -1

    # Changing --------------------------------------------------------------
    def set_project(self, project: Project) -> None:
        self.project = project
        self._labels = list(DEFAULT_LABELS)
        self._merge_labels(project.labels)
        self._merge_labels(l for e in project.entries for l in e.document.labels())
        self.projectReset.emit()
        self.labelsChanged.emit()

    def add_documents(self, docs: Iterable[Document], origin: str | None = None) -> None:
        entries = [entry_for(d, origin) for d in docs]
        if not entries:
            return
        first = len(self.project.entries)
        self.project.entries.extend(entries)
        self.documentsAdded.emit(first, len(self.project.entries) - 1)
        if self._merge_labels(l for e in entries for l in e.document.labels()):
            self.labelsChanged.emit()
        self.modified.emit()

    def set_spans(self, row: int, spans: Sequence[Span], status: DocStatus | None = None,
                  tagged_by: object = KEEP) -> None:
        """Replace a document's spans (and, when given, its status and the model that
        tagged it: ``None`` clears it, :data:`KEEP` leaves it)."""
        self.set_spans_many([(row, spans, status, tagged_by)])

    def set_spans_many(self, changes: Sequence[tuple]) -> None:
        """:meth:`set_spans` for many rows at once (row, spans, status, tagged_by, and
        optionally the rejected suggestions) with one signal for the range: a tagging
        run over 1,000 documents must not make the views refresh 1,000 times in the GUI
        thread."""
        if not changes:
            return
        for row, spans, status, tagged_by, *rest in changes:
            entry = self.project.entries[row]
            if rest:
                entry.rejected = list(rest[0])
            entry.document.spans = list(spans)
            if status is not None:
                entry.status = status
            if tagged_by is not KEEP:
                entry.tagged_by = tagged_by
        rows = [c[0] for c in changes]
        self.documentsChanged.emit(min(rows), max(rows))
        if self._merge_labels(s.label for c in changes for s in c[1]):
            self.labelsChanged.emit()
        self.modified.emit()

    def record_model(self, name: str, provenance: dict) -> None:
        self.project.models[name] = provenance

    def _merge_labels(self, labels: Iterable[str]) -> bool:
        new = [l for l in dict.fromkeys(labels) if l and l not in self._labels]
        self._labels.extend(sorted(new))
        return bool(new)
