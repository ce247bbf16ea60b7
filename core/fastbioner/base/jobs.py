"""The job protocol: how a long operation reports progress and learns it was cancelled.

A job is a plain function ``fn(config, ..., *, on_event, cancel) -> Result``. It
reports through a :class:`ProgressReporter` (which keeps events monotonic and
estimates the time left) and calls ``reporter.check()`` at least once per step,
which raises :class:`Cancelled` when the token is set. :func:`run_job` wraps a
job so that its last event always says how it ended. The CLI passes a progress
bar's update as ``on_event``, the app passes a Qt signal's ``emit``; neither
changes the job.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Optional, TypeVar


class JobState(str, Enum):
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


class Cancelled(Exception):
    """Raised inside a job when its cancel token was set."""


class CancelToken:
    """Thread-safe flag; ``cancel()`` from any thread, ``check()`` inside the job."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once when cancelled (a job waiting out a
        back-off must not keep a cancel waiting). True if cancelled."""
        return self._event.wait(max(0.0, seconds))


@dataclass(frozen=True)
class ProgressEvent:
    stage: str
    step: int = 0
    total: int = 0
    epoch: int = 0
    losses: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    eta_seconds: float | None = None
    elapsed_seconds: float = 0.0
    state: JobState = JobState.RUNNING
    # A global counter over the whole job: strictly increasing, across stages too.
    seq: int = 0
    # Set on the event the training loop sends after each optimisation step (what a
    # run-time estimate times), whatever the stage is called.
    optimisation_step: bool = False

    @property
    def finished(self) -> bool:
        return self.state is not JobState.RUNNING

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total) if self.total else 0.0


EventCallback = Callable[[ProgressEvent], None]


def _ignore(_: ProgressEvent) -> None:
    pass


class ProgressReporter:
    """Builds events for one job: keeps ``seq`` and, within a stage, ``step``
    monotonic, and estimates the time left from the stage's average step time."""

    def __init__(self, on_event: Optional[EventCallback] = None, cancel: Optional[CancelToken] = None):
        self.on_event = on_event or _ignore
        self.cancel = cancel or CancelToken()
        self._t0 = time.monotonic()
        self._seq = 0
        self._stage = ""
        self._stage_t0 = self._t0
        self._stage_step0 = 0
        self._last: ProgressEvent | None = None

    @property
    def last(self) -> ProgressEvent | None:
        return self._last

    def check(self) -> None:
        self.cancel.check()

    def stage(self, name: str, total: int = 0, message: str = "", start_step: int = 0) -> None:
        """Start a stage (``train``, ``evaluate``, ``tag`` ...). ``start_step`` lets a
        resumed job continue its count without restarting the time estimate at 0."""
        self._stage = name
        self._stage_t0 = time.monotonic()
        self._stage_step0 = start_step
        self.emit(step=start_step, total=total, message=message or name)

    def emit(self, step: int | None = None, total: int | None = None, **fields: Any) -> ProgressEvent:
        # The previous event when it belongs to this stage: its counts carry on.
        last = self._last if self._last is not None and self._last.stage == self._stage else None
        if step is None:
            step = last.step if last is not None else 0
        if total is None:
            total = last.total if last is not None else 0
        if last is not None and step < last.step:
            step = last.step
        now = time.monotonic()
        eta = None
        done_here = step - self._stage_step0
        if total and done_here > 0:
            eta = (now - self._stage_t0) / done_here * max(0, total - step)
        self._seq += 1
        carry: dict[str, Any] = {}
        if last is not None:
            carry = {"epoch": last.epoch}
        carry.update(fields)
        event = ProgressEvent(stage=self._stage, step=step, total=total, eta_seconds=eta,
                              elapsed_seconds=now - self._t0, seq=self._seq, **carry)
        self._last = event
        self.on_event(event)
        return event

    def finish(self, state: JobState, message: str = "", **fields: Any) -> ProgressEvent:
        last = self._last
        base = last if last is not None else ProgressEvent(stage=self._stage or "job")
        self._seq += 1
        event = replace(base, state=state, message=message or state.value, eta_seconds=0.0,
                        elapsed_seconds=time.monotonic() - self._t0, seq=self._seq, **fields)
        self._last = event
        self.on_event(event)
        return event


T = TypeVar("T")


def run_job(fn: Callable[[ProgressReporter], T], on_event: Optional[EventCallback] = None,
            cancel: Optional[CancelToken] = None) -> T:
    """Run ``fn(reporter)`` and always end with a final event (done, cancelled or
    failed). Re-raises :class:`Cancelled` and errors after reporting them, so the
    caller decides how to show them."""
    reporter = ProgressReporter(on_event, cancel)
    try:
        result = fn(reporter)
    except Cancelled:
        reporter.finish(JobState.CANCELLED, "cancelled")
        raise
    except BaseException as exc:  # KeyboardInterrupt too: the last event must say how it ended
        reporter.finish(JobState.FAILED, f"failed: {exc}")
        raise
    reporter.finish(JobState.DONE, "done")
    return result


def sub_progress(reporter: ProgressReporter, stage: str) -> ProgressReporter:
    """A reporter for a nested job that shares the parent's events and cancel token
    but whose end does not end the parent."""
    child = ProgressReporter(reporter.on_event, reporter.cancel)
    child._seq = reporter._seq  # keep seq global and monotonic
    child._t0 = reporter._t0

    parent_emit = child.emit

    def emit(step: int | None = None, total: int | None = None, **fields: Any) -> ProgressEvent:
        ev = parent_emit(step, total, **fields)
        reporter._seq = child._seq
        reporter._last = ev
        return ev

    child.emit = emit  # type: ignore[method-assign]
    child._stage = stage
    return child


def relay(child: ProgressReporter, prefix: str = "") -> EventCallback:
    """An ``on_event`` for a nested job that runs its own :func:`run_job` (a teacher's
    fine-tuning inside a chained job, say): its events go on through ``child`` (a
    :func:`sub_progress` reporter), so ``seq`` stays global and monotonic across the
    chain. Its stages are named ``prefix + stage`` (``"teacher: train"``), each
    stage's time-left estimate starts with it, and its final event is dropped: the
    nested job's end is not the chain's (a cancel still ends the chain, by the
    :class:`Cancelled` the nested job raises)."""

    def on_event(event: ProgressEvent) -> None:
        if event.finished:
            return
        stage = prefix + event.stage
        last = child.last
        if last is None or last.stage != stage:
            child._stage = stage
            child._stage_t0 = time.monotonic()
            child._stage_step0 = event.step
        child.emit(step=event.step, total=event.total, epoch=event.epoch, losses=dict(event.losses),
                   metrics=dict(event.metrics), message=event.message,
                   optimisation_step=event.optimisation_step)

    return on_event
