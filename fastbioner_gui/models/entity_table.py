"""The entity table's model: the spans of the document being read, one per row
(text, label, concept id, review state, score, start, end), then the suggestions a curator
rejected (state "rejected", shown when the filter asks for them), and a proxy that
filters them by text and state."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QFont

from fastbioner.curate.curation import entity_state, is_low_confidence
from fastbioner.io.documents import Document, Source, Span

from .palette import label_color
from .refilter import refilter_rows
from .workspace import Workspace

Index = QModelIndex | QPersistentModelIndex
# The text first and the decision next to it; offsets last, where a narrow panel
# cuts them rather than the entity's text.
COLUMNS = ("Text", "Label", "Concept", "State", "Score", "Start", "End")
TEXT, LABEL, CONCEPT, STATE, SCORE, START, END = range(len(COLUMNS))
SPAN_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2


class EntityTableModel(QAbstractTableModel):
    """Read-only but for the concept id: an edit there is not applied here, it is
    announced (``conceptEdited``) so the curation controller makes it one undoable
    command, and the table follows the workspace's change like any other edit."""

    conceptEdited = Signal(object, str)  # the Span, the id as typed

    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.row = -1  # the workspace row shown
        self._spans: list[Span] = []
        self._rejected = 0  # the last rows of _spans are the rejected suggestions
        self.low_confidence = 0.5
        workspace.documentsChanged.connect(self._changed)
        workspace.projectReset.connect(lambda: self.show_document(-1))

    @property
    def document(self) -> Document | None:
        return self.workspace.document(self.row) if self.row >= 0 else None

    def show_document(self, row: int) -> None:
        self.beginResetModel()
        self.row = row
        self._spans = self.document.sorted_spans() if self.document is not None else []
        rejected = self.workspace.entry(row).rejected if row >= 0 else []
        self._spans += sorted(rejected, key=lambda s: (s.start, -s.end, s.label))
        self._rejected = len(rejected)
        self.endResetModel()

    def span(self, row: int) -> Span:
        return self._spans[row]

    def is_rejected(self, row: int) -> bool:
        return row >= len(self._spans) - self._rejected

    def state(self, row: int) -> str:
        return "rejected" if self.is_rejected(row) else entity_state(self._spans[row])

    def row_of(self, span: Span) -> int:
        try:
            return self._spans.index(span)
        except ValueError:
            return -1

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._spans)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        span = self._spans[index.row()]
        col = index.column()
        if role == SPAN_ROLE:
            return span
        if role in (Qt.ItemDataRole.DisplayRole, SORT_ROLE):
            value = (self.document.span_text(span), span.label, span.concept_id or "", self.state(index.row()),
                     span.score, span.start, span.end)[col]
            if role == SORT_ROLE:
                return -1.0 if col == SCORE and value is None else value
            if col == SCORE:
                return "" if value is None else f"{value:.2f}"
            return str(value)
        if role == Qt.ItemDataRole.DecorationRole and col == LABEL:
            return label_color(span.label)
        if role == Qt.ItemDataRole.FontRole and span.source is Source.MODEL:
            font = QFont()
            font.setItalic(True)  # suggestions look provisional
            font.setStrikeOut(self.is_rejected(index.row()))
            return font
        if role == Qt.ItemDataRole.EditRole and col == CONCEPT:
            return span.concept_id or ""
        if role == Qt.ItemDataRole.ToolTipRole:
            low = "\nlow-confidence model suggestion" if is_low_confidence(span, self.low_confidence) else ""
            concept = f" · {span.concept_id}" if span.concept_id else ""
            edit = "\ndouble-click or F2 to edit the concept id" if col == CONCEPT else ""
            return f"{self.document.span_text(span)}\n{span.label}{concept} · {self.state(index.row())}{low}{edit}"
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (START, END, SCORE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and index.column() == CONCEPT and not self.is_rejected(index.row()):
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index: Index, value, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or index.column() != CONCEPT or role != Qt.ItemDataRole.EditRole:
            return False
        span = self._spans[index.row()]
        if (str(value or "").strip() or None) == span.concept_id:
            return False
        self.conceptEdited.emit(span, str(value or ""))
        return True

    def _changed(self, first: int, last: int) -> None:
        if first <= self.row <= last:
            self.show_document(self.row)


# What the table shows unless asked: every entity of the document, not the rejected.
SHOWN_STATES = ("gold", "accepted", "suggested")


class EntityFilter(QSortFilterProxyModel):
    """Keeps spans whose text or label contains the search text, in the chosen review
    states (gold, accepted, suggested, rejected)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._text = ""
        self._states = set(SHOWN_STATES)
        self.setSortRole(SORT_ROLE)

    def set_text(self, text: str) -> None:
        refilter_rows(self, lambda: setattr(self, "_text", text.strip().casefold()))

    def set_states(self, states) -> None:
        refilter_rows(self, lambda: setattr(self, "_states", set(states)))

    def filterAcceptsRow(self, row: int, parent: Index) -> bool:
        model = self.sourceModel()
        span = model.span(row)
        if model.state(row) not in self._states:
            return False
        if not self._text:
            return True
        return self._text in model.document.span_text(span).casefold() or self._text in span.label.casefold()
