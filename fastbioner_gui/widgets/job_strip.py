"""The job strip under the reading view: one slim row per running job (title, progress,
time left, cancel, and for training runs a button that opens the curves), never more
than a few rows, and gone when nothing runs. The full curves live in the Jobs dock,
which opens only when the curator asks for it."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from ..jobs import CURVE_KINDS, QUIET_KIND, Job, JobManager

# Rows shown at most; more running jobs are counted on one line.
MAX_ROWS = 3


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def show_progress(bar: QProgressBar, event) -> None:
    """Set ``bar`` to a job's last progress event: steps of a known total, else busy."""
    if event.total:
        bar.setRange(0, event.total)
        bar.setValue(min(event.step, event.total))
    else:
        bar.setRange(0, 0)


class ElidedLabel(QLabel):
    """A one-line label that shortens its text with "…" to the room it is given, and
    never asks for more: a long job name must not push its Cancel button away."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(40)
        self.setToolTip(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, max(0, self.width()))

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.rect(), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                         self.shown_text())


class StripRow(QWidget):
    curvesRequested = Signal(object)  # Job

    def __init__(self, job: Job, parent: QWidget | None = None):
        super().__init__(parent)
        self.job = job
        self.title = ElidedLabel(job.title)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        self.bar.setMaximumHeight(self.fontMetrics().height() + 2)
        self.bar.setFixedWidth(180)
        self.left = QLabel("starting…")
        self.left.setMinimumWidth(self.fontMetrics().horizontalAdvance("0:00:00 left") + 8)
        self.curves = QToolButton()
        self.curves.setText("Curves")
        self.curves.setToolTip("Open the Jobs dock with this run's live curves")
        keep = self.curves.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # rows line up whether or not they have curves
        self.curves.setSizePolicy(keep)
        self.curves.setVisible(job.kind in CURVE_KINDS)
        self.curves.clicked.connect(lambda: self.curvesRequested.emit(self.job))
        self.cancel = QToolButton()
        self.cancel.setText("Cancel")
        self.cancel.clicked.connect(self._cancel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.addWidget(self.title, 1)
        layout.addWidget(self.bar)
        layout.addWidget(self.left)
        layout.addWidget(self.curves)
        layout.addWidget(self.cancel)

    def _cancel(self) -> None:
        self.job.cancel()
        self.cancel.setEnabled(False)
        self.left.setText("cancelling…")

    def update_view(self) -> None:
        event = self.job.last_event
        if self.job.token.cancelled:
            self.left.setText("cancelling…")
            return
        if event is None:
            return
        show_progress(self.bar, event)
        if event.total:
            self.bar.setFormat(f"{event.stage} %v/%m")
        self.left.setText(f"{duration(event.eta_seconds)} left" if event.eta_seconds is not None else event.stage)


class JobStrip(QWidget):
    """Rows for the running jobs of ``manager``; hidden when none runs."""

    curvesRequested = Signal(object)  # Job

    def __init__(self, manager: JobManager, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[StripRow] = []
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 2, 0, 2)
        self._layout.setSpacing(1)
        self.more = QLabel()
        self._layout.addWidget(self.more)
        self.more.hide()
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        manager.jobStarted.connect(self.add_job)
        self.hide()
        # Progress text is refreshed on a clock, not per event: a job may report
        # hundreds of steps a second.
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.refresh)

    def add_job(self, job: Job) -> None:
        if job.kind == QUIET_KIND:
            return
        row = StripRow(job)
        row.curvesRequested.connect(self.curvesRequested)
        self.rows.append(row)
        self._layout.insertWidget(self._layout.count() - 1, row)
        job.finished.connect(lambda: self.remove(row))
        self._place()
        self._timer.start()

    def remove(self, row: StripRow) -> None:
        if row in self.rows:
            self.rows.remove(row)
            row.setParent(None)
            row.deleteLater()
        self._place()
        if not self.rows:
            self._timer.stop()

    def row_for(self, job: Job) -> StripRow | None:
        return next((r for r in self.rows if r.job is job), None)

    def shown_rows(self) -> list[StripRow]:
        return [r for r in self.rows if not r.isHidden()]

    def _place(self) -> None:
        for i, row in enumerate(self.rows):
            row.setVisible(i < MAX_ROWS)
        extra = len(self.rows) - MAX_ROWS
        self.more.setVisible(extra > 0)
        self.more.setText(f"  and {extra} more job{'s' if extra != 1 else ''} (View > Jobs)")
        self.setVisible(bool(self.rows))

    def refresh(self) -> None:
        for row in self.shown_rows():
            row.update_view()
