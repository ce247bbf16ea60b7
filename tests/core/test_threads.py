"""The thread rule (fastbioner.base.threads): the count is the cores less what other
processes keep busy, at least one, chosen once per process, shared among the app's
jobs, forced by --threads; the OpenMP wait policy is passive before torch loads. No
timing: the machine's cores, its busy time, its clock and load are stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from fastbioner.base import threads
from tests.conftest import REPO


class FakeClock:
    """time.monotonic and time.sleep for the rule: sleeping moves the clock on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def machine(monkeypatch):
    """A machine of ``cores`` cores where other processes keep ``busy`` cores busy and
    this one uses ``own`` (its CPU time is left out of the measure), its 1-minute load
    average ``load``: set the fields, then choose. ``proc_stat = False``: a system
    without /proc/stat (the load average is the measure)."""
    class Machine:
        cores = 4
        busy = 0.0
        own = 0.5
        load = 0.0
        proc_stat = True

    m = Machine()
    clock = FakeClock()
    totals = {"wall": clock.now, "busy": 0.0, "own": 0.0}

    def sample(cores=None):
        if not m.proc_stat:
            return None
        elapsed = clock.now - totals["wall"]
        totals.update(wall=clock.now, busy=totals["busy"] + (m.busy + m.own) * elapsed,
                      own=totals["own"] + m.own * elapsed)
        return threads.CpuSample(clock.now, totals["busy"], totals["own"])

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(m.cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (m.load, 0.0, 0.0))
    monkeypatch.setattr(threads, "time", clock)
    monkeypatch.setattr(threads, "cpu_sample", sample)
    monkeypatch.setattr(threads, "_last_sample", None)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the suite's conftest sets it
    monkeypatch.setattr(threads, "_process_choice", None)
    monkeypatch.setattr(threads, "_held", {})
    return m


@pytest.mark.parametrize("cores, load, held, want", [
    (4, 0.2, 0, 4), (4, 2.6, 0, 1), (4, 2.4, 0, 2), (2, 5.1, 0, 1), (4, 11.0, 0, 1),  # never below one
    (1, 0.0, 0, 1), (8, 0.0, 3, 5), (8, 4.0, 3, 4),   # held by other jobs vs load: the larger counts
])
def test_the_rule_is_cores_less_the_load_where_busy_cannot_be_measured(cores, load, held, want):
    assert threads.free_threads(cores, load, held) == want


@pytest.mark.parametrize("cores, busy, held, want", [
    (2, 0.0, 0, 2), (2, 0.4, 0, 2), (2, 0.6, 0, 1), (2, 2.0, 0, 1), (4, 1.0, 0, 3),
    (8, 1.0, 3, 4),   # measured busy leaves this process out: its other jobs' threads are added
])
def test_the_rule_is_cores_less_what_other_processes_keep_busy(cores, busy, held, want):
    assert threads.free_threads(cores, busy, held, measured=True) == want


def test_the_choice_is_made_once_per_process_and_says_why(machine):
    machine.cores, machine.busy = 2, 1.9
    first = threads.choose()
    assert first.threads == 1 and str(first) == "1 thread (2 cores, 1.9 busy elsewhere)"
    machine.busy = 0.0  # the other work ends: the process keeps its choice
    assert threads.choose() is first
    assert threads.default_threads() == 2  # a corpus run reads the rule as it starts


def test_a_process_that_ended_no_longer_counts_though_the_load_average_still_holds_it(machine):
    # A benchmark's previous tagger ended a second ago: the 1-minute load average still
    # says 1.9, the cores are idle. The rule gives both cores (the load average gave one).
    machine.cores, machine.busy, machine.load = 2, 0.0, 1.9
    assert str(threads.measure()) == "2 threads (2 cores, 0.0 busy elsewhere)"
    machine.proc_stat = False  # no /proc/stat (not Linux): the load average, as before
    assert str(threads.measure()) == "1 thread (2 cores, load 1.9)"


def test_this_process_own_work_is_not_counted_as_busy(machine):
    machine.cores, machine.busy, machine.own = 2, 0.0, 1.0   # its own start-up keeps a core busy
    assert threads.measure().threads == 2
    machine.busy = 1.0                                      # and another process a second one
    assert threads.measure().threads == 1


