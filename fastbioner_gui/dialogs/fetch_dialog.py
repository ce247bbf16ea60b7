"""File > Fetch from PubMed: abstracts by PMIDs or by a query, fetched by the core's
job (:func:`fastbioner.fetch.fetch_pubmed`) in the background, then added to the
workspace. The dialog stays open to show progress and what was added; closing it
cancels a fetch under way (nothing is added then)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QRadioButton, QSpinBox, QVBoxLayout, QWidget)

from fastbioner.documents import Document
from fastbioner.errors import FastBioNERError
from fastbioner.fetch import API_KEY_ENV, DEFAULT_MAX_RESULTS, MAX_RESULTS_LIMIT, fetch_pubmed, parse_pmids
from fastbioner.jobs import ProgressEvent

from ..jobs import Job, JobManager
from ..models.workspace import Workspace

ERROR_STYLE = "<span style='color:#b00'>{}</span>"


class FetchDialog(QDialog):
    def __init__(self, workspace: Workspace, jobs: JobManager, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Fetch from PubMed")
        self.workspace = workspace
        self.jobs = jobs
        self.job: Job | None = None
        self.added: list[Document] = []
        self.by_pmid = QRadioButton("PMIDs")
        self.by_query = QRadioButton("Query")
        self.mode = QButtonGroup(self)
        for button in (self.by_pmid, self.by_query):
            self.mode.addButton(button)
        self.by_pmid.setChecked(True)
        self.pmids = QPlainTextEdit()
        self.pmids.setPlaceholderText("PMIDs separated by spaces, commas or new lines, e.g. 9010223 10865398")
        self.pmids.setMaximumHeight(90)
        self.query = QLineEdit()
        self.query.setPlaceholderText("e.g. cocaine AND seizures[MeSH Terms]")
        self.max_results = QSpinBox(minimum=1, maximum=MAX_RESULTS_LIMIT, value=DEFAULT_MAX_RESULTS)
        self.max_results.setToolTip("the first matches in PubMed's order")
        key = "set: up to 10 requests a second" if os.environ.get(API_KEY_ENV) else \
            f"not set: 3 requests a second (set {API_KEY_ENV} for 10)"
        self.note = QLabel(f"From NCBI E-utilities, 200 abstracts a request. API key {key}.")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: palette(mid)")
        form = QFormLayout()
        form.addRow(self.by_pmid, self.pmids)
        form.addRow(self.by_query, self.query)
        form.addRow("Max results", self.max_results)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.report = QLabel()
        self.report.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.fetch_button = self.buttons.addButton("Fetch", QDialogButtonBox.ButtonRole.AcceptRole)
        self.fetch_button.setDefault(True)
        self.buttons.accepted.connect(self.start)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.progress)
        layout.addWidget(self.report)
        layout.addWidget(self.buttons)
        self.by_pmid.toggled.connect(self._mode_changed)
        self._mode_changed()
        self.resize(520, 0)

    def _mode_changed(self) -> None:
        pmids = self.by_pmid.isChecked()
        self.pmids.setEnabled(pmids)
        self.query.setEnabled(not pmids)
        self.max_results.setEnabled(not pmids)
        (self.pmids if pmids else self.query).setFocus()

    def start(self) -> Job | None:
        """Start fetching what the form asks for; the report says how it went."""
        if self.job is not None and self.job.running:
            return None
        pmids = query = None
        try:
            if self.by_pmid.isChecked():
                pmids = parse_pmids(self.pmids.toPlainText().splitlines())
                if not pmids:
                    raise FastBioNERError("Type or paste PMIDs first.")
            else:
                query = self.query.text().strip()
                if not query:
                    raise FastBioNERError("Type a PubMed query first.")
        except FastBioNERError as exc:
            self.report.setText(ERROR_STYLE.format(str(exc)))
            return None
        max_results = self.max_results.value()
        what = f"{len(pmids)} PMID(s)" if pmids else f"{query!r}"
        self.job = self.jobs.start(f"Fetch {what} from PubMed", lambda on_event, cancel: fetch_pubmed(
            pmids=pmids, query=query, max_results=max_results, on_event=on_event, cancel=cancel), kind="fetch")
        self.fetch_button.setEnabled(False)
        self.progress.setRange(0, 0)  # busy until the first count arrives
        self.progress.setVisible(True)
        self.report.setText(f"Fetching {what}…")
        self.job.progress.connect(self._progress)
        self.job.succeeded.connect(lambda docs: self._fetched(docs, pmids, query))
        self.job.failed.connect(lambda message: self.report.setText(ERROR_STYLE.format(message)))
        self.job.cancelled.connect(lambda: self.report.setText("Fetch cancelled; nothing was added."))
        self.job.finished.connect(self._ended)
        return self.job

    def _progress(self, event: ProgressEvent) -> None:
        if event.finished:
            return
        if event.total:
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.step)
        if event.message:
            self.report.setText(event.message[:1].upper() + event.message[1:] + "…")

    def _fetched(self, docs: list[Document], pmids: list[str] | None, query: str | None) -> None:
        if self.job is not None and self.job.token.cancelled:  # closed as the last reply came: as promised
            self.report.setText("Fetch cancelled; nothing was added.")
            return
        have = {self.workspace.document(r).id for r in range(len(self.workspace))}
        new = [d for d in docs if d.id not in have]
        self.added = new
        self.workspace.add_documents(new, origin="PubMed" if pmids else f"PubMed query {query!r}")
        parts = [f"Added {len(new)} abstract{'s' if len(new) != 1 else ''} to the workspace."]
        if len(new) < len(docs):
            parts.append(f"{len(docs) - len(new)} already open were left as they are.")
        if pmids:
            found = {d.id for d in docs}
            missing = [p for p in pmids if p not in found]
            if missing:
                shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
                parts.append(f"{len(missing)} PMID(s) not in PubMed: {shown}.")
        elif not docs:
            parts = [f"No PubMed record matches {query!r}."]
        self.report.setText(" ".join(parts))

    def _ended(self) -> None:
        self.fetch_button.setEnabled(True)
        self.progress.setVisible(False)

    def done(self, code: int) -> None:  # closing stops a fetch between requests; nothing is added
        if self.job is not None and self.job.running:
            self.job.cancel()
        super().done(code)
