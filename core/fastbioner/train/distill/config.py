"""Typed settings of a distillation run, saved whole in the student's manifest."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastbioner.base import defaults as defaults_table
from fastbioner.base.config import COMBINATIONS, ConfigError, EncodingConfig, LossConfig, Settings, TrainingConfig, opt
from fastbioner.train.distill.methods import MethodConfig

RECURRENT_SOURCES = ("bigru", "bilstm")
CONV_SOURCES = ("cnn",)
# Students built here rather than taken from a transformer: everything but their
# embeddings starts random.
SMALL_SOURCES = (*RECURRENT_SOURCES, *CONV_SOURCES)
# The defaults by kind of student and depth (method, learning rate, epochs) are data:
# fastbioner/base/defaults.toml, each with its decision record in docs/research/decisions.md. The
# functions below resolve them for the CLI, the app's dialog and its recipes, and the
# research scripts; nothing here holds a copy of a figure.


def _table():  # the module, not the function, so a test's replacement of table() is seen

    return defaults_table.table()


def default_epochs(source: str, layers: int | None = None) -> int:
    """The epochs a student from ``source`` trains for unless told: the CLI, the
    app's dialog and its recipes all take them from here."""
    return _table().for_student(source, layers).epochs


def teacher_layers_methods_summary() -> str:
    """The rule above in words, for help texts (from the table, not a copy of it)."""
    return _by_depth_summary(lambda d: d.method, str)


def teacher_layers_rates_summary() -> str:
    """The learning rate by depth in words, for help texts."""
    return _by_depth_summary(lambda d: d.learning_rate, lambda r: f"{r:g}")


def _by_depth_summary(value, word) -> str:
    groups: dict = {}
    for n, entry in sorted(_table().by_depth.items()):
        groups.setdefault(value(entry), []).append(n)
    # One clause per value ("pkd at 3 and 6 layers"), in the order of its shallowest depth.
    clauses = [f"{word(v)} at {_and(ns)} layers" for v, ns in groups.items()]
    return ", ".join(clauses) + " (another depth: the nearest of these, the deeper on a tie)"


