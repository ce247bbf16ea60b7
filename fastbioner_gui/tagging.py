"""Tagging documents with a registry model in the background: the job that runs the
core's :class:`~fastbioner.infer.inference.Tagger` over chunks of documents with progress
and cancel, and the controller that merges each chunk's results into the documents
as soon as it is tagged (the curator sees suggestions arrive), all of one run as one
undoable step, and keeps what merged when the run is cancelled."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from fastbioner.io.documents import Document, Span
from fastbioner.base.jobs import CancelToken, EventCallback, run_job

from .curation import tagging_change
from .jobs import Job, JobManager
from .undo import MergingSpansCommand
from .models.workspace import Workspace
from .settings import AppSettings

# Documents per call of the tagger: big enough to batch well, small enough that
# progress moves, results show and a cancel is felt within a second or so.
CHUNK = 32
# Most documents the GUI thread merges in one event-loop turn: each chunk arrives as
# one turn's work (the merge of 1,000 documents in one go took about 80 ms).
APPLY_CHUNK = CHUNK
_runs = count(1)


@dataclass
class TaggingResult:
    model: str
    spans: dict[int, list[Span]]   # workspace row -> the model's spans
    provenance: dict


def tagger_config(settings: AppSettings):
    from fastbioner.infer.inference import TaggerConfig

    return TaggerConfig(device=settings.device, precision=settings.precision,
                        threads=settings.threads or None, max_batch_size=settings.batch_size)


def tag_rows(model: str, rows: Sequence[int], docs: Sequence[Document], settings: AppSettings,
             on_event: EventCallback, cancel: CancelToken,
             on_chunk: Callable[[dict[int, list[Span]]], None] | None = None,
             on_loaded: Callable[[dict], None] | None = None,
             on_uncertainty: Callable[[dict[int, dict]], None] | None = None) -> TaggingResult:
    """The job: load ``model`` and tag ``docs`` (rows of the workspace), chunk by chunk.
    ``on_loaded`` gets the model's provenance once it is loaded, ``on_chunk`` each
    chunk's spans (row -> spans) as soon as they are found."""
    def job(reporter) -> TaggingResult:
        reporter.stage("load", message=f"loading {model}")
        # Imported once the stage is reported: the import of torch takes seconds.
        from fastbioner.infer.inference import Tagger
        from fastbioner.io.text import document_sentences

        tagger = Tagger.load(registered(model), tagger_config(settings))
        provenance = dict(tagger.describe())
        provenance.update({k: tagger.manifest.get(k) for k in ("kind", "base_model", "created", "version")
                           if k in tagger.manifest})
        if on_loaded is not None:
            on_loaded(provenance)
        # Progress counts sentences, reported per batch of the model: a long document
        # (one chunk, one call of the tagger) moves the bar and the time left too.
        sentences = [len(document_sentences(d)) for d in docs]
        reporter.stage("tag", total=sum(sentences), message=f"tagging with {model}")
        spans: dict[int, list[Span]] = {}
        done = 0
        for i in range(0, len(docs), CHUNK):
            reporter.check()
            chunk = docs[i:i + CHUNK]
            here = sum(sentences[i:i + CHUNK])
            message = f"{i} of {len(docs)} documents"

            def batch(b: int, n: int, done=done, here=here, message=message) -> None:
                reporter.emit(step=done + here * (b - 1) // max(1, n), message=message)
            found, unsure = tagger.tag_with_uncertainty(chunk, cancel, on_batch=batch)
            found_here = dict(zip(rows[i:i + CHUNK], found))
            if on_uncertainty is not None:  # before the spans: the merge refreshes the views
                on_uncertainty({r: u.to_metadata() for r, u in zip(rows[i:i + CHUNK], unsure)})
            spans.update(found_here)
            if on_chunk is not None:
                on_chunk(found_here)
            done += here
            reporter.emit(step=done, message=f"{min(i + CHUNK, len(docs))} of {len(docs)} documents")
        return TaggingResult(model, spans, provenance)

    return run_job(job, on_event, cancel)


def registered(model: str) -> str:
    """``model``'s registry name, registering a shipped model first when the window
    offered it before the model scan registered it (a first start)."""
    from fastbioner.models.shipped import model_to_tag
    from fastbioner.models.registry import Registry

    from .widgets.model_picker import shipped_default

    registry = Registry()
    if registry.exists(model):
        return model
    found = shipped_default()
    if found is not None and found.name == model:
        return model_to_tag(None, registry)  # its folder, where the registry cannot be written
    return model_to_tag(model, registry)


class _Relay(QObject):
    """Lives in the GUI thread; the job's thread emits on it, so each signal is
    delivered (queued) in the GUI thread."""

    chunk = Signal(object)    # dict row -> spans
    loaded = Signal(object)   # provenance
    unsure = Signal(object)   # dict row -> the document's uncertainty (fastbioner.infer.uncertainty)


@dataclass
class _Run:
    key: int
    model: str
    project: object
    rows: int
    documents: int = 0        # documents merged so far
    entities: int = 0         # entities found so far
    provenance: dict | None = None
    uncertainty: dict = field(default_factory=dict)  # row -> figure, until its chunk is merged


class TaggingController(QObject):
    """Starts tagging jobs (one at a time) and merges what they find as it comes."""

    busyChanged = Signal(bool)
    message = Signal(str)
    waiting = Signal(str)      # what the run waits for before its first results ("" once they come)
    merged = Signal(int, int)  # documents merged so far, documents in the run
    applied = Signal()         # a run has ended and everything it found is merged

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
        run = _Run(next(_runs), model, self.workspace.project, len(rows))
        relay = _Relay(self)
        relay.chunk.connect(lambda spans: self._merge(run, spans))
        relay.loaded.connect(lambda provenance: setattr(run, "provenance", provenance))
        relay.unsure.connect(lambda figures: run.uncertainty.update(figures))
        title = f"Tag {len(rows)} document{'s' if len(rows) != 1 else ''} with {model}"
        self.job = self.jobs.start(title, lambda on_event, cancel: tag_rows(
            model, rows, docs, settings, on_event, cancel, relay.chunk.emit, relay.loaded.emit,
            relay.unsure.emit), kind="tag")
        self.job.failed.connect(lambda msg: self._ended(run, f"Tagging failed: {msg}"))
        self.job.cancelled.connect(lambda: self._ended(run, "Tagging cancelled"))
        self.job.succeeded.connect(lambda _result: self._ended(run, None))
        self.job.finished.connect(lambda: (relay.deleteLater(), self.waiting.emit(""), self.busyChanged.emit(False),
                                           self.applied.emit()))
        # Loading a model takes seconds on a busy machine (torch is imported then).
        self.job.progress.connect(lambda event: self.waiting.emit(
            f"loading the model {model}…" if event.stage == "load" else ""))
        self.busyChanged.emit(True)
        self.waiting.emit(f"loading the model {model}…")  # until its first results come
        return self.job

    def _record_uncertainty(self, run: _Run, rows) -> bool:
        """Each tagged document keeps how unsure the model was of it in its metadata
        (saved with the project), where the documents panel sorts by it. Not an edit:
        no undo step. True when a figure was recorded."""
        from fastbioner.infer.uncertainty import METADATA_KEY

        recorded = False
        for row in rows:
            figure = run.uncertainty.pop(row, None)
            if figure is not None:
                self.workspace.document(row).metadata[METADATA_KEY] = figure
                recorded = True
        return recorded

    def _merge(self, run: _Run, found: dict[int, list[Span]]) -> None:
        """Merge one chunk's results (against the documents as they are now, so an
        edit made while the model ran is kept) as one command that joins the run's
        earlier ones on the undo stack: the run is one undo step. (A curator's edit
        between two chunks ends that step: the rest of the run is a second one, so
        undo never reverts the edit together with the run.)"""
        if self.workspace.project is not run.project:  # another project was opened meanwhile
            return
        if run.provenance is not None and run.model not in self.workspace.project.models:
            self.workspace.record_model(run.model, run.provenance)
        recorded = self._record_uncertainty(run, found)
        replace = self.settings.replace_curated
        changes = [c for row in sorted(found)
                   if (c := tagging_change(self.workspace, row, found[row], run.model, replace)) is not None]
        run.documents += len(found)
        run.entities += sum(len(s) for s in found.values())
        if changes:
            self.stack.push(MergingSpansCommand(self.workspace, changes, run.key,
                                                f"Tag documents with {run.model}", run.rows))
        elif recorded:  # the same suggestions as before: the new figures still show
            self.workspace.documentsChanged.emit(min(found), max(found))
        self.merged.emit(run.documents, run.rows)

    def _ended(self, run: _Run, problem: str | None) -> None:
        if self.workspace.project is not run.project:
            self.message.emit(f"{run.model}: results dropped, the project they were for was closed")
            return
        if run.provenance is not None:
            self.workspace.record_model(run.model, run.provenance)
        done = f"{run.model}: {run.entities} entities in {run.documents} documents"
        if problem is None:
            self.message.emit(done)
        elif run.documents:
            self.message.emit(f"{problem}; kept what was tagged: {done} (one undo step)")
        else:
            self.message.emit(f"{problem}: nothing changed")
