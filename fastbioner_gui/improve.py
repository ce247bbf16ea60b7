"""Model > Improve the model from my reviews (issue 47): one background job that
continues training the model in use on the project's reviewed documents
(:func:`fastbioner.train.finetune.fine_tune`, the library's ``fastbioner fine-tune``), with
progress and cancel in the jobs panel. A share of the reviewed documents is held
back (the library's rule) and the job's result says how the model scored on them
before and after. The new model is registered and offered with its card; the model
picker keeps the model in use until the curator chooses (never a silent switch). A
cancel registers nothing.

The teacher-then-student chain (Model > Distil a student…) stays for a compressed
model from scratch; this is the quick loop: review, improve, tag again."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QMessageBox

from .reviewed_data import reviewed_count, reviewed_training_file

if TYPE_CHECKING:  # pragma: no cover
    from .jobs import Job
    from .window_api import WindowServices

KIND = "fine-tune"  # no checkpoints are kept: a cancelled run leaves nothing behind


@dataclass
class ImproveOutcome:
    """What the offer shows: the new model, its scores on the held-back documents
    (``report``; None when none were held back) and the before/after lines."""

    entry: Any                      # the registered ModelEntry
    report: Any                     # EvaluationReport after, on the held-back slice
    before: Any                     # EvaluationReport before, on the same
    notes: list[str] = field(default_factory=list)
    result: Any = None              # the library's FineTuneResult

    def before_after(self) -> tuple[float, float] | None:
        if self.before is None or self.report is None:
            return None
        return self.before.f1, self.report.f1


def improve(model: str, train_file: str, name: str, on_event, cancel) -> ImproveOutcome:
    """The job (worker thread): fine-tune ``model`` on ``train_file`` with the
    library's defaults and register the result as ``name``."""
    from fastbioner.train.finetune import fine_tune
    from fastbioner.train.finetune_config import FineTuneConfig

    from .tagging import registered

    result = fine_tune(registered(model), FineTuneConfig(train_files=[train_file]), name,
                       on_event=on_event, cancel=cancel)
    return ImproveOutcome(result.entry, result.after, result.before, outcome_notes(result), result)


def outcome_notes(result) -> list[str]:
    """The job's result in a curator's words: the scores on the held-back reviewed
    documents before and after, what was learned and kept, how long it took."""
    from fastbioner.train.estimate import duration_words

    notes = []
    if result.before is not None and result.after is not None:
        types = ", ".join(f"{t} {100 * result.before.per_type[t].f1:.1f} → {100 * result.after.per_type[t].f1:.1f}"
                          for t in result.reviewed_types
                          if t in result.before.per_type and t in result.after.per_type)
        where = (f"{result.held_back} of your {result.documents} reviewed documents, held back from training"
                 if result.held_back else result.dev_source)
        notes.append(f"F1 on {where}: before {100 * result.before.f1:.1f}, after {100 * result.after.f1:.1f}"
                     + (f" ({types})" if types else "") + ".")
    kept = f"; {', '.join(result.kept_types)} kept as the model had it" if result.kept_types else ""
    added = f"; new labels: {', '.join(result.added_labels)}" if result.added_labels else ""
    notes.append(f"Learned from {result.documents - result.held_back} reviewed documents: "
                 f"{', '.join(result.reviewed_types)} as you reviewed it{kept}{added}.")
    t = result.training
    notes.append(f"{t.steps} training steps in {duration_words(t.seconds)}"
                 + (" (stopped early: no more gain on the held-back documents)" if t.stopped_early else "") + ".")
    notes += result.notes  # e.g. too few documents to hold any back
    return notes


def improved_name(model: str) -> str:
    """``<model>-improved-2026-12-05`` (numbered when taken)."""
    from .forms.training import unique_name

    stem = Path(model).name
    stem = stem.split("-improved-")[0]  # a model improved again keeps one suffix
    return unique_name(f"{stem}-improved-{date.today():%Y-%m-%d}")


class ImproveHookup:
    def __init__(self, services: WindowServices):
        self.services = services
        self.job: Job | None = None
        self.message: QMessageBox | None = None  # the last thing said (tests read it)
        self.action = services.add_action(
            "model.improve", "Improve the model from my reviews", self.start,
            tip="Continue training the model in use on the reviewed documents; the new model is offered, never "
                "switched to by itself", menu="model", after="model.tag_all")

    def tell(self, text: str) -> None:
        """Say why nothing started (or what failed): a box that does not block."""
        box = QMessageBox(QMessageBox.Icon.Information, "Improve the model", text, parent=self.services.host)
        box.finished.connect(box.deleteLater)
        self.message = box
        box.open()

    def start(self) -> Job | None:
        w = self.services
        model = w.current_model()
        if self.job is not None and self.job.running:
            w.show_status("The model is being improved already (see the Jobs panel)", 8000)
            return None
        if not model:
            self.tell("Choose the model to improve in the toolbar first.")
            return None
        n = reviewed_count(w.workspace)
        if not n:
            self.tell("No document is reviewed yet. Decide its suggestions and mark it reviewed (Ctrl+M); the "
                      "review queue (Curate menu) shows the ones the model is least sure of first.")
            return None
        try:
            train = reviewed_training_file(w.workspace)
        except OSError as exc:
            self.tell(f"Cannot write the reviewed documents: {exc}")
            return None
        name = improved_name(model)
        job = w.jobs.start(f"Improve {model} from {n} reviewed document{'s' if n != 1 else ''}",
                           lambda on_event, cancel: improve(model, train, name, on_event, cancel),
                           kind=KIND, model_name=name)
        self.job = job
        job.succeeded.connect(lambda outcome: w.offer_model(job, outcome))
        job.failed.connect(lambda message: self.tell(f"The model could not be improved: {message}"))
        job.cancelled.connect(lambda: w.show_status(f"Improving {model} cancelled: nothing registered"))
        w.show_status(f"Improving {model} from {n} reviewed documents in the background…", 8000)
        return job


def install(services: WindowServices) -> ImproveHookup:
    return ImproveHookup(services)