def _and(items: list) -> str:
    words = [str(x) for x in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def default_method(source: str, layers: int | None = None) -> str:
    """The method a student from ``source`` (of ``layers`` of the teacher's layers;
    None: the CLI's depth) is distilled by unless told: the CLI, the app's dialog and its
    recipes all take it from here. The teacher's own layers: the method that led at that
    depth, else at the nearest depth measured; any other student: the table's entry for
    its kind (docs/research/decisions.md)."""
    return _table().for_student(source, layers).method


def default_learning_rate(source: str, layers: int | None = None) -> float:
    """The peak learning rate a student from ``source`` (of ``layers`` of the teacher's
    layers; None: the CLI's depth) trains at unless told: the CLI, the app's dialog and
    its recipes all take it from here."""
    return _table().for_student(source, layers).learning_rate


def default_teacher_layers() -> int:
    """The depth of a student of the teacher's own layers unless told."""
    return _table().teacher_layers


def teacher_layers_f1() -> dict[int, tuple[float, float]]:
    """The leading method's BC5CDR devel F1 (mean, spread over three seeds) at each depth
    the table records it for: the app describes its recipes' quality from here."""
    return {n: d.devel_f1 for n, d in _table().by_depth.items() if d.devel_f1 is not None}


CACHE_MODES = ("auto", "memory", "disk", "shared", "none")


@dataclass
class StudentConfig(Settings):
    """Where the student comes from.

    ``source``: ``teacher`` (the teacher's own layers, uniform mapping), ``bigru`` or
    ``bilstm`` (recurrent), ``cnn`` (a stack of window convolutions: the fastest
    tagger), or any other encoder: a Hugging Face id, a folder or a registry name (its
    first ``layers`` layers; all when None). The recurrent and convolutional students
    start from the wordpiece embeddings (and take the tokenizer) of ``embeddings``."""

    source: str = opt("teacher", "teacher (its own layers), bigru, bilstm, cnn, or a model id / folder / "
                                 "registry name", flag="--student-from", metavar="SOURCE", kind="model")
    layers: int | None = opt(6, "student layers (from the teacher: default 6; another encoder: its first N, "
                                "default all)")  # 6: defaults.toml's teacher.default_layers (a test checks)
    rnn_hidden: int = opt(256, "recurrent student: units per direction")
    rnn_layers: int = opt(1, "recurrent student: stacked layers")
    conv_width: int = opt(256, "convolutional student: width")
    conv_layers: int = opt(4, "convolutional student: stacked window blocks")
    conv_kernel: int = opt(3, "convolutional student: subwords each block reads (odd; the stack sees "
                              "layers x (kernel - 1) + 1)")
    embeddings: str = opt("teacher", "recurrent or convolutional student: whose wordpiece embeddings and "
                                     "tokenizer it starts from (teacher, or a model id / folder / registry "
                                     "name, e.g. a fine-tuned MiniLM)", flag="--student-embeddings",
                          metavar="SOURCE", kind="model")
    crf: bool = opt(True, "recurrent or convolutional student without a CRF", flag="--no-crf", kind="negate")
    dropout: float = opt(0.1, "recurrent or convolutional student: dropout", flag="--rnn-dropout")

    @property
    def convolutional(self) -> bool:
        return self.source in CONV_SOURCES

    @property
    def small(self) -> bool:
        """Built here (recurrent or convolutional) rather than cut from a transformer."""
        return self.source in SMALL_SOURCES

    def validate(self) -> None:
        if not self.source:
            raise ConfigError("a student source is required (teacher, bigru, bilstm, cnn or a model)")
        if self.layers is not None and self.layers < 1:
            raise ConfigError("student layers must be at least 1")
        if self.source == "teacher" and self.layers is None:
            raise ConfigError("a student from the teacher needs a layer count")
        if self.rnn_hidden < 1 or self.rnn_layers < 1:
            raise ConfigError("rnn_hidden and rnn_layers must be at least 1")
        if self.conv_width < 1 or self.conv_layers < 1:
            raise ConfigError("conv_width and conv_layers must be at least 1")
        if self.conv_kernel < 1 or self.conv_kernel % 2 == 0:
            raise ConfigError(f"conv_kernel must be odd (a window centred on each subword), not {self.conv_kernel}")
        if not self.embeddings:
            raise ConfigError("student embeddings: teacher, or a model")


@dataclass
class DistillConfig(Settings):
    teacher: str = opt("", "registry name or folder of the teacher; repeat --teacher for several, whose soft "
                           "labels are combined (the first is the one the student copies and matches)",
                       metavar="NAME", kind="model")
    extra_teachers: list[str] = opt(help="more teachers for the soft labels (as repeating --teacher)",
                                    factory=list, metavar="NAME", kind="models")
    teacher_combination: str = opt("confidence", "how several teachers' soft labels combine per word: weighted "
                                                 "by each teacher's confidence in it, or the mean",
                                   choices=COMBINATIONS)
    student: StudentConfig = field(default_factory=StudentConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    train_files: list[str] = opt(help="BIO training file(s)", flag="--train", factory=list, metavar="FILE",
                                 kind="paths")
    dev_file: str | None = opt(None, "BIO devel file for model selection", flag="--dev", metavar="FILE",
                               kind="path")
    unlabeled_files: list[str] = opt(help="unlabelled text (PubTator, BioC, PubMed XML, plain text ...) for "
                                          "soft labels", flag="--unlabeled", factory=list, metavar="FILE",
                                     kind="paths")
    unlabeled_format: str | None = opt(None, "format of the unlabelled files (default: guess)")
    unlabeled_limit: int = opt(0, "take the first N unlabelled sentences (0: all)", metavar="N")
    mention_copies: int = opt(0, "add N copies of the training documents in which mentions are replaced by "
                                 "other mentions of the same type from the training data (mention "
                                 "replacement; 0: none)", flag="--mention-replacement", metavar="N")
    mention_rate: float = opt(0.5, "in those copies, the chance that a mention is replaced",
                              flag="--mention-replacement-rate", metavar="P")
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    # The default student (the teacher's layers, at the table's depth): its rate and epochs, as the CLI's.
    training: TrainingConfig = field(default_factory=lambda: TrainingConfig(
        learning_rate=default_learning_rate("teacher"), epochs=default_epochs("teacher")))
    loss: LossConfig = field(default_factory=LossConfig)  # the gold-label term
    teacher_cache: str = opt("auto", "keep the teacher's outputs in memory or on disk, or compute them at "
                                     "every step (none); auto: memory when it fits --cache-memory-mb; "
                                     "shared: on disk, kept for later runs with the same teacher and data "
                                     "(a resumed run, a sweep) in the models folder's .teacher-cache-shared",
                             choices=CACHE_MODES)
    cache_memory_mb: int = opt(4096, "auto cache: memory when the cache fits this many MB, else disk")

    def cache_place(self, cache_bytes: int) -> str:
        """Where a teacher cache of ``cache_bytes`` is kept: ``teacher_cache`` with auto
        resolved (memory when it fits ``cache_memory_mb``, else disk)."""
        if self.teacher_cache != "auto":
            return self.teacher_cache
        return "memory" if cache_bytes <= self.cache_memory_mb * 2**20 else "disk"

    def validate(self) -> None:
        if not self.teacher:
            raise ConfigError("a teacher (registry name or folder) is required")
        if not self.train_files:
            raise ConfigError("at least one training file is required")
        if self.teacher_combination not in COMBINATIONS:
            raise ConfigError(f"teacher_combination must be one of {', '.join(COMBINATIONS)}")
        if self.teacher_cache not in CACHE_MODES:
            raise ConfigError(f"teacher_cache must be one of {', '.join(CACHE_MODES)}")
        if self.unlabeled_limit < 0 or self.cache_memory_mb < 0:
            raise ConfigError("unlabeled_limit and cache_memory_mb must not be negative")
        if self.mention_copies < 0:
            raise ConfigError("mention_copies must not be negative")
        if not 0.0 < self.mention_rate <= 1.0:
            raise ConfigError(f"mention_rate must be above 0 and at most 1, not {self.mention_rate}")
        self.student.validate()
        self.method.validate()
        self.encoding.validate()
        self.training.validate()
        self.loss.validate()
