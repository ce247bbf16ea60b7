"""Typed settings of a distillation run, saved whole in the student's manifest."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import COMBINATIONS, ConfigError, EncodingConfig, LossConfig, Settings, TrainingConfig, opt
from .methods import MethodConfig

RECURRENT_SOURCES = ("bigru", "bilstm")
CONV_SOURCES = ("cnn",)
# Students built here rather than taken from a transformer: everything but their
# embeddings starts random.
SMALL_SOURCES = (*RECURRENT_SOURCES, *CONV_SOURCES)
RECURRENT_LR = 1e-3  # a student learning from scratch: a transformer's 5e-5 is far too small
# A student made of some of the teacher's layers is a network its weights were never
# trained as: it needs far more than fine-tuning's 5e-5. Table 0 of docs/benchmarks.md
# (3-layer students of the MPNet teacher, BC5CDR, 3 epochs, rates 5e-5 to 8e-4, one
# seed): og and hinton score best at 4e-4 (80.70 and 81.60, against 73.05 and 73.73 at
# 5e-5 and 79.97 and 80.71 at 8e-4); calibrated FastBioNER scores 80.94 at 4e-4 and
# 81.27 at 8e-4. Over the three methods 4e-4 is best (mean 81.08 against 80.65).
TEACHER_LAYERS_LR = 4e-4
# That rate is a shallow student's. A 6-layer student of the same teacher diverged at it
# (bc5cdr/og-6, seed 13: 74.8 at step 190, then 0 from step 285 to 665, after its
# warm-up had ended at step 171, and 61.3 at the end; table 0's 6-layer rows): a student of more than SHALLOW_LAYERS of
# the teacher's layers trains at DEEP_TEACHER_LAYERS_LR, the rate table 0's 6-layer
# gold-only rows support: at 2e-4 the same student did not diverge (85.21 devel F1, best
# at step 1520 of 1710).
SHALLOW_LAYERS = 3
DEEP_TEACHER_LAYERS_LR = 2e-4
# Epochs, by the same table: at lr 4e-4, 3-layer students, seed 13, 6 epochs against 3
# raised og from 80.70 to 81.50 and hinton from 81.60 to 82.42 (og's best scoring came
# at step 1425 of 1710: past its third epoch, not at its last). A convolutional student
# starts from nothing but its embeddings: 10 epochs over the unlabelled text gave 80.41
# against 79.43 for 3 (docs/benchmarks.md, section 6). Any other student keeps
# TrainingConfig's 3 (a recurrent one was best at step 570 of 855; an encoder
# fine-tuned on the corpus starts close to its task).
TEACHER_LAYERS_EPOCHS = 6
CONV_EPOCHS = 10


def default_epochs(source: str) -> int:
    """The epochs a student from ``source`` trains for unless told: the CLI, the
    app's dialog and its recipes all take them from here."""
    if source == "teacher":
        return TEACHER_LAYERS_EPOCHS
    if source in CONV_SOURCES:
        return CONV_EPOCHS
    return TrainingConfig().epochs


# The method that led at each depth of the teacher's own layers the tables measured
# (docs/benchmarks.md; BC5CDR devel F1, three seeds each, 6 epochs, bf16): 3 layers
# pkd 83.81 +- 0.04 against fastbioner-cal 82.64 +- 0.12 (hinton 82.15 +- 0.03; fastbioner-cal
# was the default here until pkd ran at this depth); 4 layers pkd 84.92 +- 0.30 against hinton
# 83.76 +- 0.12 (the default here until pkd ran) and fastbioner-cal 83.36 +- 0.27; 6 layers
# pkd 86.17 +- 0.12 against fastbioner-cal 85.87 +- 0.15 (hinton 85.43 +- 0.35). Each lead is larger than either spread. A depth
# not measured takes the method of the nearest depth measured (the deeper on a tie).
TEACHER_LAYERS_METHOD = {3: "pkd", 4: "pkd", 6: "pkd"}
# The leading method's BC5CDR devel F1 at each depth (mean and spread over three seeds,
# the figures above) as data: the app's distillation dialog describes its recipes'
# quality from here, not from a copy.
TEACHER_LAYERS_F1 = {3: (83.81, 0.04), 4: (84.92, 0.30), 6: (86.17, 0.12)}


