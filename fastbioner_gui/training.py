"""The app's training flow, beside the tagging one (:mod:`fastbioner_gui.tagging`):
open the dialogs that start a run (fine-tune a teacher, distil a student, resume an
interrupted run), follow each run started, list the models again when it ends, and
offer a successful run's model, never switching to it (a model trained on a handful
of documents may score far below the one in use).

The main window only wires menus to :meth:`TrainingController.open_dialog` and
:meth:`open_leftovers` and shows :attr:`message` in its status bar; the runs themselves
are the library's jobs (``fastbioner.train.guided``, ``fastbioner.train.teacher``), run by the
:class:`~fastbioner_gui.jobs.JobManager` off the GUI thread.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from .jobs import Job, JobManager
from .models.workspace import Workspace
from .settings import AppSettings


class TrainingController(QObject):
    """Owns the training flow of one window. ``picker`` is the model picker (the
    registry's manifests, the model in use); ``refresh_models(select)`` lists the
    models again and selects ``select`` (None: keeps the one in use)."""

    message = Signal(str)        # one line for the status bar
    runStarted = Signal(object)  # a run's Job, as soon as a dialog starts it

    def __init__(self, workspace: Workspace, jobs: JobManager, settings: AppSettings, picker: Any,
                 refresh_models: Callable[[str | None], Any], parent: QWidget):
        super().__init__(parent)
        self.workspace = workspace
        self.jobs = jobs
        self.settings = settings
        self.picker = picker
        self.refresh_models = refresh_models
        self.window = parent
        self.new_model_offer = None  # the last run's "use this model?" box

    # Starting runs -------------------------------------------------------------------
    def teachers(self) -> list[str]:
        """The models a student can be distilled from: the registered teachers, then the
        models the curator tags with (a fresh install's shipped default among them)."""
        from .forms.distill import teacher_candidates

        return teacher_candidates(self.picker.manifests)

    def open_dialog(self, kind: str) -> None:
        """Model > Fine-tune a teacher… (``teacher``) or Distil a student… (``distill``)."""
        from .dialogs.training_dialog import TrainingDialog

        dialog = TrainingDialog(kind, self.workspace, self.jobs, self.settings, self.teachers(), self.window,
                                manifests=self.picker.manifests)
        dialog.jobStarted.connect(self.follow)
        dialog.exec()

    def open_leftovers(self) -> None:
        """Model > Interrupted runs…: resume or delete what cancelled runs saved."""
        from .dialogs.leftovers_dialog import LeftoversDialog

        dialog = LeftoversDialog(self.jobs, self.window)
        dialog.jobStarted.connect(self.follow)
        dialog.exec()

    # Following runs ------------------------------------------------------------------
    def follow(self, job: Job) -> None:
        """A training run ends: the models are listed again (the picker keeps the
        model in use), and a successful run's model is offered, never switched to."""
        self.runStarted.emit(job)
        job.succeeded.connect(lambda result: self.offer(job, result))
        job.cancelled.connect(lambda: self.refresh_models(None))  # a teacher fine-tuned before the cancel stays
        job.failed.connect(lambda _message: self.refresh_models(None))

    def offer(self, job: Job, result: Any) -> None:
        """Offer ``result``'s model (its card, scores and size): *Use this model*
        selects it in the picker, *Keep the current one* leaves the picker as it is."""
        from .dialogs.new_model_offer import NewModelOffer

        current = self.picker.current_name()
        self.refresh_models(current or None)
        self.message.emit(f"{job.model_name} is registered; the picker keeps {current or 'its model'} "
                          f"until you choose")
        offer = NewModelOffer(result, current, self.window)
        offer.useRequested.connect(lambda name: self.refresh_models(name))
        offer.finished.connect(offer.deleteLater)
        self.new_model_offer = offer
        offer.open()

    @staticmethod
    def outcome(job: Job) -> str:
        """How a finished training run ended, for the status bar: a run that did not
        finish keeps what it saved, for Model > Interrupted runs."""
        kept = " (what it saved is kept: Model > Interrupted runs… resumes or deletes it)"
        return {"done": "done", "cancelled": f"cancelled{kept}", "failed": f"failed: {job.error}{kept}"}.get(
            job.state.value, job.state.value)
