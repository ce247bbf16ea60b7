"""The export dialog: format (BIO/CoNLL IOB2 or IOBES, PubTator, BioC, JSONL), one
file or one per document, which documents (all, selected, curated only) and which
sources (gold, model, curator). It reports what the writers could not hold."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QRadioButton, QVBoxLayout,
                               QWidget)

from fastbioner.documents import Document, Source
from fastbioner.errors import FastBioNERError
from fastbioner.export import EXPORT_FORMATS, ExportResult, ExportSettings, export_documents, extension
from fastbioner.project import DocStatus

from ..models.workspace import Workspace
from ..settings import AppSettings

ALL, SELECTED, CURATED = "all", "selected", "curated"


class ExportDialog(QDialog):
    def __init__(self, workspace: Workspace, selected_rows: Sequence[int], settings: AppSettings,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export")
        self.workspace = workspace
        self.selected_rows = list(selected_rows)
        self.settings = settings
        self.result: ExportResult | None = None
        self.format = QComboBox()
        self.format.addItems(list(EXPORT_FORMATS))
        self.per_document = QCheckBox("One file per document (into a folder)")
        self.which = QButtonGroup(self)
        which_box = QHBoxLayout()
        for key, text in ((ALL, "All"), (SELECTED, "Selected"), (CURATED, "Curated only")):
            button = QRadioButton(text)
            button.setProperty("key", key)
            self.which.addButton(button)
            which_box.addWidget(button)
        self.which.buttons()[0].setChecked(True)
        self.which.buttons()[1].setEnabled(bool(self.selected_rows))
        self.sources = {s: QCheckBox(s.value) for s in (Source.GOLD, Source.MODEL, Source.CURATOR)}
        source_box = QHBoxLayout()
        for box in self.sources.values():
            box.setChecked(True)
            source_box.addWidget(box)
        self.path = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        path_box = QHBoxLayout()
        path_box.addWidget(self.path, 1)
        path_box.addWidget(browse)
        self.report = QLabel()
        self.report.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("", self.per_document)
        form.addRow("Documents", which_box)
        form.addRow("Entities from", source_box)
        form.addRow("Save to", path_box)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        self.buttons.accepted.connect(self.export)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.report)
        layout.addWidget(self.buttons)
        self.format.currentTextChanged.connect(lambda _t: self._suggest_path())
        self.per_document.toggled.connect(lambda _on: self._suggest_path())
        self._suggest_path()
        self.resize(560, 0)

    def _fmt(self) -> str:
        return EXPORT_FORMATS[self.format.currentText()][0]

    def _suggest_path(self) -> None:
        folder = Path(self.settings.export_folder or Path.home())
        current = self.path.text().strip()
        stem = Path(current).name.split(".")[0] if current else "export"
        self.path.setText(str(folder / (stem if self.per_document.isChecked() else stem + extension(self._fmt()))))

    def _browse(self) -> None:
        if self.per_document.isChecked():
            chosen = QFileDialog.getExistingDirectory(self, "Export into folder", self.path.text())
        else:
            chosen, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text())
        if chosen:
            self.path.setText(chosen)

    def chosen_documents(self) -> list[Document]:
        key = self.which.checkedButton().property("key")
        if key == SELECTED:
            rows = self.selected_rows
        elif key == CURATED:
            rows = [r for r in range(len(self.workspace)) if self.workspace.entry(r).status is DocStatus.CURATED]
        else:
            rows = range(len(self.workspace))
        return [self.workspace.document(r) for r in rows]

    def export(self) -> ExportResult | None:
        docs = self.chosen_documents()
        sources = tuple(s for s, box in self.sources.items() if box.isChecked())
        path = self.path.text().strip()
        if not docs or not path:
            self.report.setText("Nothing to export: choose documents and a file.")
            return None
        settings = ExportSettings(self.format.currentText(), sources, self.per_document.isChecked())
        try:
            self.result = export_documents(docs, path, settings)
        except (FastBioNERError, OSError) as exc:
            self.report.setText(f"<span style='color:#b00'>Export failed: {exc}</span>")
            return None
        self.settings.export_folder = str(Path(path) if settings.per_document else Path(path).parent)
        self.report.setText(self.result.summary())
        return self.result
