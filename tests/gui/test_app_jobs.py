"""Background jobs: results, errors and cancel come back as signals in the GUI thread,
and the GUI thread keeps processing events while a job computes."""

from __future__ import annotations

import threading
import time

import pytest

from fastbioner.base.errors import InputError
from fastbioner.base.jobs import JobState, run_job
from fastbioner_gui.jobs import JobManager


def _counting_job(steps: int, pause: float = 0.0):
    def fn(on_event, cancel):
        def body(reporter):
            reporter.stage("count", total=steps)
            for i in range(steps):
                reporter.check()
                time.sleep(pause)
                reporter.emit(step=i + 1, losses={"loss": 1.0 / (i + 1)})
            return threading.current_thread().name
        return run_job(body, on_event, cancel)
    return fn


def test_a_job_runs_off_the_gui_thread_and_reports_in_order(qtbot):
    manager = JobManager()
    job = manager.start("count", _counting_job(20))
    with qtbot.waitSignal(job.finished, timeout=10000):
        pass
    assert job.state is JobState.DONE
    assert job.result != threading.current_thread().name
    seqs = [e.seq for e in job.events]
    assert seqs == sorted(seqs) and job.events[-1].state is JobState.DONE
    assert [e.step for e in job.events if e.losses][-1] == 20


def test_a_user_error_fails_the_job_with_one_line(qtbot):
    def fn(on_event, cancel):
        raise InputError("unknown tag 'X-Foo'", "data/train.tsv", 12)
    job = JobManager().start("bad", fn)
    with qtbot.waitSignal(job.failed, timeout=10000) as blocker:
        pass
    assert blocker.args == ["data/train.tsv:12: unknown tag 'X-Foo'"]
    assert job.wait(30000) and job.state is JobState.FAILED


def test_cancel_stops_a_job_at_its_next_check(qtbot):
    job = JobManager().start("long", _counting_job(10_000, pause=0.005))
    qtbot.waitUntil(lambda: len(job.events) > 3, timeout=10000)
    with qtbot.waitSignal(job.cancelled, timeout=10000):
        job.cancel()
    assert job.wait(30000)
    assert job.state is JobState.CANCELLED
    assert job.events[-1].state is JobState.CANCELLED and job.events[-1].step < 10_000


def test_the_gui_thread_stays_responsive_while_a_job_computes(qtbot):
    """A CPU-bound job runs off the GUI thread: between bursts of computing it asks the
    GUI thread to answer (a signal to an object living there, so a queued call) and
    waits for the answer, five times. Each answer comes only if the GUI event loop runs
    while the job is still running. Counted round trips, no timer (how late the GUI
    answers is measured by benchmarks/bench_gui_responsiveness.py)."""
    from PySide6.QtCore import QObject, Signal

    torch = pytest.importorskip("torch")
    gui_thread = threading.get_ident()
    answers: list[tuple[int, JobState]] = []
    answered = threading.Event()
    holder: dict = {}

    class Echo(QObject):  # lives in the GUI thread: a signal from the worker is queued
        ping = Signal()

    echo = Echo()

    def answer():
        answers.append((threading.get_ident(), holder["job"].state))
        answered.set()

    echo.ping.connect(answer)
    ran_in: list[int] = []

    def busy(on_event, cancel):
        ran_in.append(threading.get_ident())
        a = torch.randn(256, 256)
        for _ in range(5):
            for _ in range(20):  # torch ops and Python bytecode both
                cancel.check()
                a = torch.tanh(a @ a.T / 256)
                sum(i * i for i in range(2000))
            answered.clear()
            echo.ping.emit()
            # A failsafe, not a measurement: a blocked GUI thread never answers.
            assert answered.wait(60), "the GUI thread did not answer while the job computed"
        return len(answers)

    job = JobManager().start("busy", busy)
    holder["job"] = job
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE and job.result == 5
    assert ran_in and ran_in[0] != gui_thread
    assert answers == [(gui_thread, JobState.RUNNING)] * 5
