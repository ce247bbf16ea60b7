"""How many CPU threads torch takes, and how they wait: one rule for every command,
the tagger and the app's jobs.

The rule: the cores this process may use (its CPU affinity) less the 1-minute load
average already on them, at least one. Torch's default is every core; on a 2-core
machine that other jobs kept busy (load 5 to 7) the fast model took 53 s with two
threads against 11 s with one, its threads spinning while they waited for each other
(issue 69). So that a thread with nothing to do sleeps instead of spinning,
:func:`wait_passively` sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported
(OpenMP reads it once, when it loads); the torch wheels here use GNU OpenMP
(``libgomp``), which reads it, and so does Intel's (``libiomp5``).

The choice is made once per process (:func:`choose`) and said in the speed
line (``1 thread (2 cores, load 5.1)``). The app runs its jobs as threads of one
process, where torch's thread count is shared: a job started while others run
(:func:`job_share`) takes what their threads leave. ``--threads N`` (a forced count)
overrides the rule everywhere, and so does ``OMP_NUM_THREADS`` in the environment
(torchrun sets it to 1 for each of its processes). Imports nothing heavy, and never torch: callers pass
the count to ``torch.set_num_threads``.
"""

from __future__ import annotations

import math
import os
import sys
import itertools
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, MutableMapping

# What OpenMP reads to let idle threads sleep: GNU's libgomp and Intel's libiomp5 both.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")


@dataclass(frozen=True)
class ThreadChoice:
    """A thread count and why: the cores and load it was read from and the threads other
    jobs of this process held then, or what gave it (``given``) when the rule did not."""

    threads: int
    cores: int | None = None
    load: float | None = None
    held: int = 0
    given: str | None = None       # "as asked" (--threads N), "OMP_NUM_THREADS=1"

    def __str__(self) -> str:
        count = f"{self.threads} thread{'' if self.threads == 1 else 's'}"
        if self.given is not None:
            return f"{count} ({self.given})"
        why = [f"{self.cores} core{'' if self.cores == 1 else 's'}", f"load {self.load or 0.0:.1f}"]
        if self.held:
            why.append(f"{self.held} held by other jobs")
        return f"{count} ({', '.join(why)})"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's or
    ``taskset``'s limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def load_average() -> float:
    """Runnable processes over the last minute (0 where the system does not say)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # pragma: no cover - Windows
        return 0.0


def free_threads(cores: int, load: float, held: int = 0) -> int:
    """The rule: ``cores`` less what is busy, rounded, at least 1 and at most ``cores``.
    What is busy is the load, or the threads this process's other jobs hold where
    that is more (a job started seconds ago is not in the 1-minute load yet; one that
    has run a while is, so the two are not added)."""
    return max(1, min(cores, math.floor(cores - max(load, held) + 0.5)))


def measure(held: int = 0) -> ThreadChoice:
    """The rule's choice now (uncached)."""
    cores, load = usable_cores(), load_average()
    return ThreadChoice(free_threads(cores, load, held), cores, load, held)


_lock = threading.Lock()
_process_choice: ThreadChoice | None = None
_held: dict[int, int] = {}        # app job -> the threads it took
_job_keys = itertools.count(1)
_local = threading.local()        # .job: the job key of this thread, if any


def default_threads() -> int:
    """The rule's thread count now, as a number (a corpus run's, read as it starts)."""
    return measure().threads


def choose(forced: int | None = None) -> ThreadChoice:
    """The threads to give torch: ``forced`` when given (``--threads N``), else
    ``OMP_NUM_THREADS`` where the environment sets it (the user's, or torchrun's one
    per process), else the rule's choice, made once per process; inside an app job
    (:func:`job_share`), made for the job, less what the other running jobs hold."""
    global _process_choice
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    job = getattr(_local, "job", None)
    with _lock:
        if forced:
            choice = ThreadChoice(int(forced), given="as asked")
        elif env.isdigit() and int(env) > 0:
            choice = ThreadChoice(int(env), given=f"OMP_NUM_THREADS={env}")
        elif job is not None:
            choice = measure(held=sum(n for key, n in _held.items() if key != job))
        else:
            if _process_choice is None:
                _process_choice = measure()
            choice = _process_choice
        if job is not None:  # what this job takes, forced or not, the next job counts
            _held[job] = choice.threads
        return choice


@contextmanager
def job_share() -> Iterator[None]:
    """Run the body as one of this process's jobs: a thread choice made inside it
    counts the threads the other jobs hold, and what it takes is held until it ends.
    (Torch's thread count is one for the whole process, so the newest job's choice
    also applies to the others from their next operation: two jobs on two cores each
    run one thread.)"""
    key = next(_job_keys)
    with _lock:
        _held[key] = 0
    previous, _local.job = getattr(_local, "job", None), key
    try:
        yield
    finally:
        _local.job = previous
        with _lock:
            _held.pop(key, None)


def wait_passively(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set the OpenMP wait policy to passive in ``environ`` (this process's environment)
    unless the user set one. Effective only before torch is first imported; returns
    whether it was in time (torch not loaded yet)."""
    env = os.environ if environ is None else environ
    name, value = WAIT_POLICY
    env.setdefault(name, value)
    return "torch" not in sys.modules
