"""Checkpoints left by interrupted training runs: a cancelled or crashed teacher
fine-tuning or distillation keeps its checkpoint in the registry's hidden
``.checkpoints/<name>`` (hundreds of MB for a transformer student), so that the same
run can be resumed. This module lists them (name, size, how far the run got), deletes
one, and reads back the settings the run recorded when it started (``run.json``,
written by :func:`record_run`), which is what resuming it from the app needs.

No torch here: listing must be quick enough for a menu or a panel.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastbioner.base.errors import ModelError
from fastbioner.io.fileio import atomic_write
from fastbioner.models.registry import Registry

CHECKPOINTS = ".checkpoints"
RUN_FILE = "run.json"
# What a checkpoint folder holds that proves it is one (checkpoints.save_checkpoint).
_STATES = ("latest/state.json", ".previous/state.json")


@dataclass(frozen=True)
class Leftover:
    name: str                  # the model the interrupted run was to register
    folder: Path
    size_bytes: int
    step: int                  # optimisation steps done when it was last saved (0: none saved)
    total_steps: int
    saved: str                 # when it was last saved (ISO 8601, UTC)
    run: dict[str, Any] | None  # the settings recorded at the start (None: a run of an older version)

    @property
    def kind(self) -> str:
        """"teacher" or "distill"; "" when the run recorded nothing."""
        return str((self.run or {}).get("kind", ""))

    @property
    def resumable(self) -> bool:
        return bool(self.kind and isinstance((self.run or {}).get("config"), dict))


def checkpoints_root(registry: Registry) -> Path:
    return registry.root / CHECKPOINTS


def record_run(folder: str | Path, kind: str, config: Any) -> None:
    """Write what a run was started with (``kind``: "teacher" or "distill"; the
    config's settings, files by their paths) beside its checkpoints, for a resume."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(folder / RUN_FILE) as out:
        json.dump({"kind": kind, "config": config.to_dict()}, out, indent=1, default=str)


def _state(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    for rel in _STATES:
        path = folder / rel
        if path.is_file():
            try:
                return path, json.loads(path.read_text(encoding="utf-8")).get("state", {})
            except (OSError, ValueError, AttributeError):
                return path, {}
    return None


def _size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:  # removed meanwhile
            continue
    return total


def list_leftovers(registry: Registry | None = None) -> list[Leftover]:
    """Every interrupted run's checkpoint in ``registry``, newest first."""
    root = checkpoints_root(registry or Registry())
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        # A run stopped before its first checkpoint may have left its teachers' soft
        # labels or its settings there: listed too (step 0), so they can be deleted.
        path, data = _state(folder) or (folder, {})
        run = None
        try:
            run = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        saved = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
        found.append(Leftover(folder.name, folder, _size(folder), int(data.get("step") or 0),
                              int(data.get("total_steps") or 0), saved, run if isinstance(run, dict) else None))
    return sorted(found, key=lambda leftover: leftover.saved, reverse=True)


def delete_leftover(name: str, registry: Registry | None = None) -> int:
    """Delete the checkpoint of the interrupted run of ``name``; the bytes freed."""
    registry = registry or Registry()
    registry.check_name(name)  # no path tricks: a plain model name
    folder = checkpoints_root(registry) / name
    if not folder.is_dir():
        raise ModelError(f"no interrupted run of {name!r} in {checkpoints_root(registry)}")
    size = _size(folder)
    shutil.rmtree(folder)
    return size

