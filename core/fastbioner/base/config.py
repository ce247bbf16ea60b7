"""Typed settings, saved whole in the manifest beside every model they made.

Each dataclass converts to a plain dict (``to_dict``) and back (``from_dict``), so
an old model reloads with the settings it was trained under. ``from_dict`` fills
missing fields with their defaults (a manifest older than a new option) and
rejects unknown ones (a typo, or a file from a newer version).

Run-time state (steps done, best score) never goes into these objects: they say
what was asked for, :class:`fastbioner.train.training.TrainingResult` says what happened.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastbioner.base.defaults import table
from fastbioner.base.errors import ConfigError


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


def opt(default: Any = dataclasses.MISSING, help: str = "", *, flag: str | None = None,
        factory: Any = None, choices: Any = None, metavar: str | None = None, kind: str | None = None) -> Any:
    """A setting and its command-line flag in one place: the CLI's parsers are built
    from this metadata (:mod:`fastbioner.cli.config_flags`), so every setting has a
    flag and the CLI, the app's dialogs and the manifest share one default.

    ``flag``: the flag's name (default ``--field-name``); ``kind``: ``path`` /
    ``paths`` (resolved to absolute paths), ``model`` (a folder is resolved, an id
    kept), ``negate`` (a ``--no-...`` switch for a setting that defaults to True),
    ``comma-list`` (``a,b``), ``term-weights`` (repeated ``NAME=VALUE``)."""
    meta = {"help": help, "flag": flag, "choices": choices, "metavar": metavar, "kind": kind}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


# The defaults of the settings below: the table's (fastbioner/base/defaults.toml), each with
# the decision record that chose it.
_ENCODING = table().section("encoding")
_TRAINING = table().section("training")

# What a model reads around a sentence (see EncodingConfig.context and fastbioner.models.packing).
CONTEXTS = ("sentence", "document", "packed")

# How several models' label distributions combine per word (fastbioner.infer.label_ensembles):
# weighted by each model's confidence in the word, or equally.
COMBINATIONS = ("confidence", "mean")


@dataclass
class EncodingConfig(Settings):
    max_length: int = opt(_ENCODING["max_length"], "subwords per window, special tokens included")
    window_overlap: int = opt(_ENCODING["window_overlap"], "subwords shared by consecutive windows of a long "
                                                                "sentence (or of a document, with packed context)")
    label_mode: str = opt(_ENCODING["label_mode"], "label the first subword of each word, or all (label "
                                                   "propagation)", choices=("first", "all"))
    context: str = opt(_ENCODING["context"],
                       "what the model reads around a sentence. sentence: nothing (the cheapest). document: each "
                       "sentence in a window of its own, filled with the neighbouring sentences of its document as far "
                       "as the window allows (every word is read about as many times as a window holds sentences: ~6x "
                       "the cost on abstracts). packed: each document (title + abstract) read as one sequence cut into "
                       "overlapping windows (document context at about the cost of sentence). document and packed need "
                       "the training files' documents (-DOCSTART- lines or PubTator/BioC); tagging reads each document",
                       choices=CONTEXTS)

    def validate(self) -> None:
        _check(self.max_length >= 8, "max_length must be at least 8")
        _check(self.window_overlap >= 0, "window_overlap must not be negative")
        _check(self.label_mode in ("first", "all"), "label_mode must be 'first' or 'all'")
        _check(self.context in CONTEXTS, f"context must be one of {', '.join(CONTEXTS)}")


def reading_description(manifest: dict[str, Any]) -> str:
    """What a model reads around each sentence when it tags, in a few plain words, from
    the encoding its manifest saved (what :class:`fastbioner.infer.inference.Tagger` follows).
    A model saved without one (imported from elsewhere) reads sentence by sentence, as
    the tagger does then."""
    config = manifest.get("config") if isinstance(manifest, dict) else None
    encoding = config.get("encoding") if isinstance(config, dict) else None
    encoding = encoding if isinstance(encoding, dict) else {}
    context = encoding.get("context") or "sentence"
    length = encoding.get("max_length") or EncodingConfig.max_length
    if context == "packed":
        # Said because a curator's BIO file without -DOCSTART- lines gives it no documents.
        return (f"each document whole (title and abstract), in overlapping windows of {length} subwords; "
                "a BIO file without -DOCSTART- lines sentence by sentence")
    if context == "document":
        return f"each sentence with its neighbours in the document, up to {length} subwords"
    return f"each sentence on its own, up to {length} subwords"


@dataclass
class TrainingConfig(Settings):
    """The shared training loop's settings (teacher fine-tuning and distillation)."""

    epochs: int = opt(_TRAINING["epochs"], "passes over the training data")
    learning_rate: float = opt(_TRAINING["learning_rate"], "peak learning rate", flag="--lr")
    batch_size: int = opt(_TRAINING["batch_size"], "sentences (windows) per micro-batch")
    eval_batch_size: int = opt(_TRAINING["eval_batch_size"], "windows per batch when the teacher's outputs are "
                                                             "cached")
    grad_accum_steps: int = opt(_TRAINING["grad_accum_steps"], "micro-batches per optimisation step",
                                flag="--grad-accum", metavar="N")
    warmup_ratio: float = opt(_TRAINING["warmup_ratio"], "warm-up share of all optimisation steps, then linear "
                                                         "decay to 0", flag="--warmup", metavar="RATIO")
    weight_decay: float = opt(_TRAINING["weight_decay"], "AdamW weight decay (not on biases and LayerNorm weights)")
    max_grad_norm: float = opt(_TRAINING["max_grad_norm"], "gradient clipping norm; 0 disables clipping")
    seed: int = opt(_TRAINING["seed"], "seed of every random choice (initialisation, batch order, dropout)")
    device: str = opt("auto", "auto (CUDA when present), cpu, cuda, cuda:N")
    threads: int = opt(0, "CPU threads for torch, 0: the cores this process may use less what other "
                          "work keeps busy on them (at least 1)")
    mixed_precision: bool = opt(_TRAINING["mixed_precision"], "no autocast on CUDA (it is used on CUDA only: bf16 "
                                                               "where supported, else fp16)",
                                flag="--no-mixed-precision", kind="negate")
    cpu_bf16: bool = opt(_TRAINING["cpu_bf16"], "train under bf16 autocast on a CPU with native bfloat16 "
                                                "(AVX512-BF16 or AMX): faster steps; the weights and optimiser "
                                                "stay fp32", flag="--cpu-bf16")
    eval_every_steps: int = opt(0, "score devel every STEPS steps (0: at the end of each epoch)",
                                flag="--eval-every", metavar="STEPS")
    early_stopping_patience: int = opt(0, "stop after this many evaluations without improvement (0: off)",
                                       flag="--patience")
    checkpoint_every_steps: int = opt(0, "also checkpoint every STEPS steps (always: each epoch and on cancel)",
                                      flag="--checkpoint-every", metavar="STEPS")
    max_steps: int = opt(0, "stop after this many steps (0: all epochs); for timing runs")
    selection_metric: str = opt("f1", "devel metric that picks the best weights (higher is better), e.g. f1, "
                                      "f1_Disease")
    keep_weights: str = opt(_TRAINING["keep_weights"], "the weights a run ends with when it is scored as it goes: "
                                                       "best (those of its best score) or last (those of its last "
                                                       "step)", choices=("best", "last"))
    # DRET's fine-tuning knobs (3.0.1-3.3, docs/explanation/dret.md): the trained model's input embeddings
    # frozen, and peak rates per part of it (the embeddings, each transformer layer, the tagging head).
    freeze_embeddings: bool = opt(_TRAINING["freeze_embeddings"], "keep the model's input (token) embeddings "
                                                                  "fixed: transferred vectors stay as they came")
    embedding_lr_scale: float = opt(_TRAINING["embedding_lr_scale"], "the embeddings' peak rate: the learning "
                                                                      "rate x this (x the layer decay once more "
                                                                      "than the lowest layer)", metavar="SCALE")
    layer_lr_decay: float = opt(_TRAINING["layer_lr_decay"], "layer-wise rates: layer i of L (0 lowest) trains at "
                                                              "the learning rate x DECAY^(L-1-i); 1 = one rate",
                                metavar="DECAY")
    head_lr_scale: float = opt(_TRAINING["head_lr_scale"], "the tagging head's (classifier, CRF) peak rate: the "
                                                            "learning rate x this", metavar="SCALE")

    def validate(self) -> None:
        _check(self.epochs >= 1, "epochs must be at least 1")
        _check(self.learning_rate > 0, "learning rate must be positive")
        _check(self.batch_size >= 1 and self.eval_batch_size >= 1, "batch sizes must be at least 1")
        _check(self.grad_accum_steps >= 1, "grad_accum_steps must be at least 1")
        _check(0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)")
        _check(self.weight_decay >= 0, "weight_decay must not be negative")
        _check(self.max_grad_norm >= 0, "max_grad_norm must not be negative")
        _check(self.keep_weights in ("best", "last"), "keep_weights must be 'best' or 'last'")
        _check(self.embedding_lr_scale >= 0 and self.head_lr_scale > 0, "embedding_lr_scale must not be negative "
               "and head_lr_scale must be positive")
        _check(0 < self.layer_lr_decay <= 1, "layer_lr_decay must be in (0, 1]")
        for name in ("eval_every_steps", "early_stopping_patience", "checkpoint_every_steps",
                     "max_steps", "threads"):
            _check(getattr(self, name) >= 0, f"{name} must not be negative")


