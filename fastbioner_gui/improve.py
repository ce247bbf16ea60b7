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
    (``report``; None when none were held back) and the before/after lines. A result
    worse than the model it started from is not registered: ``entry`` is None and
    ``refused`` says why (the comparison), and the current model stays."""

    entry: Any                      # the registered ModelEntry (None: refused)
    report: Any                     # EvaluationReport after, on the held-back slice
    before: Any                     # EvaluationReport before, on the same
    notes: list[str] = field(default_factory=list)
    result: Any = None              # the library's FineTuneResult
    refused: Any = None             # the Comparison that refused it (worse beyond doubt)
    split: dict | None = None       # the project's held-back memory after this update

    def before_after(self) -> tuple[float, float] | None:
        if self.before is None or self.report is None:
            return None
        return self.before.f1, self.report.f1

    @property
    def wins(self) -> bool:
        """Registered and scoring higher than its start on the held-back documents."""
        comparison = getattr(self.result, "comparison", None)
        return self.entry is not None and comparison is not None and comparison.after > comparison.before


SPLIT_KEY = "review_split"  # in the project's info: what earlier updates held back and trained on


def improve(model: str, train_file: str, name: str, on_event, cancel, split: dict | None = None) -> ImproveOutcome:
    """The job (worker thread): fine-tune ``model`` on ``train_file`` with the
    library's defaults and register the result as ``name``; the project's held-back
    documents (``split``, from its info) stay held back."""
    import json
    import os

    from fastbioner.train.finetune import WorseModel, fine_tune
    from fastbioner.train.finetune_config import FineTuneConfig

    from .tagging import registered

    split_file = Path(train_file).with_name(f".split-{os.getpid()}-{id(cancel)}.json")
    try:
        if split:
            split_file.write_text(json.dumps(split), encoding="utf-8")
        config = FineTuneConfig(train_files=[train_file], split_file=str(split_file))
        try:
            result = fine_tune(registered(model), config, name, on_event=on_event, cancel=cancel)
        except WorseModel as exc:
            return ImproveOutcome(None, None, None, [refusal_words(model, exc.comparison)],
                                  refused=exc.comparison, split=_read(split_file))
        return ImproveOutcome(result.entry, result.after, result.before, outcome_notes(result), result,
                              split=_read(split_file))
    finally:
        split_file.unlink(missing_ok=True)


def _read(path: Path) -> dict | None:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def refusal_words(model: str, comparison) -> str:
    """Why the current model stays, in one sentence."""
    return (f"Kept {model}: the improved model scored worse on {comparison.where} (F1 {100 * comparison.before:.1f} "
            f"→ {100 * comparison.after:.1f}; the 95% interval of the change, {100 * comparison.low:+.1f} to "
            f"{100 * comparison.high:+.1f}, lies below zero), so it was not registered.")


def outcome_notes(result) -> list[str]:
    """The job's result in a curator's words: the scores on the held-back reviewed
    documents before and after (with the interval of the change), what was learned
    and kept, how long it took."""
    from fastbioner.train.estimate import duration_words

    notes = []
    c = result.comparison
    if c is not None and result.before is not None and result.after is not None:
        types = ", ".join(f"{t} {100 * result.before.per_type[t].f1:.1f} → {100 * result.after.per_type[t].f1:.1f}"
                          for t in result.reviewed_types
                          if t in result.before.per_type and t in result.after.per_type)
        notes.append(f"F1 on {c.where}: before {100 * c.before:.1f}, after {100 * c.after:.1f}"
                     + (f" ({types})" if types else "")
                     + f"; the 95% interval of the change: {100 * c.low:+.1f} to {100 * c.high:+.1f}.")
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


def start_update(w: WindowServices, model: str, train: str, title: str) -> Job:
    """Start the background update of ``model`` from the reviewed documents in ``train``
    (*Improve* and *Learn while reviewing* alike): a new name, the project's held-back
    split, the fine-tune job kind."""
    name = improved_name(model)
    split = w.workspace.project.info.get(SPLIT_KEY)
    return w.jobs.start(title, lambda on_event, cancel: improve(model, train, name, on_event, cancel, split),
                        kind=KIND, model_name=name)


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
        job = start_update(w, model, train, f"Improve {model} from {n} reviewed document{'s' if n != 1 else ''}")
        self.job = job
        job.succeeded.connect(lambda outcome: self.finished(job, outcome))
        job.failed.connect(lambda message: self.tell(f"The model could not be improved: {message}"))
        job.cancelled.connect(lambda: w.show_status(f"Improving {model} cancelled: nothing registered"))
        w.show_status(f"Improving {model} from {n} reviewed documents in the background…", 8000)
        return job

    def finished(self, job: Job, outcome: ImproveOutcome) -> None:
        remember_split(self.services, outcome)
        if outcome.refused is not None:
            self.tell(outcome.notes[0])  # the current model stays, and why
            return
        self.services.offer_model(job, outcome)


def remember_split(services: WindowServices, outcome: ImproveOutcome) -> None:
    """The project keeps what this update held back and trained on (saved with it):
    the next update holds back the same documents."""
    if isinstance(outcome.split, dict):
        services.workspace.project.info[SPLIT_KEY] = outcome.split


def install(services: WindowServices) -> ImproveHookup:
    return ImproveHookup(services)
