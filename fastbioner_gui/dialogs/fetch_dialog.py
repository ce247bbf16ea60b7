"""File > Fetch from PubMed: abstracts by PMIDs or by a query, fetched by the core's
job (:func:`fastbioner.net.fetch.fetch_pubmed`) in the background, then added to the
workspace. The dialog stays open to show progress and what was added. *Cancel fetch*
(or closing the dialog) cuts the request under way at once; nothing is added then.
PMIDs already open are not downloaded again. Time limits are the core's, as in the
CLI: a fetch gives up once 50 s pass without a batch arriving (docs/reference/limits.md)."""

from __future__ import annotations

import html
import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QRadioButton, QSpinBox, QVBoxLayout, QWidget)

from fastbioner.io.documents import Document
from fastbioner.base.errors import FastBioNERError
from fastbioner.net.fetch import (
    API_KEY_ENV, DEFAULT_MAX_RESULTS, MAX_RESULTS_LIMIT, PATIENCE_SECONDS, FetchResult, fetch_pubmed, parse_pmids,
)
from fastbioner.base.jobs import ProgressEvent

from ..jobs import Job, JobManager
from ..models.palette import MUTED_STYLE
from ..models.workspace import Workspace

ERROR_STYLE = "<span style='color:#b00'>{}</span>"


def _n(count: int, one: str, many: str) -> str:
    """``1 abstract`` / ``3 abstracts``: the count with the word that agrees with it."""
    return f"{count:,} {one if count == 1 else many}"


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
        self.note = QLabel(f"From NCBI E-utilities, 200 abstracts a request; gives up after {PATIENCE_SECONDS:g} s "
                           f"without one arriving. API key {key}.")
        self.note.setWordWrap(True)
        self.note.setStyleSheet(MUTED_STYLE)
        form = QFormLayout()
        form.addRow(self.by_pmid, self.pmids)
        form.addRow(self.by_query, self.query)
        form.addRow("Max results", self.max_results)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.report = QLabel()
        self.report.setWordWrap(True)
        # Rich text always, every piece escaped: a server's words never become markup.
        self.report.setTextFormat(Qt.TextFormat.RichText)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.fetch_button = self.buttons.addButton("Fetch", QDialogButtonBox.ButtonRole.AcceptRole)
        self.fetch_button.setDefault(True)
        self.cancel_button = self.buttons.addButton("Cancel fetch", QDialogButtonBox.ButtonRole.ActionRole)
        self.cancel_button.setToolTip("Stop the fetch now, even in the middle of a request; nothing is added")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel_fetch)
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
            self._say(str(exc), error=True)
            return None
        max_results = self.max_results.value()
        # What is open is not downloaded again (its curation stays as it is).
        open_ids = {self.workspace.document(r).id for r in range(len(self.workspace))}
        what = _n(len(pmids), "PMID", "PMIDs") if pmids else f"{query!r}"
        self.job = self.jobs.start(f"Fetch {what} from PubMed", lambda on_event, cancel: fetch_pubmed(
            pmids=pmids, query=query, max_results=max_results, on_event=on_event, cancel=cancel,
            skip=open_ids), kind="fetch")
        self.fetch_button.setEnabled(False)
        self.cancel_button.setVisible(True)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)  # busy until the first count arrives
        self.progress.setVisible(True)
        self._say(f"Fetching {what}…")
        self.job.progress.connect(self._progress)
        self.job.succeeded.connect(lambda docs: self._fetched(docs, pmids, query))
        self.job.failed.connect(lambda message: self._say(message, error=True))
        self.job.cancelled.connect(lambda: self._say("Fetch cancelled; nothing was added."))
        self.job.finished.connect(self._ended)
        return self.job

    def cancel_fetch(self) -> None:
        """Stop the fetch under way: the request in flight is cut at once (the core's
        request watches the cancel token), and nothing is added."""
        if self.job is not None and self.job.running:
            self.job.cancel()
            self.cancel_button.setEnabled(False)
            self._say("Cancelling…")

    def _say(self, text: str, error: bool = False) -> None:
        text = html.escape(text, quote=False)
        self.report.setText(ERROR_STYLE.format(text) if error else text)

    def _progress(self, event: ProgressEvent) -> None:
        if event.finished:
            return
        if event.total:
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.step)
        if event.message and not (self.job is not None and self.job.token.cancelled):
            self._say(event.message[:1].upper() + event.message[1:] + "…")

    def _fetched(self, docs: FetchResult, pmids: list[str] | None, query: str | None) -> None:
        if self.job is not None and self.job.token.cancelled:  # closed as the last reply came: as promised
            self._say("Fetch cancelled; nothing was added.")
            return
        # Opened meanwhile (another fetch, a file): left as it is too.
        have = {self.workspace.document(r).id for r in range(len(self.workspace))}
        new = [d for d in docs if d.id not in have]
        self.added = new
        self.workspace.add_documents(new, origin="PubMed" if pmids else f"PubMed query {query!r}")
        held = len(docs.skipped) + len(docs) - len(new)
        if query is not None and not docs.matches:
            self._say(f"No PubMed record matches {query!r}.")
            return
        added = f"{_n(len(new), 'abstract', 'abstracts')} added to the workspace"
        if query is not None:  # how many match in all, and how many of them came
            parts = [f"{docs.matches:,} matched in PubMed, {added}."]
        else:
            parts = [added[:1].upper() + added[1:] + "."]
        if held:
            parts.append(f"{held:,} already open {'was' if held == 1 else 'were'} left as "
                         f"{'it is' if held == 1 else 'they are'} (not downloaded again).")
        if pmids:
            found = {d.id for d in docs} | set(docs.skipped)
            missing = [p for p in pmids if p not in found]
            if missing:
                shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
                parts.append(f"{_n(len(missing), 'PMID', 'PMIDs')} not in PubMed: {shown}.")
        if docs.unasked:
            parts.append(f"The server also sent {_n(len(docs.unasked), 'record', 'records')} not asked for; "
                         "left out.")
        self._say(" ".join(parts))

    def _ended(self) -> None:
        self.fetch_button.setEnabled(True)
        self.cancel_button.setVisible(False)
        self.progress.setVisible(False)

    def done(self, code: int) -> None:  # closing cuts a fetch under way; nothing is added
        if self.job is not None and self.job.running:
            self.job.cancel()
        super().done(code)
