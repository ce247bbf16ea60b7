"""How a training run is going, read from outside it and without torch: the progress
its last checkpoint holds, and whether its devel scores show a divergence.

For tools that watch runs they started as ``fastbioner train-teacher|distill``
commands (a status line, a batch queue): they ask here rather than read the
checkpoint folder's layout, which is the trainer's to change (``checkpoints.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastbioner.models.registry import Registry

# The registry's folder of in-progress checkpoints, one folder per model name
# (runs.checkpoint_folder); each holds the latest checkpoint (checkpoints.LATEST).
_CHECKPOINTS, _LATEST, _STATE = ".checkpoints", "latest", "state.json"
# What a progress record carries: where the run stands, not its RNG or fingerprint.
_FIELDS = ("step", "total_steps", "best_metric", "best_step", "history", "epoch_seconds")


def checkpoint_progress(name: str, models: str | Path | None = None) -> dict[str, Any] | None:
    """The progress of the run training model ``name``, as of its last checkpoint:
    ``step``, ``total_steps``, ``best_metric``, ``best_step``, ``history`` (its devel
    scorings, ``{"step", "f1", ...}``), ``epoch_seconds`` and ``written`` (when that
    checkpoint was written, epoch seconds). None when the run has no checkpoint (not
    started, finished and cleaned up, or its first one being written).

    ``models``: the registry's folder (``Registry(...).root``); default the user's.
    """
    if models is None:
        models = Registry().root
    path = Path(models) / _CHECKPOINTS / name / _LATEST / _STATE
    try:
        written = path.stat().st_mtime
        state = json.loads(path.read_text(encoding="utf-8"))["state"]
        progress = {k: state.get(k) for k in _FIELDS}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return {**progress, "written": written}


def diverged_at(history: list[dict[str, Any]], metric: str = "f1") -> int | None:
    """The first devel scoring at which a run that had scored above one half fell
    below a tenth: training diverged (the model tags almost nothing), whatever it
    recovered later. A 6-layer student at a 3-layer student's learning rate did so
    (docs/research/benchmarks.md, table 0)."""
    seen_good = False
    for point in history or []:
        value = point.get(metric)
        if value is None:
            continue
        if value > 0.5:
            seen_good = True
        elif seen_good and value < 0.1:
            return point.get("step")
    return None
