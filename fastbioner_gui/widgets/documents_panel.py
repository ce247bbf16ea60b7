"""The documents panel: every loaded abstract with its entity counts and status, a
search field and a status filter."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QTableView, QVBoxLayout, QWidget)

from fastbioner.curate.project import DocStatus, needs_review

from ..models.document_list import ID_COLUMN, TITLE_COLUMN, DocumentFilter, DocumentListModel
from ..models.workspace import Workspace
from .columns import StretchWithMinimum
from .placeholder import FittingPlaceholder


class DocumentsPanel(QWidget):
    currentRowChanged = Signal(int)  # workspace row, -1 for none

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.model = DocumentListModel(workspace, self)
        self.proxy = DocumentFilter(self)
        self.proxy.setSourceModel(self.model)
        self.search = QLineEdit()
        self.search.setClearButtonEnabled(True)
        FittingPlaceholder(self.search, ["Search PMID, title or text", "Search PMID, title, text", "Search"])
        self.search.textChanged.connect(lambda text: self._refilter(lambda: self.proxy.set_text(text)))
        self.status = QComboBox()
        self.status.addItem("Any status", None)
        self.status.addItem("Needs review", tuple(s for s in DocStatus if needs_review(s)))
        for status in DocStatus:
            self.status.addItem(status.value, status)
        self.status.currentIndexChanged.connect(
            lambda i: self._refilter(lambda: self.proxy.set_status(self.status.itemData(i))))
        # The document being read (workspace row): it stays the current one while a
        # search hides it, and is selected again when the search lets it show.
        self._row = -1
        self._filtering = False
        workspace.projectReset.connect(lambda: setattr(self, "_row", -1))
        self.count = QLabel()
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # file order until the user sorts
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; arrows move within it
        # Fixed widths, not ResizeToContents: that measures every row on every change,
        # seconds per edit with a thousand documents.
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setDefaultSectionSize(72)
        header.setSectionResizeMode(TITLE_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(24)
        self.proxy.modelReset.connect(self._fit_columns)
        self._fit_columns()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        # The source's signals too: documents opened that the search hides change the
        # total ("5 of 536") though no row is shown or hidden.
        for signal in (self.proxy.rowsInserted, self.proxy.rowsRemoved, self.proxy.modelReset,
                       self.proxy.layoutChanged, self.model.rowsInserted, self.model.rowsRemoved,
                       self.model.modelReset):
            signal.connect(self._update_count)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.status)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table)
        layout.addWidget(self.count)
        # A narrow panel scrolls sideways rather than cut the titles to nothing.
        self._title_min = self.fontMetrics().horizontalAdvance("Tricuspid valve r")
        StretchWithMinimum(self.table, TITLE_COLUMN, self._title_min)
        self._update_count()

    def _fit_columns(self) -> None:
        """PMID, counts, agreement and status as narrow as their contents and headers
        (the header's own hint: its text, a count's colour swatch and the sort arrow,
        whatever the style): the title gets the rest."""
        header = self.table.horizontalHeader()
        for column in range(self.model.columnCount()):
            if column != TITLE_COLUMN:
                header.resizeSection(column, self._column_width(column))

    def _column_width(self, column: int) -> int:
        metrics = self.table.fontMetrics()
        if column == ID_COLUMN:
            content = "00000000"
        elif column == self.model.status_column():
            content = "in review"
        elif column == self.model.agreement_column():
            content = "0.00 (00)"
        else:  # a count or how unsure: a few digits
            content = "00.0"
        return max(self.table.horizontalHeader().sectionSizeHint(column), metrics.horizontalAdvance(content) + 14)

    def comfortable_width(self) -> int:
        """The panel's width with every column shown whole: the title at its minimum,
        and room kept for the agreement column a comparison adds (so that it does not
        push the status off the panel). The window gives the panel this much when it
        has the room (fastbioner_gui.layout_fit)."""
        columns = sum(self._column_width(c) for c in range(self.model.columnCount()) if c != TITLE_COLUMN)
        if self.model.agreement_column() < 0:
            columns += self.table.fontMetrics().horizontalAdvance("0.00 (00)") + 14
        frame = 2 * self.table.frameWidth() + self.table.verticalScrollBar().sizeHint().width()
        return columns + self._title_min + frame + 2

    def current_row(self) -> int:
        index = self.table.currentIndex()
        return self.proxy.mapToSource(index).row() if index.isValid() else -1

    def selected_rows(self) -> list[int]:
        return sorted(self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows())

    def set_current_row(self, row: int) -> None:
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if index.isValid():
            self.table.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index)

    def step(self, delta: int) -> None:
        """Move to the next (+1) or previous (-1) document in the shown order."""
        index = self.table.currentIndex()
        target = (index.row() + delta) if index.isValid() else 0
        if 0 <= target < self.proxy.rowCount():
            self.set_current_row(self.proxy.mapToSource(self.proxy.index(target, 0)).row())

    def next_needing_review(self) -> int:
        """Move to the next document (in the shown order, after the current one, going
        round) that is not reviewed yet. Returns its workspace row, or -1 if none."""
        count = self.proxy.rowCount()
        here = self.table.currentIndex().row() if self.table.currentIndex().isValid() else -1
        for k in range(1, count + 1):
            row = self.proxy.mapToSource(self.proxy.index((here + k) % count, 0)).row()
            if row != self.current_row() and needs_review(self.workspace.entry(row).status):
                self.set_current_row(row)
                return row
        return -1

    def _current_changed(self, current, _previous) -> None:
        if self._filtering or (not current.isValid() and self._row >= 0):
            return  # hidden by a search or filter: the reading view keeps it
        row = self.proxy.mapToSource(current).row() if current.isValid() else -1
        if row == self._row:
            return
        self._row = row
        self.currentRowChanged.emit(row)

    def _refilter(self, change) -> None:
        """Change the filter; the document being read stays the one read (Qt would make
        a neighbour current when it is hidden), and is selected again when it shows."""
        self._filtering = True
        try:
            change()
            if self._row < 0:
                return
            index = self.proxy.mapFromSource(self.model.index(self._row, 0))
            selection = self.table.selectionModel()
            if index.isValid():
                selection.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                          | QItemSelectionModel.SelectionFlag.Rows)
                self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
            else:  # hidden: no other row looks like the one being read
                selection.clear()
        finally:
            self._filtering = False

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), len(self.workspace)
        noun = "document" if total == 1 else "documents"
        self.count.setText(f"{total} {noun}" if shown == total else f"{shown} of {total} {noun}")
