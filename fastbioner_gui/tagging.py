"""Tagging documents with a registry model in the background: the job that runs the
core's :class:`~fastbioner.inference.Tagger` over chunks of documents with progress
and cancel, and the controller that turns its result into one undoable command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoStack

from fastbioner.documents import Document, Span
from fastbioner.jobs import CancelToken, EventCallback, run_job

from .curation import tagging_change, tagging_command_of
from .undo import state_of
from .jobs import Job, JobManager
from .models.workspace import Workspace
from .settings import AppSettings

# Documents per call of the tagger: big enough to batch well, small enough that
# progress moves and a cancel is felt within a second or so.
CHUNK = 32
# Documents merged per turn of the event loop when a run's results are applied: the
# merge of 1,000 documents took about 80 ms of the GUI thread in one go.
APPLY_CHUNK = 100


@dataclass
class TaggingResult:
    model: str
    spans: dict[int, list[Span]]   # workspace row -> the model's spans
    provenance: dict


def tagger_config(settings: AppSettings):
    from fastbioner.inference import TaggerConfig

    return TaggerConfig(device=settings.device, precision=settings.precision,
                        threads=settings.threads or None, max_batch_size=settings.batch_size)


def tag_rows(model: str, rows: Sequence[int], docs: Sequence[Document], settings: AppSettings,
             on_event: EventCallback, cancel: CancelToken) -> TaggingResult:
    """The job: load ``model`` and tag ``docs`` (rows of the workspace), chunk by chunk."""
    from fastbioner.inference import Tagger

    def job(reporter) -> TaggingResult:
        reporter.stage("load", message=f"loading {model}")
        tagger = Tagger.load(model, tagger_config(settings))
        reporter.stage("tag", total=len(docs), message=f"tagging with {model}")
        spans: dict[int, list[Span]] = {}
        for i in range(0, len(docs), CHUNK):
            reporter.check()
            chunk = docs[i:i + CHUNK]
            for row, found in zip(rows[i:i + CHUNK], tagger.tag(chunk, cancel)):
                spans[row] = found
            reporter.emit(step=min(i + CHUNK, len(docs)))
        provenance = dict(tagger.describe())
        provenance.update({k: tagger.manifest.get(k) for k in ("kind", "base_model", "created", "version")
                           if k in tagger.manifest})
        return TaggingResult(model, spans, provenance)

    return run_job(job, on_event, cancel)


class TaggingController(QObject):
    """Starts tagging jobs (one at a time) and applies what they found."""

    busyChanged = Signal(bool)
    message = Signal(str)
    applied = Signal()   # a run's results are in the documents (after its job has finished)

    def __init__(self, workspace: Workspace, stack: QUndoStack, jobs: JobManager, settings: AppSettings,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.stack = stack
        self.jobs = jobs
        self.settings = settings
        self.job: Job | None = None

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running

    def tag(self, model: str, rows: Sequence[int]) -> Job | None:
        if self.busy or not model or not rows:
            return None
        rows = list(rows)
        docs = [self.workspace.document(r) for r in rows]
        settings = self.settings
        title = f"Tag {len(rows)} document{'s' if len(rows) != 1 else ''} with {model}"
        self.job = self.jobs.start(title, lambda on_event, cancel: tag_rows(
            model, rows, docs, settings, on_event, cancel), kind="tag")
        project = self.workspace.project
        self.job.succeeded.connect(lambda result: self._apply(result, project))
        self.job.failed.connect(lambda msg: self.message.emit(f"Tagging failed: {msg}"))
        self.job.cancelled.connect(lambda: self.message.emit("Tagging cancelled: nothing changed"))
        self.job.finished.connect(lambda: self.busyChanged.emit(False))
        self.busyChanged.emit(True)
        return self.job

    def _apply(self, result: TaggingResult, project, start: int = 0,  # noqa: ANN001
               changes: list | None = None) -> None:
        """Merge the results into the documents a chunk per event-loop turn, then push
        one undoable command. A document the curator edited between two turns is
        merged again against its edited spans, so no edit is lost."""
        if self.workspace.project is not project:  # another project was opened meanwhile
            self.message.emit(f"{result.model}: results dropped, the project they were for was closed")
            return
        rows = sorted(result.spans)
        changes = [] if changes is None else changes
        replace = self.settings.replace_curated
        for row in rows[start:start + APPLY_CHUNK]:
            change = tagging_change(self.workspace, row, result.spans[row], result.model, replace)
            if change is not None:
                changes.append(change)
        if start + APPLY_CHUNK < len(rows):
            QTimer.singleShot(0, lambda: self._apply(result, project, start + APPLY_CHUNK, changes))
            return
        current = [c if c.before == state_of(self.workspace, c.row) else
                   tagging_change(self.workspace, c.row, result.spans[c.row], result.model, replace)
                   for c in changes]
        command = tagging_command_of(self.workspace, [c for c in current if c is not None], result.model)
        self.workspace.record_model(result.model, result.provenance)
        n = sum(len(s) for s in result.spans.values())
        if command is not None:
            self.stack.push(command)
        self.message.emit(f"{result.model}: {n} entities in {len(result.spans)} documents")
        self.applied.emit()
