"""The legend: each label's colour and the number key that applies it, and a key to
how sources and confidence are drawn."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ..models.palette import label_color, readable, strong_color, text_on

KEY = ("<span style='color:{muted}'>solid: gold / accepted · <i>pale italic: model suggestion</i> · "
       "<span style='text-decoration:underline; color:{warn}'>red wavy</span>: low confidence · "
       "<b><u>bold underlined</u></b>: overlapping</span>")


class Legend(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._chips = QHBoxLayout()
        self._chips.setContentsMargins(0, 0, 0, 0)
        # The key on its own line, wrapping: it never widens the reading view.
        self.key = QLabel()
        self.key.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(2)
        layout.addLayout(self._chips)
        layout.addWidget(self.key)
        self.chips: list[QLabel] = []
        self._labels: list[str] = []
        self._colour_key()

    def _colour_key(self) -> None:
        """Colours of the key that read on the window's background, light or dark."""
        background = self.palette().color(QPalette.ColorRole.Window)
        text = self.palette().color(QPalette.ColorRole.WindowText)
        muted = QColor.fromRgbF(*(0.7 * t + 0.3 * b for t, b in zip(text.getRgbF()[:3], background.getRgbF()[:3])))
        self.key_colors = {"muted": readable(muted, background), "warn": readable(QColor("#d01010"), background)}
        self.key.setText(KEY.format(**{k: c.name() for k, c in self.key_colors.items()}))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colour_key()
            self.set_labels(self._labels)

    def set_labels(self, labels: Sequence[str]) -> None:
        self._labels = list(labels)
        while self._chips.count():
            item = self._chips.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.chips = []
        for i, label in enumerate(labels):
            key = f"{i + 1} " if i < 9 else ""
            chip = QLabel(f"<b>{key}</b>{label}")
            chip.setToolTip(f"Select text and press {i + 1} to mark it {label}; "
                            f"Alt+{i + 1} keeps the exact selection" if i < 9 else label)
            fill = label_color(label)
            chip.setStyleSheet(f"background:{fill.name()}; color:{text_on(fill).name()}; border:1px solid "
                               f"{strong_color(label).name()}; border-radius:3px; padding:1px 6px;")
            self._chips.addWidget(chip)
            self.chips.append(chip)
        self._chips.addStretch(1)
