"""What opening files did not do as asked, in one readable list: the files that could
not be read (each naming file and line), the documents already open that were not
added again, and the warnings of files read after a repair."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class LoadErrorsDialog(QDialog):
    def __init__(self, errors: Sequence[str], loaded_documents: int, parent: QWidget | None = None,
                 duplicates: Sequence[str] = (), warnings: Sequence[str] = ()):
        super().__init__(parent)
        parts = []
        if errors:
            parts.append(f"{_plural(len(errors), 'file')} could not be read; "
                         f"{_plural(loaded_documents, 'document')} from the other files were loaded.")
        if duplicates:
            parts.append(f"{_plural(len(duplicates), 'document')} already open (same id) "
                         f"{'were' if len(duplicates) != 1 else 'was'} not added again.")
        if warnings:
            parts.append(f"{_plural(len(warnings), 'warning')}: files read after a repair.")
        self.setWindowTitle("Some files could not be read" if errors else "Opened, with notes")
        self.summary = QLabel(" ".join(parts))
        self.summary.setWordWrap(True)
        sections = []
        if errors:
            sections.append("Could not be read:\n" + "\n".join(errors))
        if duplicates:
            sections.append("Already open, not added again:\n" + "\n".join(duplicates))
        if warnings:
            sections.append("Warnings:\n" + "\n".join(warnings))
        self.details = QPlainTextEdit("\n\n".join(sections))
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.details)
        layout.addWidget(buttons)
        self.resize(640, 260)
