"""A table's one stretching column that keeps a readable minimum: it takes the room
the other columns leave, and when the panel is too narrow for that (a small window,
where the reading view keeps half the width) the table scrolls sideways instead of
cutting the text to "Tri…"."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QHeaderView, QTableView


class StretchWithMinimum(QObject):
    def __init__(self, table: QTableView, column: int, minimum: int):
        super().__init__(table)
        self.table, self.column, self.minimum = table, column, minimum
        table.viewport().installEventFilter(self)
        table.horizontalHeader().sectionResized.connect(lambda *_: self.fit())

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

    def fit(self) -> None:
        header = self.table.horizontalHeader()
        others = sum(header.sectionSize(c) for c in range(header.count())
                     if c != self.column and not header.isSectionHidden(c))
        stretch = self.table.viewport().width() - others >= self.minimum
        mode = QHeaderView.ResizeMode.Stretch if stretch else QHeaderView.ResizeMode.Interactive
        if header.sectionResizeMode(self.column) != mode:
            header.setSectionResizeMode(self.column, mode)
        if not stretch and header.sectionSize(self.column) != self.minimum:
            header.resizeSection(self.column, self.minimum)
