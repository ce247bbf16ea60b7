"""How many CPU threads torch takes, and how they wait: one rule for every command,
the tagger and the app's jobs.

The rule: the cores this process may use (its CPU affinity) less what other work keeps
busy on them, at least one. Torch's default is every core; on a 2-core machine that
other jobs kept busy (load 5 to 7) the fast model took 53 s with two threads against
11 s with one, its threads spinning while they waited for each other (issue 69). So
that a thread with nothing to do sleeps instead of spinning, :func:`wait_passively`
sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported (OpenMP reads it once, when
it loads); the torch wheels here use GNU OpenMP (``libgomp``), which reads it, and so
does Intel's (``libiomp5``).

What is busy is measured, not the 1-minute load average: the load average still
counts a process that ended seconds ago (a benchmark's previous tagger, a finished
job), so an idle machine read as busy and got one thread. On Linux the busy time of
the usable cores (``/proc/stat``) less this process's own CPU time, over the window
from this module's import (the command's start) to the choice, gives the cores other
processes kept busy meanwhile; the command's own start-up (imports, about a second)
is that window, so measuring costs nothing there. A window under
:data:`MIN_WINDOW_S` (or one older than :data:`MAX_WINDOW_S`, in a long-running app)
is topped up by a short wait. Where ``/proc/stat`` cannot be read the load average is
the measure, as before.

The choice is made once per process (:func:`choose`) and said in the speed
line (``1 thread (2 cores, 1.9 busy elsewhere)``). The app runs its jobs as threads of
one process, where torch's thread count is shared: a job started while others run
(:func:`job_share`) takes what their threads leave. ``--threads N`` (a forced count)
overrides the rule everywhere, and so does ``OMP_NUM_THREADS`` in the environment
(torchrun sets it to 1 for each of its processes). Imports nothing heavy, and never
torch: callers pass the count to ``torch.set_num_threads``.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, MutableMapping

# What OpenMP reads to let idle threads sleep: GNU's libgomp and Intel's libiomp5 both.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")

# The shortest window the busy cores are measured over (at 100 ticks a second, 25 ticks
# a core: fine enough to tell a busy core from an idle one), and the oldest start a
# window may have: an app open for hours measures what is busy now, not its average.
MIN_WINDOW_S = 0.25
MAX_WINDOW_S = 10.0
PROC_STAT = "/proc/stat"


@dataclass(frozen=True)
class ThreadChoice:
    """A thread count and why: the cores and load it was read from and the threads other
    jobs of this process held then, or what gave it (``given``) when the rule did not."""

    threads: int
    cores: int | None = None
    load: float | None = None      # the 1-minute load average, where busy could not be measured
    held: int = 0
    given: str | None = None       # "as asked" (--threads N), "OMP_NUM_THREADS=1"
    busy: float | None = None      # cores other processes kept busy over the measuring window

    def __str__(self) -> str:
        count = f"{self.threads} thread{'' if self.threads == 1 else 's'}"
        if self.given is not None:
            return f"{count} ({self.given})"
        what = f"{self.busy:.1f} busy elsewhere" if self.busy is not None else f"load {self.load or 0.0:.1f}"
        why = [f"{self.cores} core{'' if self.cores == 1 else 's'}", what]
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


@dataclass(frozen=True)
class CpuSample:
    """What the usable cores had done by ``wall``: their busy seconds (every process's)
    and this process's own CPU seconds."""

    wall: float
    busy: float
    own: float


def cpu_sample(cores: frozenset[int] | None = None) -> CpuSample | None:
    """The usable cores' busy time now, from ``/proc/stat`` (None where it cannot be
    read: not Linux). Busy is user, nice, system, irq, softirq and steal time (stolen
    time is a core this process cannot have either)."""
    try:
        with open(PROC_STAT, encoding="ascii") as fh:
            text = fh.read()
        usable = cores if cores is not None else frozenset(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return None
    wall, own = time.monotonic(), sum(os.times()[:2])
    ticks = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit() or int(name[3:]) not in usable:
            continue
        fields = [int(x) for x in rest.split()]
        if len(fields) >= 8:
            ticks += fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    if not ticks:
        return None
    return CpuSample(wall, ticks / _TICKS_PER_SECOND, own)


def busy_elsewhere(start: CpuSample, end: CpuSample) -> float:
    """Cores other processes kept busy between two samples: the usable cores' busy time
    less this process's own, over the wall time between them."""
    seconds = end.wall - start.wall
    if seconds <= 0:
        return 0.0
    return max(0.0, (end.busy - start.busy) - (end.own - start.own)) / seconds


def load_average() -> float:
    """Runnable processes over the last minute (0 where the system does not say)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # pragma: no cover - Windows
        return 0.0


def free_threads(cores: int, busy: float, held: int = 0, *, measured: bool = False) -> int:
    """The rule: ``cores`` less what is busy, rounded, at least 1 and at most ``cores``.
    Measured busy time (``measured``) leaves out this process, so the threads its other
    jobs hold are added to it. The load average counts this process too, a job started
    seconds ago excepted (it is not in the 1-minute load yet; one that has run a while
    is), so there the larger of the two counts, not their sum."""
    taken = busy + held if measured else max(busy, held)
    return max(1, min(cores, math.floor(cores - taken + 0.5)))


def _window_start(now: float) -> CpuSample | None:
    """The sample a measuring window starts from: the last one taken (this module's
    import, or the previous choice), unless it is too old; then a fresh one."""
    start = _last_sample
    if start is None or now - start.wall > MAX_WINDOW_S:
        start = cpu_sample()
    return start


def measure(held: int = 0) -> ThreadChoice:
    """The rule's choice now (uncached): from the busy cores measured over the window
    since the last sample (topped up to :data:`MIN_WINDOW_S`), or from the load average
    where they cannot be measured."""
    global _last_sample
    cores = usable_cores()
    start = _window_start(time.monotonic())
    if start is not None:
        wait = MIN_WINDOW_S - (time.monotonic() - start.wall)
        if wait > 0:
            time.sleep(wait)
        end = cpu_sample()
        if end is not None:
            _last_sample = end
            busy = round(busy_elsewhere(start, end), 2)
            return ThreadChoice(free_threads(cores, busy, held, measured=True), cores, held=held, busy=busy)
    load = load_average()
    return ThreadChoice(free_threads(cores, load, held), cores, load, held)


try:
    _TICKS_PER_SECOND = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    _TICKS_PER_SECOND = 100.0

# The window's start: taken as this module is imported (a command's first lines), so a
# command's own start-up is the window and choosing waits for nothing.
_last_sample: CpuSample | None = cpu_sample()

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
