"""The jobs panel (the Jobs dock, opened by the curator from View > Jobs or a
training run's Curves button): every background job of the session with its
progress, time left and a cancel button, and the live curves of the job selected."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QProgressBar, QPushButton,
                               QSplitter, QVBoxLayout, QWidget)

from fastbioner.base.jobs import JobState

from ..jobs import CURVE_KINDS, QUIET_KIND, Job, JobManager
from .job_strip import ElidedLabel, show_progress
from .job_strip import duration as _duration


def ended_fraction(job: Job) -> float:
    """How far the stage a job ended in got, from the steps of its last event (the
    final event repeats the last step): 48 of 300 is 16%. A stage without a known
    total says nothing (0)."""
    event = job.last_event
    return event.fraction if event is not None else 0.0


class JobRow(QWidget):
    """One job: title, stage and time left, a progress bar and a cancel button."""

    def __init__(self, job: Job, parent: QWidget | None = None):
        super().__init__(parent)
        self.job = job
        self.title = ElidedLabel(job.title)  # a long name shortens; Cancel stays
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.status = QLabel("starting…")
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        self.cancel = QPushButton("Cancel")
        self.cancel.clicked.connect(self._cancel)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.cancel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        job.finished.connect(self.update_view)

    def _cancel(self) -> None:
        self.job.cancel()
        self.cancel.setEnabled(False)
        self.status.setText("cancelling…")

    def update_view(self) -> None:
        job, event = self.job, self.job.last_event
        if job.state is not JobState.RUNNING:
            self.cancel.setEnabled(False)
            text = {JobState.DONE: "done", JobState.CANCELLED: "cancelled",
                    JobState.FAILED: f"failed: {job.error}"}[job.state]
            if job.state is JobState.DONE:
                self.bar.setRange(0, 100)
                self.bar.setValue(100)
            else:
                # Where it stopped, from the last event's own steps (48 of 300: 16%);
                # never the bar's value carried over from another range.
                self.bar.setRange(0, 100)
                self.bar.setValue(round(100 * ended_fraction(job)))
                if event is not None and event.total:
                    text += f" at {event.stage} {min(event.step, event.total)}/{event.total}"
            if event is not None:
                text += f" after {_duration(event.elapsed_seconds)}"
            self.status.setText(text)
            return
        if event is None:
            return
        show_progress(self.bar, event)
        epoch = f" · epoch {event.epoch}" if event.epoch and "epoch" not in event.message else ""
        left = f" · {_duration(event.eta_seconds)} left" if event.eta_seconds is not None else ""
        message = f" · {event.message}" if event.message and event.message != event.stage else ""
        if self.job.token.cancelled:
            self.status.setText("cancelling…")
        else:
            self.status.setText(f"{event.stage} {event.step}/{event.total or '?'}{epoch}{left}{message}")


class JobsPanel(QWidget):
    def __init__(self, manager: JobManager, parent: QWidget | None = None):
        super().__init__(parent)
        self.manager = manager
        self.list = QListWidget()
        # The curves (pyqtgraph) are built when a training run first shows them:
        # importing pyqtgraph took 1.5 s of every launch, for a chart most sessions
        # never open.
        self._curves = None
        self._curves_slot = QWidget()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.list)
        splitter.addWidget(self._curves_slot)
        self._splitter = splitter
        splitter.setSizes([320, 640])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.rows: list[JobRow] = []
        self.list.currentRowChanged.connect(self._show_curves)
        manager.jobStarted.connect(self.add_job)
        # Progress text is refreshed on a clock, not per event: a job may report
        # hundreds of steps a second.
        self._timer = QTimer(self)
        self._timer.setInterval(200)
        self._timer.timeout.connect(self._refresh)
        self._timer.start()

    def show_job(self, job: Job) -> None:
        """Select ``job`` so its curves show."""
        row = self.row_for(job)
        if row is not None:
            self.list.setCurrentRow(self.rows.index(row))

    def add_job(self, job: Job) -> None:
        if job.kind == QUIET_KIND:
            return
        row = JobRow(job)
        item = QListWidgetItem()
        item.setSizeHint(row.sizeHint())
        self.rows.insert(0, row)  # before the list moves its current row down by one
        self.list.insertItem(0, item)
        self.list.setItemWidget(item, row)
        # A training run takes the curves; a short job does not steal them from one.
        if job.kind in CURVE_KINDS or self.list.count() == 1:
            self.list.setCurrentRow(0)

    def row_for(self, job: Job) -> JobRow | None:
        return next((r for r in self.rows if r.job is job), None)

    @property
    def curves(self):
        if self._curves is None:
            from .curves import Curves

            self._curves = Curves()
            self._splitter.replaceWidget(1, self._curves)
            self._curves_slot.deleteLater()
        return self._curves

    def _show_curves(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            job = self.rows[index].job
            if job.kind not in CURVE_KINDS:  # tagging and reading have no curves
                if self._curves is not None:
                    self._curves.setVisible(False)
                return
            if self._curves is None and not self.isVisible():
                return  # built when the panel is shown (showEvent)
            self.curves.follow(job.events)
            self.curves.setVisible(True)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._show_curves(self.list.currentRow())

    def _refresh(self) -> None:
        for row in self.rows:
            if row.job.running:
                row.update_view()
