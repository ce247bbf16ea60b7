"""A readable list of the files that could not be read, each naming file and line."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


class LoadErrorsDialog(QDialog):
    def __init__(self, errors: Sequence[str], loaded_documents: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Some files could not be read")
        n = len(errors)
        self.summary = QLabel(f"{n} file{'s' if n != 1 else ''} could not be read; "
                              f"{loaded_documents} document{'s' if loaded_documents != 1 else ''} "
                              f"from the other files were loaded.")
        self.summary.setWordWrap(True)
        self.details = QPlainTextEdit("\n".join(errors))
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.details)
        layout.addWidget(buttons)
        self.resize(640, 260)
