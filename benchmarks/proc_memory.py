"""Memory of a process and everything it started (Ray's GCS, raylet and workers when
``ray.init`` runs in this process), read from ``/proc`` (Linux), for the benchmarks.

Each process's proportional set size (``Pss`` in ``/proc/PID/smaps_rollup``: shared
pages, torch's libraries and a model's weights mapped by several workers, split among
the processes that share them) is summed, so the total is the memory the process tree
costs the machine, not the sum of resident sizes that counts shared pages once per
process. ``VmRSS`` stands in where ``smaps_rollup`` cannot be read.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ")"
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _memory_kb(pid: int) -> int:
    for name, key in (("smaps_rollup", "Pss:"), ("status", "VmRSS:")):
        try:
            for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
                if line.startswith(key):
                    return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return 0


def tree_memory_mb(root: int | None = None) -> tuple[float, int]:
    """(megabytes, processes) of ``root`` (default: this process) and its descendants."""
    root = os.getpid() if root is None else root
    kids, seen, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(kids.get(pid, ()))
    return sum(_memory_kb(p) for p in seen) / 1024, len(seen)


class TreeSampler:
    """The process tree's memory every ``every`` seconds in a background thread; ``peak_mb``."""

    def __init__(self, every: float = 1.0):
        self.every, self.peak_mb, self.peak_processes, self.samples = every, 0.0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        mb, n = tree_memory_mb()
        self.samples += 1
        if mb > self.peak_mb:
            self.peak_mb, self.peak_processes = mb, n

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> "TreeSampler":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
