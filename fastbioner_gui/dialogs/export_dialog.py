"""The export dialog: format (BIO/CoNLL IOB2 or IOBES, PubTator, BioC, JSONL), one
file or one per document, which documents (reviewed, by default; all; selected) and
which entities (gold and accepted, by default; suggestions too if asked). It says
what the export will include before Save, and lists each span the writers could not
hold with its document. The writing runs as a background job on a snapshot of the
documents taken when Save is pressed, so a large export never blocks the window and
later edits do not leak in."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QRadioButton,
                               QVBoxLayout, QWidget)

from fastbioner.curate.curation import select_sources
from fastbioner.io.documents import Document, Source
from fastbioner.base.errors import FastBioNERError
from fastbioner.curate.export import (
    EXPORT_FORMATS, REVIEWED_SOURCES, ExportResult, ExportSettings, export_documents, extension,
)
from fastbioner.curate.project import DocStatus

from ..jobs import Job, JobManager
from ..models.workspace import Workspace
from ..settings import AppSettings

REVIEWED, ALL, SELECTED = "reviewed", "all", "selected"
# The entity sources as the review workflow names them.
SOURCE_NAMES = {Source.GOLD: "gold", Source.CURATOR: "accepted", Source.MODEL: "suggested (undecided)"}


def check_destination(path: str, per_document: bool) -> str | None:
    """Why ``path`` cannot be written to (one line), or None when it can be tried."""
    if not path:
        return "Choose a file to export to."
    try:
        return _destination_problem(Path(path).expanduser(), per_document)
    except OSError as exc:  # e.g. a name too long for the file system
        return f"Cannot export to {path}: {exc.strerror or exc}"


def _destination_problem(target: Path, per_document: bool) -> str | None:
    if target.is_dir() and not per_document:
        return f"{target} is a folder: name a file, or tick one file per document."
    if target.exists() and not target.is_dir() and per_document:
        return f"{target} is a file: one file per document needs a folder."
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"Cannot export to {target}: {parent} is a file, not a folder."
    if not per_document and not target.parent.is_dir():
        return f"Cannot export to {target}: the folder {target.parent} does not exist."
    return None


def _export_job(docs, path, settings):
    """``export_documents`` with a file system error turned into one readable line."""
    def job(on_event, cancel):
        try:
            return export_documents(docs, path, settings, on_event=on_event, cancel=cancel)
        except OSError as exc:
            where = exc.filename or path
            raise FastBioNERError(f"cannot write {where}: {exc.strerror or exc}") from None
    return job


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
        self.which_buttons: dict[str, QRadioButton] = {}
        for key, text in ((REVIEWED, "Reviewed"), (ALL, "All"), (SELECTED, "Selected")):
            button = QRadioButton(text)
            button.setProperty("key", key)
            self.which.addButton(button)
            self.which_buttons[key] = button
            which_box.addWidget(button)
        self.which_buttons[REVIEWED].setChecked(True)
        self.which_buttons[SELECTED].setEnabled(bool(self.selected_rows))
        self.sources = {s: QCheckBox(SOURCE_NAMES[s]) for s in (Source.GOLD, Source.CURATOR, Source.MODEL)}
        source_box = QHBoxLayout()
        for source, box in self.sources.items():
            box.setChecked(source in REVIEWED_SOURCES)
            source_box.addWidget(box)
            box.toggled.connect(lambda _on: self._describe())
        self.which.buttonToggled.connect(lambda _b, _on: self._describe())
        self.includes = QLabel()
        self.includes.setWordWrap(True)
        self.path = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        path_box = QHBoxLayout()
        path_box.addWidget(self.path, 1)
        path_box.addWidget(browse)
        self.report = QLabel()
        self.report.setWordWrap(True)
        # Every span the writers could not hold, one line each with its document.
        self.dropped = QPlainTextEdit()
        self.dropped.setReadOnly(True)
        self.dropped.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.dropped.setMaximumHeight(140)
        self.dropped.hide()
        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("", self.per_document)
        form.addRow("Documents", which_box)
        form.addRow("Entities from", source_box)
        form.addRow("Save to", path_box)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        self.buttons.accepted.connect(self.export)
        self.buttons.rejected.connect(self.reject)
        layout = self._layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.includes)
        layout.addWidget(self.report)
        layout.addWidget(self.dropped)
        layout.addWidget(self.buttons)
        self.format.currentTextChanged.connect(lambda _t: self._suggest_path())
        self.format.currentTextChanged.connect(lambda _t: self._clear_report())
        self.per_document.toggled.connect(lambda _on: self._suggest_path())
        self._suggest_path()
        self._describe()
        self.resize(600, 0)
        self._fit_height()

    def _fmt(self) -> str:
        return EXPORT_FORMATS[self.format.currentText()][0]

    def _suggest_path(self) -> None:
        folder = Path(self.settings.export_folder or Path.home())
        current = self.path.text().strip()
        stem = Path(current).name.split(".")[0] if current else "export"
        self.path.setText(str(folder / (stem if self.per_document.isChecked() else stem + extension(self._fmt()))))

    def _clear_report(self) -> None:
        """Another format: the last export's report (and what BIO could not hold) was
        about a file of the other format, and no longer applies."""
        if self.job is None or not self.job.running:
            self.report.clear()
            self.dropped.clear()
            self.dropped.hide()
            self._fit_height()

    def _say(self, text: str) -> None:
        self.report.setText(text)
        self._fit_height()

    def _fit_height(self) -> None:
        """The dialog as tall as its contents at its width, laid out again each time a
        report or the list of spans not written appears or goes: the list squeezed the
        format box and check boxes, and its space stayed after another format was chosen."""
        layout = self._layout
        layout.activate()
        width = self.width()
        height = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() else layout.totalSizeHint().height()
        if height > 0 and height != self.height():
            self.resize(width, height)

    def _browse(self) -> None:
        if self.per_document.isChecked():
            chosen = QFileDialog.getExistingDirectory(self, "Export into folder", self.path.text())
        else:
            chosen, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text())
        if chosen:
            self.path.setText(chosen)

    def chosen_sources(self) -> tuple[Source, ...]:
        return tuple(s for s, box in self.sources.items() if box.isChecked())

    def chosen_documents(self) -> list[Document]:
        key = self.which.checkedButton().property("key")
        if key == SELECTED:
            rows = self.selected_rows
        elif key == REVIEWED:
            rows = [r for r in range(len(self.workspace)) if self.workspace.entry(r).status is DocStatus.REVIEWED]
        else:
            rows = range(len(self.workspace))
        return [self.workspace.document(r) for r in rows]

    def _describe(self) -> None:
        """Say what Save would write: documents, entities by kind, what is left out."""
        docs = self.chosen_documents()
        sources = self.chosen_sources()
        key = self.which.checkedButton().property("key")
        counts = {s: sum(1 for d in docs for sp in d.spans if sp.source is s) for s in self.sources}
        kinds = " and ".join(SOURCE_NAMES[s].split(" ")[0] for s in sources) or "no"
        noun = {REVIEWED: "reviewed document", ALL: "document", SELECTED: "selected document"}[key]
        text = (f"Includes {len(docs)} {noun}{'s' if len(docs) != 1 else ''} with "
                f"{sum(counts[s] for s in sources)} {kinds} entities")
        left = [f"{counts[s]} {SOURCE_NAMES[s].split(' ')[0]}" for s in self.sources if s not in sources and counts[s]]
        if left:
            text += f"; leaves out {', '.join(left)}"
        if key == REVIEWED and not docs:
            waiting = sum(1 for r in range(len(self.workspace))
                          if self.workspace.entry(r).status is not DocStatus.REVIEWED)
            text += (f". No document is reviewed yet ({waiting} waiting): mark one reviewed with Ctrl+M, "
                     "or choose All")
        self.includes.setText(text + ".")
        self._fit_height()

    def export(self) -> Job | None:
        """Start writing the chosen documents; the report says how it went."""
        if self.job is not None and self.job.running:
            return None
        sources = self.chosen_sources()
        docs = [select_sources(d, sources) for d in self.chosen_documents()]  # the snapshot
        path = self.path.text().strip()
        if not docs:
            self._say("Nothing to export: no document is chosen (see above).")
            return None
        problem = check_destination(path, self.per_document.isChecked())
        if problem is not None:
            self._say(f"<span style='color:#b00'>{problem}</span>")
            return None
        settings = ExportSettings(self.format.currentText(), sources, self.per_document.isChecked())
        self.result = None
        self.dropped.hide()
        self.job = self.jobs.start(f"Export {len(docs)} document(s)", _export_job(docs, path, settings),
                                   kind="export")
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        save.setEnabled(False)
        self._say(f"Exporting {len(docs)} document(s)…")
        self.job.progress.connect(lambda e: self._say(f"Exporting: {e.step} of {e.total} files…")
                                  if e.total > 1 else None)
        self.job.succeeded.connect(lambda result: self._exported(result, path, settings))
        self.job.failed.connect(lambda message: self._say(
            f"<span style='color:#b00'>Export failed: {message}</span>"))
        self.job.cancelled.connect(lambda: self._say("Export cancelled; no file was half-written."))
        self.job.finished.connect(lambda: save.setEnabled(True))
        return self.job

    def _exported(self, result: ExportResult, path: str, settings: ExportSettings) -> None:
        self.result = result
        self.settings.export_folder = str(Path(path) if settings.per_document else Path(path).parent)
        self._say(result.summary())
        if result.dropped:
            self.dropped.setPlainText("Not written:\n" + "\n".join(result.dropped))
            self.dropped.show()
        self._fit_height()

    def done(self, code: int) -> None:  # closing stops an export between files; each file is atomic
        if self.job is not None and self.job.running:
            self.job.cancel()
        super().done(code)