def test_busy_time_is_read_for_the_usable_cores_only(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    stat.write_text("cpu  900 0 90 900 9 0 0 0 0 0\n"
                    "cpu0 100 10 20 500 7 1 2 3 0 0\n"
                    "cpu1 200 0 40 300 2 0 0 0 0 0\n"
                    "cpu2 600 0 30 100 0 0 0 0 0 0\n"
                    "intr 5 0 0\n", encoding="ascii")
    monkeypatch.setattr(threads, "PROC_STAT", str(stat))
    monkeypatch.setattr(threads, "_TICKS_PER_SECOND", 100.0)
    sample = threads.cpu_sample(frozenset({0, 1}))
    assert sample is not None and sample.busy == pytest.approx((136 + 240) / 100)
    monkeypatch.setattr(threads, "PROC_STAT", str(tmp_path / "missing"))
    assert threads.cpu_sample(frozenset({0, 1})) is None


def test_busy_elsewhere_is_busy_time_less_this_process_over_the_window():
    start, end = threads.CpuSample(10.0, 100.0, 5.0), threads.CpuSample(12.0, 103.0, 6.0)
    assert threads.busy_elsewhere(start, end) == pytest.approx(1.0)   # (3 - 1) busy seconds in 2 s
    assert threads.busy_elsewhere(end, end) == 0.0
    assert threads.busy_elsewhere(start, threads.CpuSample(12.0, 100.5, 6.0)) == 0.0   # never below 0


def test_a_window_too_short_is_topped_up_and_one_too_old_is_started_afresh(machine):
    first = threads.cpu_sample()
    threads._last_sample = first
    threads.measure()                                  # at once: waits the rest of the window
    assert threads.time.now - first.wall == pytest.approx(threads.MIN_WINDOW_S)
    threads.time.sleep(threads.MAX_WINDOW_S + 60)      # an app open for a long while
    machine.busy = 2.0
    before = threads.time.now
    assert threads.measure().busy == pytest.approx(2.0)
    assert threads.time.now - before == pytest.approx(threads.MIN_WINDOW_S)   # a fresh window


def test_a_forced_count_or_the_environment_overrides_the_rule(machine, monkeypatch):
    machine.cores, machine.busy = 2, 2.0
    assert threads.choose(3).threads == 3 and str(threads.choose(3)) == "3 threads (as asked)"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")   # the user's, or torchrun's one per process
    assert str(threads.choose()) == "2 threads (OMP_NUM_THREADS=2)"
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    assert str(threads.choose()) == "1 thread (2 cores, 2.0 busy elsewhere)"


def test_a_job_started_while_another_runs_takes_what_is_left(machine):
    machine.cores, machine.busy = 4, 0.0
    started, release = threading.Event(), threading.Event()
    seen: dict[str, threads.ThreadChoice] = {}

    def first_job():
        with threads.job_share():
            seen["first"] = threads.choose()
            started.set()
            release.wait(10)

    worker = threading.Thread(target=first_job)
    worker.start()
    assert started.wait(10)
    with threads.job_share():
        seen["second"] = threads.choose()
    release.set()
    worker.join(10)
    assert seen["first"].threads == 4
    assert seen["second"].threads == 1
    assert str(seen["second"]) == "1 thread (4 cores, 0.0 busy elsewhere, 4 held by other jobs)"
    assert threads._held == {}  # both ended: nothing held
    with threads.job_share():  # a forced count is held too
        threads.choose(3)
        assert list(threads._held.values()) == [3]
    with threads.job_share():  # alone again: the whole machine
        assert threads.choose().threads == 4


def test_the_tagger_takes_the_rule_when_no_threads_are_given(machine, tmp_path):
    import torch

    from fastbioner.infer.inference import Tagger, TaggerConfig
    from tests.tiny_models import make_tiny_model

    tiny_bert = make_tiny_model(tmp_path / "tiny")
    before = torch.get_num_threads()
    machine.cores, machine.busy = 2, 1.8
    try:
        tagger = Tagger.load(tiny_bert, TaggerConfig(device="cpu"))
        assert torch.get_num_threads() == 1
        assert tagger.describe()["thread_choice"] == "1 thread (2 cores, 1.8 busy elsewhere)"
        forced = Tagger.load(tiny_bert, TaggerConfig(device="cpu", threads=2))
        assert torch.get_num_threads() == 2 and forced.describe()["thread_choice"] == "2 threads (as asked)"
    finally:
        torch.set_num_threads(before)


def _fresh_python(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    environ.update(env, PYTHONPATH=os.pathsep.join([str(REPO / "core"), str(REPO)]))
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


# The command line's entry sets the policy before any command imports torch, and only
# when the user set none.
ENTRY = """
import os, sys
from fastbioner.cli.main import main
try:
    main(["tag", "--help"])
except SystemExit:
    pass
print("torch" in sys.modules, os.environ.get("OMP_WAIT_POLICY"))
"""


def test_the_command_line_makes_waiting_threads_sleep_before_torch_loads():
    assert _fresh_python(ENTRY).splitlines()[-1] == "False PASSIVE"
    assert _fresh_python(ENTRY, OMP_WAIT_POLICY="ACTIVE").splitlines()[-1] == "False ACTIVE"


def test_the_policy_is_in_time_only_before_torch():
    code = ("import os; from fastbioner.base.threads import wait_passively; a = wait_passively(); import torch; "
            "b = wait_passively(); print(a, b, os.environ['OMP_WAIT_POLICY'])")
    assert _fresh_python(code) == "True False PASSIVE"

