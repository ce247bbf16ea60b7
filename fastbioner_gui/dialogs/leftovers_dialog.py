"""Model > Interrupted runs: the checkpoints that cancelled or crashed training runs
left in the registry's hidden ``.checkpoints/`` folder (hundreds of MB each), with how
far each run got and its size, and Resume (the run continues where its checkpoint
left it, as a job like any other) or Delete (the space comes back)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHeaderView, QLabel, QMessageBox,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ..jobs import QUIET_KIND, Job, JobManager

COLUMNS = ("Model", "Run", "Progress", "Size", "Saved")


def _list(on_event=None, cancel=None):
    from fastbioner.train.leftovers import list_leftovers

    return list_leftovers()


def _delete(name: str):
    def run(on_event=None, cancel=None):
        from fastbioner.train.leftovers import delete_leftover

        return delete_leftover(name)
    return run


def progress_text(step: int, total: int) -> str:
    if not step:
        return "no checkpoint saved yet"
    return f"step {step} of {total} ({100 * step // total}%)" if total else f"step {step}"


def resume_job(leftover: Any):
    """The job that resumes ``leftover``'s run with the settings it recorded: a
    distillation goes on through the app's guided path (compacted at the end where
    the defaults table's rule says so: ``guided.compact_by_default``), a teacher's
    fine-tuning through its own."""
    run = leftover.run or {}
    name = leftover.name
    if run.get("kind") == "distill":
        from fastbioner.train.distill.config import DistillConfig

        config = DistillConfig.from_dict(run["config"])

        def fn(on_event, cancel):
            from fastbioner.train.guided import fine_tune_then_distill

            return fine_tune_then_distill(None, None, config, name, resume=True, on_event=on_event, cancel=cancel)
        return f"Resume distilling {name}", fn, config
    from fastbioner.base.config import TeacherConfig

    config = TeacherConfig.from_dict(run["config"])

    def fn(on_event, cancel):
        from fastbioner.train.teacher import train_teacher

        return train_teacher(config, name, resume=True, on_event=on_event, cancel=cancel)
    return f"Resume fine-tuning {name}", fn, config


RESUME_TIP = "Continue the run from its checkpoint, as a job"
DELETE_TIP = "Delete the checkpoint and free its space"


class LeftoversDialog(QDialog):
    jobStarted = Signal(object)  # a resumed run's Job

    def __init__(self, jobs: JobManager, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Interrupted runs")
        self.jobs = jobs
        self.leftovers: list[Any] = []
        self.listing: Job | None = None
        self.done_text = ""  # what the last Delete did, kept above the new count
        self._awaited: set = set()  # stopping runs whose end lists the runs again
        self.note = QLabel("A cancelled or interrupted training run keeps its checkpoint, so it can go on "
                           "where it stopped. Resume it, or delete it to free the space.")
        self.note.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.status = QLabel()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.resume_button = QPushButton("&Resume")
        self.resume_button.setToolTip(RESUME_TIP)
        self.delete_button = QPushButton("&Delete…")
        self.delete_button.setToolTip(DELETE_TIP)
        buttons.addButton(self.resume_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.delete_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.resume_button.clicked.connect(self.resume)
        self.delete_button.clicked.connect(self.delete)
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self.resize(640, 300)
        self.refresh()

    def refresh(self) -> Job:
        self.status.setText("Looking for interrupted runs…")
        self._update_buttons()
        self.listing = self.jobs.start("List interrupted runs", _list, kind=QUIET_KIND)
        self.listing.succeeded.connect(self._show)
        self.listing.failed.connect(lambda message: self.status.setText(f"Cannot list them: {message}"))
        return self.listing

    def _show(self, leftovers: list[Any]) -> None:
        from fastbioner.base.units import human_size

        self.leftovers = list(leftovers)
        self.table.setRowCount(len(self.leftovers))
        for row, left in enumerate(self.leftovers):
            kind = {"distill": "distillation", "teacher": "teacher fine-tuning"}.get(left.kind, "unknown")
            saved = datetime.fromisoformat(left.saved).astimezone().strftime("%Y-%m-%d %H:%M")  # local time
            cells = (left.name, kind, progress_text(left.step, left.total_steps), human_size(left.size_bytes), saved)
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column == 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
        total = sum(left.size_bytes for left in self.leftovers)
        count = (f"{len(self.leftovers)} interrupted run{'s' if len(self.leftovers) != 1 else ''}, "
                 f"{human_size(total)} in all"
                 if self.leftovers else "No interrupted runs: nothing to resume or delete.")
        self.status.setText(f"{self.done_text}. {count}" if self.done_text else count)
        if self.leftovers:
            self.table.selectRow(0)
        self._update_buttons()

    def selected(self) -> Any | None:
        rows = self.table.selectionModel().selectedRows()
        return self.leftovers[rows[0].row()] if rows and rows[0].row() < len(self.leftovers) else None

    def _update_buttons(self) -> None:
        left = self.selected()
        running = {job.model_name: job for job in self.jobs.running()}
        stopping = left is not None and left.name in running
        self.delete_button.setEnabled(left is not None and not stopping)
        self.resume_button.setEnabled(left is not None and left.resumable and not stopping)
        resume_tip, delete_tip = RESUME_TIP, DELETE_TIP
        if stopping:
            # Opened right after Cancel: the run is still saving its last checkpoint. Say so,
            # and list the runs again once it has stopped (its step, then, is the saved one).
            why = f"{left.name} is still stopping (saving its checkpoint); Resume and Delete come back once it has"
            resume_tip = delete_tip = why
            self.status.setText(why + "…")
            job = running[left.name]
            if job not in self._awaited:
                self._awaited.add(job)
                job.finished.connect(self.refresh)
        elif left is not None and not left.resumable:
            resume_tip = ("This run recorded no settings (an older version): resume it with the same command "
                          "and --resume")
        self.resume_button.setToolTip(resume_tip)
        self.delete_button.setToolTip(delete_tip)

    def resume(self) -> Job | None:
        left = self.selected()
        if left is None or not left.resumable:
            return None
        title, fn, config = resume_job(left)
        job = self.jobs.start(title, fn, kind="train", config=config, model_name=left.name)
        self.jobStarted.emit(job)
        self.accept()
        return job

    def delete(self) -> Job | None:
        from fastbioner.base.units import human_size

        left = self.selected()
        if left is None:
            return None
        B = QMessageBox.StandardButton
        answer = QMessageBox.question(self, "Delete the checkpoint?",
                                      f"Delete the checkpoint of {left.name} ({human_size(left.size_bytes)})? "
                                      "The run cannot be resumed after this.", B.Yes | B.No, B.No)
        if answer != B.Yes:
            return None
        self.delete_button.setEnabled(False)
        self.status.setText(f"Deleting the checkpoint of {left.name}…")
        job = self.jobs.start(f"Delete the checkpoint of {left.name}", _delete(left.name), kind=QUIET_KIND)
        job.succeeded.connect(lambda freed: (setattr(self, "done_text", f"Deleted the checkpoint of {left.name}: "
                                                                        f"{human_size(freed)} freed"), self.refresh()))
        job.failed.connect(lambda message: self.status.setText(f"Cannot delete it: {message}"))
        return job
