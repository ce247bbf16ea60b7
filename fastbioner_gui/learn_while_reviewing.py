"""Learn while reviewing (issue 65; off by default, one setting: Model > Learn while
reviewing). After every ``EVERY`` newly reviewed documents an update runs in the
background from the model in use, on all the reviewed documents, as *Improve the
model from my reviews* does (the project's held-back documents, never redrawn; a
result worse than its start beyond doubt is never registered). When the update
scores higher than its start on the held-back documents, the pending suggestions
of the documents not yet reviewed are replaced by the new model's (reviewed ones
never change; curated spans are kept) as one undo step, and the review queue
re-ranks by the new figures. The model picker keeps the model in use: the next
update starts from it again, with more reviews.

It shares the cores with the curator: the update runs at the app's thread setting,
one job at a time, and waits while another update or a tagging run is going."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .improve import remember_split, start_update
from .reviewed_data import reviewed_count, reviewed_training_file

if TYPE_CHECKING:  # pragma: no cover
    from .jobs import Job
    from .window_api import WindowServices

EVERY = 10  # newly reviewed documents between two updates


class LearnWhileReviewing:
    def __init__(self, services: WindowServices):
        self.services = services
        self.job: Job | None = None
        self.last_outcome: Any = None
        self.baseline = reviewed_count(services.workspace)  # reviews counted since the last update began
        self.action = services.add_action(
            "model.learn_while_reviewing", "Learn while reviewing", self.toggle,
            tip=f"Every {EVERY} newly reviewed documents, improve the model in the background and refresh the "
                "suggestions of the documents not yet reviewed when it does better on your held-back documents",
            menu="model", after="model.improve")
        self.action.setCheckable(True)
        self.action.setChecked(services.settings.learn_while_reviewing)
        services.workspace.modified.connect(self.check)
        services.workspace.projectReset.connect(self.reset)

    @property
    def on(self) -> bool:
        return bool(self.services.settings.learn_while_reviewing)

    def toggle(self, checked: bool | None = None) -> None:
        from .settings import save_settings

        self.services.settings.learn_while_reviewing = bool(self.action.isChecked() if checked is None else checked)
        self.reset()
        try:
            save_settings(self.services.settings)
        except OSError:  # settings that cannot be written last this session
            pass

    def reset(self) -> None:
        self.baseline = reviewed_count(self.services.workspace)

    def due(self) -> bool:
        return self.on and reviewed_count(self.services.workspace) - self.baseline >= EVERY

    def check(self) -> Job | None:
        """Start an update when ``EVERY`` more documents are reviewed (one at a time)."""
        if not self.due() or (self.job is not None and self.job.running):
            return None
        w = self.services
        model = w.current_model()
        improving = w.feature("improve")
        if not model or (improving is not None and improving.job is not None and improving.job.running):
            return None
        try:
            train = reviewed_training_file(w.workspace)
        except OSError as exc:
            w.show_status(f"Learn while reviewing: cannot write the reviewed documents: {exc}")
            return None
        if train is None:
            return None
        n = reviewed_count(w.workspace)
        self.baseline = n
        project = w.workspace.project
        job = start_update(w, model, train, f"Learn from {n} reviewed documents ({model})")
        self.job = job
        job.succeeded.connect(lambda outcome: self.finished(outcome, model, project))
        job.failed.connect(lambda message: w.show_status(f"Learn while reviewing: the update failed: {message}"))
        return job

    def finished(self, outcome: Any, model: str, project: Any) -> None:
        w = self.services
        self.last_outcome = outcome
        if w.workspace.project is not project:  # another project was opened meanwhile
            return
        remember_split(w, outcome)
        if outcome.refused is not None:
            w.show_status(outcome.notes[0], 20000)
            return
        c = outcome.result.comparison if outcome.result is not None else None
        if not outcome.wins:
            where = f" on {c.where}" if c is not None else ""
            w.show_status(f"Learn while reviewing: {outcome.entry.name} did no better than {model}{where}; "
                          "suggestions left as they were", 20000)
            return
        rows = [r for r in range(len(w.workspace)) if not _reviewed(w.workspace, r)]
        tagging = w.tagging
        if not rows or tagging is None:
            return
        tagging.applied.connect(self._requeue, type=_single_shot())
        if tagging.tag(outcome.entry.name, rows) is None:
            w.show_status(f"Learn while reviewing: {outcome.entry.name} is better on {c.where}, but tagging is "
                          "busy; tag the documents with it when it is done", 20000)
            return
        w.show_status(f"Learn while reviewing: {outcome.entry.name} scored {100 * c.before:.1f} → "
                      f"{100 * c.after:.1f} on {c.where}; refreshing the suggestions of {len(rows)} unreviewed "
                      "documents (one undo step)", 20000)

    def _requeue(self) -> None:
        queue = self.services.feature("review_queue")
        if queue is not None:
            queue.queue.refresh()  # the new figures re-rank it


def _reviewed(workspace, row: int) -> bool:
    from fastbioner.curate.project import DocStatus

    return workspace.entry(row).status is DocStatus.REVIEWED


def _single_shot():
    from PySide6.QtCore import Qt

    return Qt.ConnectionType.SingleShotConnection


def install(services: WindowServices) -> LearnWhileReviewing:
    return LearnWhileReviewing(services)
