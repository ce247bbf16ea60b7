"""Running core jobs in the background: the only module of the app that touches threads.

A job is any callable ``fn(on_event, cancel) -> result`` (the core's job protocol with
its arguments already bound). :class:`JobManager.start` moves a :class:`_Worker` onto
its own ``QThread``; the worker passes each :class:`~fastbioner.base.jobs.ProgressEvent` out
through a signal, so the GUI thread only ever receives events and never waits. Cancel
only sets the core's :class:`~fastbioner.base.jobs.CancelToken`; the job stops at its next
check and cleans up after itself.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QElapsedTimer, QObject, Qt, QThread, Signal, Slot

from fastbioner.base.errors import FastBioNERError
from fastbioner.base.jobs import CancelToken, Cancelled, EventCallback, JobState, ProgressEvent
from fastbioner.base.threads import job_share

JobFunction = Callable[[EventCallback, CancelToken], Any]
# Jobs of this kind are housekeeping (listing models): the jobs panel does not show them.
QUIET_KIND = "quiet"
# Jobs that train (live curves in the jobs panel): distillation and teacher runs, and
# Model > Improve the model from my reviews (fine-tuning, which keeps no checkpoints).
CURVE_KINDS = ("train", "fine-tune")


class _Worker(QObject):
    """Lives in the job's thread; everything it tells the GUI goes through signals."""

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    done = Signal()

    def __init__(self, fn: JobFunction, token: CancelToken):
        super().__init__()
        self._fn = fn
        self._token = token

    @Slot()
    def run(self) -> None:
        try:
            # One of the app's jobs: torch threads it chooses count the other jobs' threads
            # (the machine is shared by the same rule as a command's, fastbioner.base.threads).
            with job_share():
                result = self._fn(self.progress.emit, self._token)
        except Cancelled:
            self.cancelled.emit()
        except FastBioNERError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # a bug, not a user error: keep the trace for the log
            traceback.print_exc(file=sys.stderr)
            self.failed.emit(f"{type(exc).__name__}: {exc}")
        else:  # a job that returned finished its work, even if cancel came too late
            self.succeeded.emit(result)
        finally:
            self.done.emit()


class Job(QObject):
    """The GUI thread's handle on one background job: its events so far, its state,
    and signals re-emitted in the GUI thread."""

    progress = Signal(object)      # ProgressEvent
    succeeded = Signal(object)     # the job's result
    failed = Signal(str)           # one readable line
    cancelled = Signal()
    finished = Signal()            # after any of the three above

    def __init__(self, title: str, kind: str, parent: QObject | None = None, *, config: Any = None,
                 model_name: str = ""):
        super().__init__(parent)
        self.title = title
        self.kind = kind
        self.config = config            # the typed config a training job runs with
        self.model_name = model_name    # the model a training job registers
        self.token = CancelToken()
        self.events: list[ProgressEvent] = []
        self.state = JobState.RUNNING
        self.error = ""
        self.result: Any = None
        self._thread: QThread | None = None
        self.ended = False  # the thread has ended and every signal was delivered

    @property
    def running(self) -> bool:
        return self.state is JobState.RUNNING

    @property
    def last_event(self) -> ProgressEvent | None:
        return self.events[-1] if self.events else None

    def cancel(self) -> None:
        self.token.cancel()

    def wait(self, timeout_ms: int = 30000) -> bool:
        """Block until the job's thread ends (keeps delivering queued signals, so the
        job's final signals arrive before this returns). True if it ended in time."""
        clock = QElapsedTimer()
        clock.start()
        while not self.ended:
            if clock.elapsed() > timeout_ms:
                return False
            if self._thread is not None:
                self._thread.wait(QDeadlineTimer(20))
            QCoreApplication.processEvents()
        return True

    # Slots called in the GUI thread (queued from the worker).
    @Slot(object)
    def _on_progress(self, event: ProgressEvent) -> None:
        self.events.append(event)
        self.progress.emit(event)

    @Slot(object)
    def _on_succeeded(self, result: Any) -> None:
        self.result = result
        self.state = JobState.DONE
        self.succeeded.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.error = message
        self.state = JobState.FAILED
        self.failed.emit(message)

    @Slot()
    def _on_cancelled(self) -> None:
        self.state = JobState.CANCELLED
        self.cancelled.emit()

    @Slot()
    def _on_done(self) -> None:
        self._worker = None  # the thread has ended: the worker may go
        self.ended = True
        self.finished.emit()


class JobManager(QObject):
    """Starts jobs and keeps them (and their threads) alive until they end."""

    jobStarted = Signal(object)   # Job
    jobFinished = Signal(object)  # Job

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._jobs: list[Job] = []

    def start(self, title: str, fn: JobFunction, kind: str = "job", *, config: Any = None,
              model_name: str = "") -> Job:
        job = Job(title, kind, self, config=config, model_name=model_name)
        thread = QThread(self)
        thread.setObjectName(f"job: {title}")
        worker = _Worker(fn, job.token)
        worker.moveToThread(thread)
        job._thread = thread
        job._worker = worker  # keep the worker alive as long as its job
        worker.progress.connect(job._on_progress)
        worker.succeeded.connect(job._on_succeeded)
        worker.failed.connect(job._on_failed)
        worker.cancelled.connect(job._on_cancelled)
        # quit() directly from the worker's thread: a queued call would wait for the GUI
        # thread, which may itself be waiting for this thread to end.
        worker.done.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        # "finished" only once the thread has ended (after the result signals, which
        # were queued before it).
        thread.finished.connect(job._on_done)
        thread.started.connect(worker.run)
        job.finished.connect(lambda: self.jobFinished.emit(job))
        self._jobs.append(job)
        self.jobStarted.emit(job)
        thread.start()
        return job

    def jobs(self) -> list[Job]:
        return list(self._jobs)

    def running(self) -> list[Job]:
        return [j for j in self._jobs if j.running]

    def cancel_all(self, timeout_ms: int = 60000) -> bool:
        """Cancel every running job and wait for each to clean up."""
        jobs = self.running()
        for job in jobs:
            job.cancel()
        return all(job.wait(timeout_ms) for job in jobs)
