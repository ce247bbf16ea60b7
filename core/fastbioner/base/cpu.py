"""What this machine's CPU is: its model name and its feature flags, read once here.

Speed figures say where they were measured (``precision.hardware_name``, the research
scripts' result records), and the precision check asks whether the CPU has bf16 before
torch is imported (a dialog on the GUI thread). Linux describes the CPU in
``/proc/cpuinfo``; elsewhere the model name comes from :mod:`platform` and the flags
are not known (None), so the callers fall back to asking torch. Imports nothing heavy.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuDescription:
    model: str                        # e.g. "AMD EPYC 9554 64-Core Processor"
    flags: frozenset[str] | None      # None: this system does not say
    cores: int | None                 # logical CPUs (os.cpu_count())

    def has_any(self, *flags: str) -> bool | None:
        """Whether the CPU has one of ``flags`` (None when the flags are not known)."""
        return None if self.flags is None else any(f in self.flags for f in flags)


def describe_cpu(cpuinfo: str | Path = CPUINFO) -> CpuDescription:
    """This CPU, from ``cpuinfo`` (the first processor's entry) where it can be read,
    else from :mod:`platform`."""
    model, flags = "", None
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and flags is None:
            flags = frozenset(value.split())
        if model and flags is not None:
            break
    return CpuDescription(model or platform.processor() or platform.machine(), flags, os.cpu_count())


def cpu_model_name() -> str:
    """The CPU's model name, as speed figures and result records name it."""
    return describe_cpu().model
