"""The one question about work not saved, asked the same way everywhere (before a
project is replaced or the app closes, and at start-up about a crashed session's
autosave): the same three buttons, Yes, No and Cancel, in the platform's order, Yes
the default and Escape for Cancel, and the text says what each does here."""

from __future__ import annotations

from enum import Enum

from PySide6.QtWidgets import QMessageBox, QWidget


class Answer(Enum):
    YES = "yes"
    NO = "no"
    CANCEL = "cancel"


def ask_unsaved(parent: QWidget | None, title: str, question: str, yes: str, no: str, cancel: str) -> Answer:
    """Ask ``question``; ``yes``, ``no`` and ``cancel`` say what each button does."""
    B = QMessageBox.StandardButton
    text = f"{question}\n\nYes: {yes}.\nNo: {no}.\nCancel: {cancel}."
    answer = QMessageBox.question(parent, title, text, B.Yes | B.No | B.Cancel, B.Yes)
    return {B.Yes: Answer.YES, B.No: Answer.NO}.get(answer, Answer.CANCEL)
