"""What the app shows when a training run ends: the new model's card, its devel
scores and its size against its teacher, with *Use this model* and *Keep the current
one*. The model picker never switches to a new model by itself: a model trained on a
handful of documents may score far below the one in use."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from ..widgets.model_picker import card_html, manifest_dict


def offer_html(result: Any, current: str) -> str:
    """The offer's text: the card (devel F1 per type included), the size check, the
    run's notes, and which model stays in use until the curator decides."""
    from fastbioner.train.guided import size_check

    entry = result.entry
    parts = [card_html(entry.name, manifest_dict(entry))]
    report = getattr(result, "report", None)
    if report is None:
        parts.append("<p>No devel scores: the run had no devel file.</p>")
    size = getattr(result, "size", None)
    if size is None and entry.manifest.kind == "student":
        size = size_check(entry)
    if size is not None:
        parts.append(f"<p><b>Size:</b> {html.escape(size.describe())}.</p>")
    notes = getattr(result, "notes", None) or []
    if notes:
        parts.append("<p>" + "<br>".join(html.escape(n) for n in notes) + "</p>")
    keep = f"<b>{html.escape(current)}</b>" if current else "the model chosen now"
    parts.append(f"<p>The model picker keeps {keep} until you choose.</p>")
    return "".join(parts)


class NewModelOffer(QMessageBox):
    """Non-blocking (``open()``): the curator answers when they like."""

    useRequested = Signal(str)  # the new model's name

    def __init__(self, result: Any, current: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = result.entry.name
        self.setWindowTitle(f"New model: {self.name}")
        self.setIcon(QMessageBox.Icon.Information)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setText(offer_html(result, current))
        self.use_button = self.addButton("Use this model", QMessageBox.ButtonRole.AcceptRole)
        self.keep_button = self.addButton("Keep the current one", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.keep_button)
        self.setEscapeButton(self.keep_button)
        self.buttonClicked.connect(lambda b: self.useRequested.emit(self.name) if b is self.use_button else None)
