"""The export dialog: format (BIO/CoNLL IOB2 or IOBES, PubTator, BioC, JSONL), one
file or one per document, which documents (all, selected, curated only) and which
sources (gold, model, curator). It reports what the writers could not hold. The
writing runs as a background job on a snapshot of the documents taken when Save is
pressed, so a large export never blocks the window and later edits do not leak in."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QRadioButton, QVBoxLayout,
                               QWidget)

from fastbioner.curation import select_sources
from fastbioner.documents import Document, Source
from fastbioner.export import EXPORT_FORMATS, ExportResult, ExportSettings, export_documents, extension
from fastbioner.project import DocStatus

from ..jobs import Job, JobManager
from ..models.workspace import Workspace
from ..settings import AppSettings

ALL, SELECTED, CURATED = "all", "selected", "curated"


class ExportDialog(QDialog):
    def __init__(self, workspace: Workspace, selected_rows: Sequence[int], settings: AppSettings,
                 parent: QWidget | None = None, jobs: JobManager | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export")
        self.jobs = jobs or JobManager(self)
        self.job: Job | None = None
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

    def export(self) -> Job | None:
        """Start writing the chosen documents; the report says how it went."""
        if self.job is not None and self.job.running:
            return None
        sources = tuple(s for s, box in self.sources.items() if box.isChecked())
        docs = [select_sources(d, sources) for d in self.chosen_documents()]  # the snapshot
        path = self.path.text().strip()
        if not docs or not path:
            self.report.setText("Nothing to export: choose documents and a file.")
            return None
        settings = ExportSettings(self.format.currentText(), sources, self.per_document.isChecked())
        self.result = None
        self.job = self.jobs.start(f"Export {len(docs)} document(s)", lambda on_event, cancel: export_documents(
            docs, path, settings, on_event=on_event, cancel=cancel), kind="export")
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        save.setEnabled(False)
        self.report.setText(f"Exporting {len(docs)} document(s)…")
        self.job.progress.connect(lambda e: e.total > 1 and self.report.setText(
            f"Exporting: {e.step} of {e.total} files…"))
        self.job.succeeded.connect(lambda result: self._exported(result, path, settings))
        self.job.failed.connect(lambda message: self.report.setText(
            f"<span style='color:#b00'>Export failed: {message}</span>"))
        self.job.cancelled.connect(lambda: self.report.setText("Export cancelled; no file was half-written."))
        self.job.finished.connect(lambda: save.setEnabled(True))
        return self.job

    def _exported(self, result: ExportResult, path: str, settings: ExportSettings) -> None:
        self.result = result
        self.settings.export_folder = str(Path(path) if settings.per_document else Path(path).parent)
        self.report.setText(result.summary())

    def done(self, code: int) -> None:  # closing stops an export between files; each file is atomic
        if self.job is not None and self.job.running:
            self.job.cancel()
        super().done(code)
