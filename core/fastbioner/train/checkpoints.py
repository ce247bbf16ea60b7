"""Training checkpoints: everything the training loop needs to resume exactly.

A checkpoint is a folder ``<checkpoint_dir>/latest`` written beside a temporary
folder and swapped in by rename, so a crash mid-write leaves the previous one:

- ``weights-<module>.safetensors`` and ``best-<module>.safetensors``: trainable
  modules now and at the best evaluation;
- ``optimizer.pt``: optimizer, scheduler and grad-scaler state and torch RNG
  states, loaded with ``torch.load(weights_only=True)`` (tensors and plain
  containers only: no code can run from it);
- ``state.json``: step, best metric, evaluation history, Python and NumPy RNG
  states and the settings fingerprint that a resumed run must match.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn

from fastbioner.base.errors import ModelError

LATEST, PREVIOUS = "latest", ".previous"


@dataclass
class TrainingState:
    """Where a training run stands; all of it goes into ``state.json``."""

    step: int = 0
    total_steps: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    best_metrics: dict[str, float] | None = None
    bad_evals: int = 0
    last_eval_step: int = -1
    stopped: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    fingerprint: Any = None
    checkpointed_step: int = 0


def _rng_json() -> dict[str, Any]:
    version, internal, gauss = random.getstate()
    state = np.random.get_state()
    assert isinstance(state, tuple)  # the legacy form, get_state's default
    name, keys, pos, has_gauss, cached = state
    return {"python": [version, list(internal), gauss],
            "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]}


def _restore_rng_json(data: dict[str, Any]) -> None:
    version, internal, gauss = data["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = data["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))


def save_checkpoint(folder: str | Path, state: TrainingState, modules: Mapping[str, nn.Module],
                    optimizer: torch.optim.Optimizer, scheduler: Any, scaler: Any | None,
                    best_weights: Mapping[str, Mapping[str, torch.Tensor]] | None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder))
    try:
        for name, module in modules.items():
            save_model(module, str(tmp / f"weights-{name}.safetensors"))
        for name, weights in (best_weights or {}).items():
            save_file({k: v.contiguous() for k, v in weights.items()}, str(tmp / f"best-{name}.safetensors"))
        torch.save({
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else {},
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }, tmp / "optimizer.pt")
        payload = {"state": asdict(state), "rng": _rng_json()}
        (tmp / "state.json").write_text(json.dumps(payload), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    latest, previous = folder / LATEST, folder / PREVIOUS
    if previous.exists():
        shutil.rmtree(previous)
    if latest.exists():
        os.replace(latest, previous)
    os.replace(tmp, latest)
    shutil.rmtree(previous, ignore_errors=True)
    return latest


def has_checkpoint(folder: str | Path) -> bool:
    folder = Path(folder)
    return (folder / LATEST / "state.json").is_file() or (folder / PREVIOUS / "state.json").is_file()


def load_checkpoint(folder: str | Path, modules: Mapping[str, nn.Module], optimizer: torch.optim.Optimizer,
                    scheduler: Any, scaler: Any | None
                    ) -> tuple[TrainingState, dict[str, dict[str, torch.Tensor]] | None] | None:
    """Restore modules, optimizer, scheduler, scaler and RNGs in place; returns the
    state and the best weights, or None when there is no checkpoint."""
    folder = Path(folder)
    where = folder / LATEST
    if not (where / "state.json").is_file():
        where = folder / PREVIOUS  # a crash between the two renames of save_checkpoint
        if not (where / "state.json").is_file():
            return None
    try:
        payload = json.loads((where / "state.json").read_text(encoding="utf-8"))
        for name, module in modules.items():
            load_model(module, str(where / f"weights-{name}.safetensors"), strict=True)
        blob = _load_optimizer_state(where / "optimizer.pt")
        optimizer.load_state_dict(blob["optimizer"])
        scheduler.load_state_dict(blob["scheduler"])
        if scaler is not None and blob["scaler"]:
            scaler.load_state_dict(blob["scaler"])
        best = None
        files = sorted(where.glob("best-*.safetensors"))
        if files:
            best = {p.name[len("best-"):-len(".safetensors")]: load_file(str(p)) for p in files}
        state = TrainingState(**payload["state"])
        # The random states too: a blob of tensors and lists whose values are wrong is
        # an unreadable checkpoint, not a traceback.
        torch.set_rng_state(blob["torch_rng"])
        if blob["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(blob["cuda_rng"])
        _restore_rng_json(payload["rng"])
    except (OSError, KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as exc:
        said = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ModelError(f"{where}: unreadable checkpoint ({said}); delete it to start afresh") from None
    state.checkpointed_step = state.step
    return state, best


def _load_optimizer_state(path: Path) -> Any:
    """``optimizer.pt`` read with ``weights_only=True``: tensors and plain containers,
    never code. Anything else (a pickle naming a class or a function, a truncated file)
    is a one-line ModelError that says the file is not one this program wrote; torch's
    own message is not passed on, since it advises loading with ``weights_only=False``,
    which would run whatever the file holds."""
    try:
        with warnings.catch_warnings():  # torch's note on a file's pickle protocol: not the user's concern
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except Exception:  # UnpicklingError, EOFError, a broken zip ...: never torch's unsafe advice
        raise _not_ours(path) from None


def _not_ours(path: Path) -> ModelError:
    return ModelError(f"{path}: not an optimizer state this program wrote (it holds more than tensors and "
                      f"plain values, or is damaged); it is never loaded as code: delete the checkpoint "
                      f"folder {path.parent.parent} to start afresh")


def clear_checkpoints(folder: str | Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
