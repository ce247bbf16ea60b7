"""The entity table beside the reading view, with a search field and a source filter."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QRegularExpression, Qt, Signal
from PySide6.QtGui import QAction, QRegularExpressionValidator
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLineEdit,
                               QStyledItemDelegate, QTableView, QVBoxLayout, QWidget)

from fastbioner.io.documents import Span

from ..models.entity_table import (COLUMNS, CONCEPT, END, LABEL, SCORE, SHOWN_STATES, START, STATE, TEXT,
                                   EntityFilter, EntityTableModel)
from ..models.workspace import Workspace
from .columns import StretchWithMinimum
from .placeholder import FittingPlaceholder

_STATE_CHOICES = [("All entities", SHOWN_STATES), ("Suggested", ("suggested",)), ("Gold", ("gold",)),
                  ("Accepted", ("accepted",)), ("Gold and accepted", ("gold", "accepted")),
                  ("Rejected", ("rejected",))]


class ConceptIdDelegate(QStyledItemDelegate):
    """The concept id's editor: a line without white space (the formats that carry
    ids split on it), with a hint of the expected shape."""

    def createEditor(self, parent, option, index):
        editor = QLineEdit(parent)
        editor.setValidator(QRegularExpressionValidator(QRegularExpression(r"\S*"), editor))
        editor.setPlaceholderText("MeSH id, e.g. D003042")
        return editor


class EntityPanel(QWidget):
    spanSelected = Signal(object)   # Span or None
    conceptEdited = Signal(object, str)  # Span, the concept id as typed (empty: none)

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = EntityTableModel(workspace, self)
        self.proxy = EntityFilter(self)
        self.proxy.setSourceModel(self.model)
        self.search = QLineEdit()
        self.search.setClearButtonEnabled(True)
        FittingPlaceholder(self.search, ["Filter entities", "Filter"])
        self.search.textChanged.connect(lambda text: self._refilter(lambda: self.proxy.set_text(text)))
        self.sources = QComboBox()  # the review states shown
        for text, states in _STATE_CHOICES:
            self.sources.addItem(text, states)
        self.sources.currentIndexChanged.connect(
            lambda i: self._refilter(lambda: self.proxy.set_states(self.sources.itemData(i))))
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(START, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; arrows move within it
        # Only the concept id is editable (double-click or F2): single keys stay the
        # curation keys (number keys, A, X ...), so no AnyKeyPressed.
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.table.setItemDelegateForColumn(CONCEPT, ConceptIdDelegate(self.table))
        # Queued: the edit resets the table's model, which must not happen inside the
        # delegate's commit (the editor is still being closed).
        self.model.conceptEdited.connect(self.conceptEdited, Qt.ConnectionType.QueuedConnection)
        # The entity's text takes the width; label and state fit their contents; score
        # and offsets get just the room their numbers need.
        # (Fixed widths measured once, not ResizeToContents: that gave the label and
        # state columns the room first and left the text "Tricu…".)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(TEXT, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(24)
        metrics = self.fontMetrics()
        widths = {LABEL: metrics.horizontalAdvance("Chemical") + 40, CONCEPT: metrics.horizontalAdvance("D000000") + 16,
                  STATE: metrics.horizontalAdvance("suggested") + 16,
                  SCORE: metrics.horizontalAdvance("0.00") + 16, START: metrics.horizontalAdvance("00000") + 12,
                  END: metrics.horizontalAdvance("00000") + 12}
        for column, width in widths.items():
            header.resizeSection(column, width)
        # Narrower than the columns need (a small window, where the reading view keeps
        # half the width): the table scrolls sideways, the entity's text keeps enough
        # room to be read (StretchWithMinimum).
        self._text_min = metrics.horizontalAdvance("Tricuspid valve") + 12
        self.setMinimumWidth(metrics.horizontalAdvance("Tricuspid valve") + widths[LABEL] + 24)
        # Offsets are for checking an export, not for reading: hidden until asked for
        # (right-click the header), so the entity's text keeps the width.
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        for column in range(self.model.columnCount()):
            if column == TEXT:
                continue
            toggle = QAction(COLUMNS[column], header)
            toggle.setCheckable(True)
            toggle.setChecked(column not in (START, END))
            toggle.toggled.connect(lambda on, c=column: self.table.setColumnHidden(c, not on))
            header.addAction(toggle)
            self.table.setColumnHidden(column, not toggle.isChecked())
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.sources)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table)
        StretchWithMinimum(self.table, TEXT, self._text_min)
        self._quiet = False
        self._filtering = False
        # Re-showing a document resets the model: keep the span the curator was on.
        self._current: Span | None = None
        self.model.modelReset.connect(lambda: self.select_span(self._current, notify=False))

    def comfortable_width(self) -> int:
        """The width that shows the entity's text (at its minimum) and its label whole,
        the columns a curator reads; the others scroll when the window is narrow. The
        window gives the table this much when it has the room (fastbioner_gui.layout_fit)."""
        header = self.table.horizontalHeader()
        frame = 2 * self.table.frameWidth() + self.table.verticalScrollBar().sizeHint().width()
        return self._text_min + header.sectionSize(LABEL) + frame + 2

    def show_document(self, row: int) -> None:
        self._current = None
        self.model.show_document(row)

    def selected_spans(self) -> list[Span]:
        rows = self.table.selectionModel().selectedRows()
        return [self.model.span(self.proxy.mapToSource(i).row()) for i in rows]

    def select_span(self, span: Span | None, notify: bool = False) -> None:
        """Select ``span``'s row (from a click in the reading view)."""
        self._current = span
        self._quiet = not notify
        try:
            row = self.model.row_of(span) if span is not None else -1
            index = self.proxy.mapFromSource(self.model.index(row, 0)) if row >= 0 else None
            if index is None or not index.isValid():
                self.table.clearSelection()
                self._current = span  # hidden by the filter, not forgotten
                return
            # The current index too, not only the selection: F2, the arrow keys and Tab
            # into the table carry on from this row (after a reset Qt has none).
            self.table.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index)
        finally:
            self._quiet = False

    def edit_concept(self, span: Span) -> bool:
        """Open the concept id's editor on ``span``'s row (F2); the table takes the
        focus, so what is typed goes into the editor."""
        self.select_span(span)
        current = self.table.currentIndex()
        if not current.isValid():
            return False
        index = current.siblingAtColumn(CONCEPT)
        self.table.setFocus()
        self.table.setCurrentIndex(index)
        self.table.edit(index)
        return self.table.state() == QAbstractItemView.State.EditingState

    def _refilter(self, change) -> None:
        """Change the filter and keep the entity the curator is on: selected again
        when it shows, remembered (and still selected in the reading view) while the
        filter hides it."""
        keep = self._current
        self._filtering = True
        try:
            change()
        finally:
            self._filtering = False
        self.select_span(keep)

    def _selection_changed(self) -> None:
        if self._filtering:
            return
        spans = self.selected_spans()
        self._current = spans[0] if len(spans) == 1 else None
        if not self._quiet:
            self.spanSelected.emit(self._current)
