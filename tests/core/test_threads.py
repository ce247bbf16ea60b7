"""The thread rule (fastbioner.base.threads): the count is the cores less the load, at
least one, chosen once per process, shared among the app's jobs, forced by --threads;
the OpenMP wait policy is passive before torch loads. No timing: the machine's cores
and load are stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from fastbioner.base import threads
from tests.conftest import REPO


@pytest.fixture
def machine(monkeypatch):
    """A machine of ``cores`` cores under ``load``: set the fields, then choose."""
    class Machine:
        cores = 4
        load = 0.0

    m = Machine()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(m.cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (m.load, 0.0, 0.0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the suite's conftest sets it
    monkeypatch.setattr(threads, "_process_choice", None)
    monkeypatch.setattr(threads, "_held", {})
    return m


@pytest.mark.parametrize("cores, load, held, want", [
    (4, 0.2, 0, 4), (4, 2.6, 0, 1), (4, 2.4, 0, 2), (2, 5.1, 0, 1), (4, 11.0, 0, 1),  # never below one
    (1, 0.0, 0, 1), (8, 0.0, 3, 5), (8, 4.0, 3, 4),   # held by other jobs vs load: the larger counts
])
def test_the_rule_is_cores_less_what_is_busy(cores, load, held, want):
    assert threads.free_threads(cores, load, held) == want


def test_the_choice_is_made_once_per_process_and_says_why(machine):
    machine.cores, machine.load = 2, 5.1
    first = threads.choose()
    assert first.threads == 1 and str(first) == "1 thread (2 cores, load 5.1)"
    machine.load = 0.0  # the load drops: the process keeps its choice
    assert threads.choose() is first
    assert threads.default_threads() == 2  # a corpus run reads the rule as it starts


def test_a_forced_count_or_the_environment_overrides_the_rule(machine, monkeypatch):
    machine.cores, machine.load = 2, 5.0
    assert threads.choose(3).threads == 3 and str(threads.choose(3)) == "3 threads (as asked)"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")   # the user's, or torchrun's one per process
    assert str(threads.choose()) == "2 threads (OMP_NUM_THREADS=2)"
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    assert str(threads.choose()) == "1 thread (2 cores, load 5.0)"


def test_a_job_started_while_another_runs_takes_what_is_left(machine):
    machine.cores, machine.load = 4, 0.0
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
    assert seen["second"].threads == 1 and str(seen["second"]) == "1 thread (4 cores, load 0.0, 4 held by other jobs)"
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
    machine.cores, machine.load = 2, 1.8
    try:
        tagger = Tagger.load(tiny_bert, TaggerConfig(device="cpu"))
        assert torch.get_num_threads() == 1 and tagger.describe()["thread_choice"] == "1 thread (2 cores, load 1.8)"
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