LOSS_KINDS = ("ce", "weighted-ce", "focal")


@dataclass
class LossConfig(Settings):
    """Gold-label loss: cross-entropy, class-weighted cross-entropy (weights from the
    training labels' frequencies) or focal loss; DRET's answers to the dominant O."""

    kind: str = opt(_TRAINING["loss"], "gold-label loss", flag="--loss", choices=LOSS_KINDS)
    focal_gamma: float = opt(_TRAINING["focal_gamma"], "gamma of the focal loss")
    class_weight_power: float = opt(_TRAINING["class_weight_power"], "weighted-ce: weights = (balanced weights) "
                                                                     "** power; 1 = fully balanced")

    def validate(self) -> None:
        _check(self.kind in LOSS_KINDS, f"loss must be one of {', '.join(LOSS_KINDS)}")
        _check(self.focal_gamma >= 0, "focal_gamma must not be negative")
        _check(0 <= self.class_weight_power <= 1, "class_weight_power must be in [0, 1]")


@dataclass
class TeacherConfig(Settings):
    """Everything that decides a fine-tuned teacher (saved in its manifest)."""

    base_model: str = opt("", "Hugging Face model id or folder", flag="--base", metavar="MODEL", kind="model")
    head: str = opt(_TRAINING["head"], "the tagging head: a linear layer per subword, or a linear layer and a CRF over "
                              "the words (Viterbi decoding)", choices=("linear", "crf"))
    train_files: list[str] = opt(help="BIO training file(s)", flag="--train", factory=list, metavar="FILE",
                                 kind="paths")
    dev_file: str | None = opt(None, "BIO devel file for model selection and early stopping", flag="--dev",
                               metavar="FILE", kind="path")
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    loss: LossConfig = field(default_factory=LossConfig)

    def validate(self) -> None:
        _check(bool(self.base_model), "a base model (Hugging Face id or folder) is required")
        _check(bool(self.train_files), "at least one training file is required")
        _check(self.head in ("linear", "crf"), "head must be 'linear' or 'crf'")
        self.encoding.validate()
        self.training.validate()
        self.loss.validate()
