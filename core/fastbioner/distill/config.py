"""Typed settings of a distillation run, saved whole in the student's manifest."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import ConfigError, EncodingConfig, LossConfig, Settings, TrainingConfig
from .methods import MethodConfig

RECURRENT_SOURCES = ("bigru", "bilstm")
CACHE_MODES = ("auto", "memory", "disk", "none")


@dataclass
class StudentConfig(Settings):
    """Where the student comes from.

    ``source``: ``teacher`` (the teacher's own layers, uniform mapping), ``bigru`` or
    ``bilstm`` (recurrent, over the teacher's wordpiece embeddings), or any other
    encoder: a Hugging Face id, a folder or a registry name (its first ``layers``
    layers; all when None)."""

    source: str = "teacher"
    layers: int | None = 6           # transformer layers; recurrent: see rnn_layers
    rnn_hidden: int = 256            # recurrent: units per direction
    rnn_layers: int = 1
    crf: bool = True                 # recurrent: CRF over the first subword of each word
    dropout: float = 0.1             # recurrent only

    @property
    def recurrent(self) -> bool:
        return self.source in RECURRENT_SOURCES

    def validate(self) -> None:
        if not self.source:
            raise ConfigError("a student source is required (teacher, bigru, bilstm or a model)")
        if self.layers is not None and self.layers < 1:
            raise ConfigError("student layers must be at least 1")
        if self.source == "teacher" and self.layers is None:
            raise ConfigError("a student from the teacher needs a layer count")
        if self.rnn_hidden < 1 or self.rnn_layers < 1:
            raise ConfigError("rnn_hidden and rnn_layers must be at least 1")


@dataclass
class DistillConfig(Settings):
    teacher: str = ""                # registry name or folder of the fine-tuned teacher
    student: StudentConfig = field(default_factory=StudentConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    train_files: list[str] = field(default_factory=list)
    dev_file: str | None = None
    unlabeled_files: list[str] = field(default_factory=list)
    unlabeled_format: str | None = None   # None: by extension / content
    unlabeled_limit: int = 0         # sentences taken from the unlabelled files (0: all)
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    loss: LossConfig = field(default_factory=LossConfig)  # the gold-label term
    teacher_cache: str = "auto"      # auto | memory | disk | none (compute at every step)
    cache_memory_mb: int = 4096      # auto: memory when the cache fits this, else disk

    def validate(self) -> None:
        if not self.teacher:
            raise ConfigError("a teacher (registry name or folder) is required")
        if not self.train_files:
            raise ConfigError("at least one training file is required")
        if self.teacher_cache not in CACHE_MODES:
            raise ConfigError(f"teacher_cache must be one of {', '.join(CACHE_MODES)}")
        if self.unlabeled_limit < 0 or self.cache_memory_mb < 0:
            raise ConfigError("unlabeled_limit and cache_memory_mb must not be negative")
        self.student.validate()
        self.method.validate()
        self.encoding.validate()
        self.training.validate()
        self.loss.validate()
