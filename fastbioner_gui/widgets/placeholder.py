"""A line edit's placeholder that fits: the longest of a few wordings that its room
holds whole, where Qt would cut the one given mid-word ("Search PMID, title or t"),
as in a panel narrowed on a 1024-pixel screen. The longest is the tooltip too."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLineEdit

# The edit's frame, its inner margins and the clear button's room, beside the text.
_CHROME = 16


class FittingPlaceholder(QObject):
    def __init__(self, edit: QLineEdit, wordings: Sequence[str]):
        super().__init__(edit)
        self.edit, self.wordings = edit, list(wordings)
        edit.setToolTip(self.wordings[0])
        # Never narrower than the shortest wording: its row's other widgets give way.
        clear = edit.sizeHint().height() if edit.isClearButtonEnabled() else 0
        edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance(self.wordings[-1]) + _CHROME + clear)
        edit.installEventFilter(self)
        self.fit()

    def eventFilter(self, watched, event) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.FontChange):
            self.fit()
        return False

    def room(self) -> int:
        edit = self.edit
        clear = edit.height() if edit.isClearButtonEnabled() else 0
        return edit.width() - _CHROME - clear

    def fit(self) -> None:
        metrics, room = self.edit.fontMetrics(), self.room()
        text = next((w for w in self.wordings if metrics.horizontalAdvance(w) <= room), self.wordings[-1])
        if self.edit.placeholderText() != text:
            self.edit.setPlaceholderText(text)
