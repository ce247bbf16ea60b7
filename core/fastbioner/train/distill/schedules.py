"""Loss-weight schedules: pure functions of training progress.

A schedule maps ``(step, total_steps)`` to a weight ``w`` in [0, 1]; a method
(:mod:`fastbioner.train.distill.methods`) decides which loss terms take ``w``, which take
``1 - w`` and which a fixed weight. Schedules keep no state, so a resumed run sees
exactly the weights of an uninterrupted one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

Schedule = Callable[[int, int], float]


def dynamic_phi(step: int, total_steps: int, b: float = 0.3) -> float:
    """The FastBioNER weight, exactly as the paper writes it:
    ``phi(s) = max(1 - exp(s/G + b - 1), 0)``.

    Note what the formula implies: ``phi(0) = 1 - e^(b-1)`` (about 0.503 for
    ``b = 0.3``, not 1), phi falls ever faster and is 0 from ``s = (1 - b) G`` on,
    so the last ``b`` of training uses the gold labels alone."""
    if total_steps <= 0:
        raise ValueError("total_steps must be positive")
    return max(1.0 - math.exp(step / total_steps + b - 1.0), 0.0)


def constant(step: int, total_steps: int, alpha: float = 0.5) -> float:
    return alpha


def linear_decay(step: int, total_steps: int, start: float = 1.0, end: float = 0.0) -> float:
    if total_steps <= 0:
        raise ValueError("total_steps must be positive")
    progress = min(max(step / total_steps, 0.0), 1.0)
    return start + (end - start) * progress


def two_stage(step: int, total_steps: int, split: float = 0.5) -> float:
    """1 for the first ``split`` of training, then 0 (TinyBERT's intermediate-layer
    stage followed by its prediction-layer stage)."""
    if total_steps <= 0:
        raise ValueError("total_steps must be positive")
    return 1.0 if step < split * total_steps else 0.0


@dataclass(frozen=True)
class ScheduleConfig:
    """A named schedule and its parameters (only those of ``name`` are used)."""

    name: str = "dynamic"  # dynamic | constant | linear | two-stage
    b: float = 0.3  # dynamic: the paper's offset; phi is 0 from step (1 - b) G on
    alpha: float = 0.5  # constant
    start: float = 1.0  # linear
    end: float = 0.0  # linear
    split: float = 0.5  # two-stage: fraction of steps in the first stage

    def build(self) -> Schedule:
        if self.name == "dynamic":
            return lambda s, g: dynamic_phi(s, g, self.b)
        if self.name == "constant":
            return lambda s, g: constant(s, g, self.alpha)
        if self.name == "linear":
            return lambda s, g: linear_decay(s, g, self.start, self.end)
        if self.name == "two-stage":
            return lambda s, g: two_stage(s, g, self.split)
        raise ValueError(f"unknown schedule {self.name!r}; choose from {', '.join(SCHEDULE_NAMES)}")


SCHEDULE_NAMES = ("dynamic", "constant", "linear", "two-stage")