def teacher_layers_method(layers: int | None) -> str:
    """The method for a student of ``layers`` of the teacher's layers (None: the CLI's
    6): the one that led at that depth, else at the nearest depth measured."""
    depth = StudentConfig().layers if layers is None else layers
    nearest = min(TEACHER_LAYERS_METHOD, key=lambda n: (abs(n - depth), -n))
    return TEACHER_LAYERS_METHOD[nearest]


def teacher_layers_methods_summary() -> str:
    """The rule above in words, for help texts (from the table, not a copy of it)."""
    depths: dict[str, list[int]] = {}
    for n, m in sorted(TEACHER_LAYERS_METHOD.items()):
        depths.setdefault(m, []).append(n)
    # One clause per method ("pkd at 3 and 6 layers"), in the order of its shallowest depth.
    clauses = [f"{m} at {_and(ns)} layers" for m, ns in depths.items()]
    return ", ".join(clauses) + " (another depth: the nearest of these, the deeper on a tie)"


def _and(items: list) -> str:
    words = [str(x) for x in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def default_method(source: str, layers: int | None = None) -> str:
    """The method a student from ``source`` (of ``layers`` of the teacher's layers;
    None: the CLI's 6) is distilled by unless told: the CLI, the app's dialog and its
    recipes all take it from here. The teacher's own layers: the method that led at that
    depth (``teacher_layers_method``); any other student: hinton (soft and gold labels),
    which needs neither the teacher's tokenizer nor its layers, and which the tables
    support for those students (the default model's recipe)."""
    if source != "teacher":
        return "hinton"
    return teacher_layers_method(layers)


def default_learning_rate(source: str, layers: int | None = None) -> float:
    """The peak learning rate a student from ``source`` (of ``layers`` of the teacher's
    layers; None: the CLI's 6) trains at unless told: the CLI, the app's dialog and its
    recipes all take it from here. Any other encoder (a Hugging Face model, possibly
    already fine-tuned on the corpus) keeps the fine-tuning rate."""
    if source in SMALL_SOURCES:
        return RECURRENT_LR
    if source == "teacher":
        shallow = layers is not None and layers <= SHALLOW_LAYERS
        return TEACHER_LAYERS_LR if shallow else DEEP_TEACHER_LAYERS_LR
    return TrainingConfig().learning_rate
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
                                "default all)")
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
    def recurrent(self) -> bool:
        return self.source in RECURRENT_SOURCES

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
    encoding: EncodingConfig = field(default_factory=EncodingConfig)
    # The default student is 6 of the teacher's layers: its rate and epochs, as the CLI's.
    training: TrainingConfig = field(default_factory=lambda: TrainingConfig(learning_rate=DEEP_TEACHER_LAYERS_LR,
                                                                            epochs=TEACHER_LAYERS_EPOCHS))
    loss: LossConfig = field(default_factory=LossConfig)  # the gold-label term
    teacher_cache: str = opt("auto", "keep the teacher's outputs in memory or on disk, or compute them at "
                                     "every step (none); auto: memory when it fits --cache-memory-mb; "
                                     "shared: on disk, kept for later runs with the same teacher and data "
                                     "(a resumed run, a sweep) in the models folder's .teacher-cache-shared",
                             choices=CACHE_MODES)
    cache_memory_mb: int = opt(4096, "auto cache: memory when the cache fits this many MB, else disk")

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
        self.student.validate()
        self.method.validate()
        self.encoding.validate()
        self.training.validate()
        self.loss.validate()
