"""Typed settings, saved whole in the manifest beside every model they made.

Each dataclass converts to a plain dict (``to_dict``) and back (``from_dict``), so
an old model reloads with the settings it was trained under. ``from_dict`` fills
missing fields with their defaults (a manifest older than a new option) and
rejects unknown ones (a typo, or a file from a newer version).

Run-time state (steps done, best score) never goes into these objects: they say
what was asked for, :class:`fastbioner.training.TrainingResult` says what happened.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import FastBioNERError


class ConfigError(FastBioNERError):
    """A setting with an impossible value, or a settings dict that does not fit."""


C = TypeVar("C", bound="Settings")


class Settings:
    """Mixin: dict round trip for (nested) dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown setting(s) {', '.join(unknown)}")
        kwargs = {}
        for name, value in data.items():
            kind = hints[name]
            if isinstance(kind, type) and issubclass(kind, Settings) and isinstance(value, dict):
                value = kind.from_dict(value)
            elif typing.get_origin(kind) in (list, tuple) and isinstance(value, (list, tuple)):
                value = list(value)
            kwargs[name] = value
        obj = cls(**kwargs)
        validate = getattr(obj, "validate", None)
        if validate:
            validate()
        return obj


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass
class EncodingConfig(Settings):
    max_length: int = 256            # subwords per window, special tokens included
    window_overlap: int = 32         # subwords shared by consecutive windows of a long sentence
    label_mode: str = "first"        # "first" subword only, or "all" (label propagation)

    def validate(self) -> None:
        _check(self.max_length >= 8, "max_length must be at least 8")
        _check(self.window_overlap >= 0, "window_overlap must not be negative")
        _check(self.label_mode in ("first", "all"), "label_mode must be 'first' or 'all'")


@dataclass
class TrainingConfig(Settings):
    """The shared training loop's settings (teacher fine-tuning and distillation)."""

    epochs: int = 3
    learning_rate: float = 5e-5
    batch_size: int = 16
    eval_batch_size: int = 64
    grad_accum_steps: int = 1        # micro-batches per optimisation step
    warmup_ratio: float = 0.1        # of all optimisation steps, then linear decay to 0
    weight_decay: float = 0.01       # not applied to biases and LayerNorm weights
    max_grad_norm: float = 1.0       # 0 disables clipping
    seed: int = 42
    device: str = "auto"             # auto (CUDA when present), cpu, cuda, cuda:1 ...
    threads: int = 0                 # CPU threads for torch, 0: its default (one per core); on a
                                     # machine shared with other jobs, 1 avoids oversubscription
    mixed_precision: bool = True     # autocast on CUDA only (bf16 where supported, else fp16)
    eval_every_steps: int = 0        # 0: evaluate at the end of each epoch
    early_stopping_patience: int = 0  # evaluations without improvement before stopping; 0: off
    checkpoint_every_steps: int = 0  # 0: checkpoint only at epoch ends and on cancel
    max_steps: int = 0               # stop after this many steps (0: all epochs); for timing runs
    selection_metric: str = "f1"     # devel metric that picks the best model (higher is better)

    def validate(self) -> None:
        _check(self.epochs >= 1, "epochs must be at least 1")
        _check(self.learning_rate > 0, "learning rate must be positive")
        _check(self.batch_size >= 1 and self.eval_batch_size >= 1, "batch sizes must be at least 1")
        _check(self.grad_accum_steps >= 1, "grad_accum_steps must be at least 1")
        _check(0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)")
        _check(self.weight_decay >= 0, "weight_decay must not be negative")
        _check(self.max_grad_norm >= 0, "max_grad_norm must not be negative")
        for name in ("eval_every_steps", "early_stopping_patience", "checkpoint_every_steps",
                     "max_steps", "threads"):
            _check(getattr(self, name) >= 0, f"{name} must not be negative")


LOSS_KINDS = ("ce", "weighted-ce", "focal")


@dataclass
class LossConfig(Settings):
    """Gold-label loss: cross-entropy, class-weighted cross-entropy (weights from the
    training labels' frequencies) or focal loss; DRET's answers to the dominant O."""

    kind: str = "ce"
    focal_gamma: float = 2.0
    class_weight_power: float = 0.5  # weights = (balanced weights) ** power; 1 = fully balanced

    def validate(self) -> None:
        _check(self.kind in LOSS_KINDS, f"loss must be one of {', '.join(LOSS_KINDS)}")
        _check(self.focal_gamma >= 0, "focal_gamma must not be negative")
        _check(0 <= self.class_weight_power <= 1, "class_weight_power must be in [0, 1]")


@dataclass
class TeacherConfig(Settings):
    """Everything that decides a fine-tuned teacher (saved in its manifest)."""

    base_model: str = ""
    train_files: list[str] = field(default_factory=list)
    dev_file: str | None = None
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    loss: LossConfig = field(default_factory=LossConfig)

    def validate(self) -> None:
        _check(bool(self.base_model), "a base model (Hugging Face id or folder) is required")
        _check(bool(self.train_files), "at least one training file is required")
        self.encoding.validate()
        self.training.validate()
        self.loss.validate()
