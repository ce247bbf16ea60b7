"""The guided path from curated documents to a first distilled model, as one job.

``fine_tune_then_distill`` chains what a new user would otherwise run by hand:

1. fine-tune a teacher from a base encoder (:func:`fastbioner.train.teacher.train_teacher`),
   unless a teacher already exists (``teacher_config=None``);
2. distil it into a student (:func:`fastbioner.train.distill.runner.distill`);
3. compact the student as ``fastbioner compact`` does (vocabulary trimmed to the
   training data, weights in float16: :func:`fastbioner.models.compact.compact_model`; a
   convolutional student keeps its whole vocabulary, its table in int8),
   score the compacted weights on devel, and put them in place of the full-precision
   ones, where asked (``compact``; by default the defaults table's rule, which
   ``fastbioner distill`` follows too);
4. state the student's size against its parent (:class:`SizeCheck`).

Every part reports through one reporter (:func:`fastbioner.base.jobs.sub_progress` and
:func:`fastbioner.base.jobs.relay`), so one progress view follows the chain with events
monotonic from start to end, stages named ``teacher: train``, ``student: distill``,
``compact: write`` ...

Cancel: each part registers its model only when complete, so a cancel leaves
nothing registered that was not complete. A cancel during distillation keeps the
teacher fine-tuned before it: it is a whole, scored model, the expensive half of
the chain, and the next attempt distils from it directly (the dialog lists it as a
teacher) instead of fine-tuning again. A cancel during compaction leaves the
complete full-precision student (its compacted copy is only put in place once
written and scored).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from fastbioner.base import defaults as defaults_table
from fastbioner.base.config import TeacherConfig
from fastbioner.io.formats import read_tagged_files
from fastbioner.models.manifest import data_record, read_manifest, write_manifest
from fastbioner.train.distill.config import StudentConfig, default_epochs, default_learning_rate, default_method
from fastbioner.train.distill.methods import METHODS, MethodConfig
from fastbioner.base.errors import ModelError
from fastbioner.infer.evaluation import EvaluationReport, evaluate_model
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, relay, run_job, sub_progress
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.base.units import human_size

# The runs (torch, transformers) and compaction are imported when a job runs: recipes and
# their defaults are read without them (the app's dialogs, the CLI's help).

# Where the base encoders a teacher can be fine-tuned from are kept (the benchmarks read
# the same folder); $FASTBIONER_BASE_MODELS moves it.
BASE_MODELS_ENV = "FASTBIONER_BASE_MODELS"

# Shown under the recipes: where the settings come from, and no accuracy claimed for a
# user's own data. No figure here: they live in the defaults table (defaults.toml) and
# its decision records (docs/research/decisions.md), drawn from docs/research/benchmarks.md.
RECIPE_NOTE = ("Method, learning rate and epochs come from the library's defaults table, each chosen by "
               "the measurements in docs/research/benchmarks.md (the decisions are listed in "
               "docs/research/decisions.md); "
               "each recipe uses the method that led at its depth. Unlabelled abstracts (below), where "
               "you have them, raised every student they were tried with.")

# The CLI's rule for a student of the teacher's own layers (the defaults table).
RECIPE_EPOCHS = default_epochs("teacher")


@dataclass(frozen=True)
class Recipe:
    """A named set of distillation settings for someone who does not know distillation:
    a student of ``layers`` layers taken from the teacher, distilled by the CLI's method
    for a student of that depth (the one that led there in the tables, at its own
    temperature) at the CLI's learning rate for ``RECIPE_EPOCHS``."""

    name: str
    layers: int
    summary: str
    epochs: int = RECIPE_EPOCHS

    def method(self, teacher_layers: int | None = None) -> str:
        """The CLI's method for the student this recipe gives a teacher of ``teacher_layers``."""
        return default_method("teacher", self.student_layers(teacher_layers))

    def temperature(self, teacher_layers: int | None = None) -> float:
        return METHODS[self.method(teacher_layers)].temperature

    def learning_rate(self, teacher_layers: int | None = None) -> float:
        """The CLI's rate for the student this recipe gives a teacher of ``teacher_layers``
        (a deeper student trains at a lower rate)."""
        return default_learning_rate("teacher", self.student_layers(teacher_layers))

    def student_layers(self, teacher_layers: int | None) -> int:
        """The recipe's layer count, always fewer than the teacher's (a student as deep
        as its teacher compresses nothing)."""
        if teacher_layers:
            return max(1, min(self.layers, teacher_layers - 1))
        return self.layers

    def apply(self, config, teacher_layers: int | None = None):
        """``config`` with the recipe's student, method and training settings."""
        training = replace(config.training, epochs=self.epochs, learning_rate=self.learning_rate(teacher_layers))
        return replace(config, student=StudentConfig(source="teacher", layers=self.student_layers(teacher_layers)),
                       method=MethodConfig(name=self.method(teacher_layers),
                                           temperature=self.temperature(teacher_layers)), training=training)


RECIPES = (Recipe("Fast", 3, "a 3-layer student: the quickest to train and to run"),
           Recipe("Balanced", 4, "a 4-layer student: between the two"),
           Recipe("Accurate", 6, "a 6-layer student: the slowest of the three"))
DEFAULT_RECIPE = "Balanced"


def recipe(name: str) -> Recipe:
    for r in RECIPES:
        if r.name == name:
            return r
    raise KeyError(f"no recipe named {name!r} (known: {', '.join(r.name for r in RECIPES)})")


def student_layer_choices(teacher_layers: int | None, common: tuple[int, ...] = (6, 4, 3, 2, 1)) -> list[int]:
    """The usual student depths that are shallower than the teacher (all of them when
    the teacher's depth is not known)."""
    return [n for n in common if not teacher_layers or n < teacher_layers]


def base_models_folder() -> Path:
    return Path(os.environ.get(BASE_MODELS_ENV) or Path.home() / ".cache" / "fastbioner" / "base-models")


def base_encoders(folder: str | Path | None = None) -> list[Path]:
    """The installed base encoders: sub-folders of :func:`base_models_folder` that hold
    a Hugging Face ``config.json`` (none when the folder is absent)."""
    root = Path(folder) if folder is not None else base_models_folder()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "config.json").is_file())


def hub_cache_folder() -> Path:
    """Where Hugging Face keeps the models it downloaded (as ``huggingface_hub`` finds it)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def cached_hub_encoders(folder: str | Path | None = None) -> list[str]:
    """The Hugging Face ids already downloaded (a snapshot with a ``config.json`` in the
    hub cache): a teacher can be fine-tuned from them offline, by the id."""
    root = Path(folder) if folder is not None else hub_cache_folder()
    if not root.is_dir():
        return []
    ids = []
    for model in sorted(root.glob("models--*")):
        if any((snap / "config.json").is_file() for snap in (model / "snapshots").glob("*")):
            ids.append(model.name[len("models--"):].replace("--", "/"))
    return ids


def encoder_layers(ref: str | Path) -> int | None:
    """The layer count of a model folder (from its ``config.json``), or None when it
    cannot be read here (a Hugging Face id to be downloaded)."""
    config = Path(ref).expanduser() / "config.json"
    if not config.is_file() and "/" in str(ref):  # a hub id downloaded before: its cached config
        snapshots = hub_cache_folder() / f"models--{str(ref).replace('/', '--')}" / "snapshots"
        config = next((c for c in sorted(snapshots.glob("*/config.json"))), config)
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    layers = data.get("num_hidden_layers", data.get("n_layers"))
    return layers if isinstance(layers, int) else None


@dataclass(frozen=True)
class SizeCheck:
    """A student's size on disk against its parent's (the teacher it was distilled from)."""

    parent: str
    parent_bytes: int
    student_bytes: int

    @property
    def ratio(self) -> float | None:
        return self.student_bytes / self.parent_bytes if self.parent_bytes else None

    @property
    def smaller(self) -> bool:
        return bool(self.parent_bytes) and self.student_bytes < self.parent_bytes

    def describe(self) -> str:
        if not self.parent_bytes:
            return f"{human_size(self.student_bytes)} (the size of its teacher {self.parent} is not known)"
        verdict = "smaller than" if self.smaller else "NOT smaller than"
        share = 100 * self.student_bytes / self.parent_bytes
        return (f"{human_size(self.student_bytes)}, {share:.0f}% of the size of its teacher "
                f"{self.parent} ({human_size(self.parent_bytes)}): {verdict} its teacher")


def size_check(entry: ModelEntry) -> SizeCheck | None:
    """The size check of a registered student, from its manifest (None for a model
    with no recorded parent size)."""
    comp = entry.manifest.compression or {}
    if not comp.get("teacher"):
        return None
    return SizeCheck(str(comp["teacher"]), int(comp.get("teacher_size_bytes") or 0),
                     int(entry.manifest.size_bytes or comp.get("student_size_bytes") or 0))


@dataclass
class GuidedResult:
    entry: ModelEntry                   # the registered student, as it ends up
    report: EvaluationReport | None     # devel scores of the registered student's weights
    teacher: str                        # the teacher it was distilled from
    teacher_report: EvaluationReport | None  # devel scores of a teacher fine-tuned here
    fine_tuned: bool                    # True when the chain fine-tuned the teacher
    size: SizeCheck | None
    compaction: dict | None             # the compaction's figures (CompactionReport.to_dict())
    notes: list[str] = field(default_factory=list)


def _check_names(registry: Registry, *names: str) -> None:
    """Refuse taken or clashing names before any training: a clash found after an
    hour of fine-tuning would waste it."""
    seen: set[str] = set()
    for name in names:
        registry.check_name(name)
        if name in seen:
            raise ModelError(f"the teacher and the student need different names (both {name!r})")
        seen.add(name)
        if registry.exists(name):
            raise ModelError(f"a model named {name!r} already exists; choose another name or delete it")


def fine_tune_then_distill(teacher_config: TeacherConfig | None, teacher_name: str | None, distill_config,
                           student_name: str, *, compact: bool | None = None, registry: Registry | None = None,
                           resume: bool = False,
                           on_event: Optional[EventCallback] = None,
                           cancel: Optional[CancelToken] = None) -> GuidedResult:
    """Fine-tune ``teacher_config.base_model`` as ``teacher_name``, distil it into
    ``student_name`` with ``distill_config`` (its ``teacher`` is set to the new one),
    then compact the student if ``compact`` (None: the defaults table's rule, the one
    ``fastbioner distill`` follows too: docs/research/decisions.md#compaction). With ``teacher_config``
    None the chain starts at distillation, from ``distill_config.teacher``. One job:
    progress events, cancel (see the module's note on what a cancel keeps).
    ``resume``: each run continues from its checkpoint, where an interrupted run
    left one."""
    registry = registry or Registry()
    if compact is None:
        compact = compact_by_default()
    if teacher_config is not None:
        if not teacher_name:
            raise ModelError("a name for the new teacher is required")
        distill_config = replace(distill_config, teacher=teacher_name)
        teacher_config.validate()
        _check_names(registry, teacher_name, student_name)
    else:
        _check_names(registry, student_name)
    distill_config.validate()

    def job(reporter: ProgressReporter) -> GuidedResult:
        from fastbioner.train.distill.runner import distill
        from fastbioner.train.teacher import train_teacher

        notes: list[str] = []
        teacher_report = None
        if teacher_config is not None:
            assert teacher_name is not None  # checked before the job starts
            trained = train_teacher(teacher_config, teacher_name, registry=registry, resume=resume,
                                    on_event=relay(sub_progress(reporter, "teacher"), "teacher: "),
                                    cancel=reporter.cancel)
            teacher_report = trained.report
            notes.append(f"teacher {teacher_name} fine-tuned from {teacher_config.base_model}")
        result = distill(distill_config, student_name, registry=registry, resume=resume,
                         on_event=relay(sub_progress(reporter, "student"), "student: "), cancel=reporter.cancel)
        entry, report, compaction = result.entry, result.report, None
        assert entry is not None  # one process: it registers the student
        if compact:
            try:
                entry, report, compaction = _compact_in_place(entry, result.report, distill_config,
                                                              registry, reporter)
                vocabulary = (f"whole vocabulary ({compaction['vocab_after']} pieces), embedding table in int8"
                              if compaction["vocabulary_kept"] else
                              f"vocabulary {compaction['vocab_before']} -> {compaction['vocab_after']} pieces")
                notes.append(f"compacted: {vocabulary}, weights in {compaction['dtype']}")
            except ModelError as exc:  # a vocabulary that cannot be trimmed (not WordPiece): keep full precision
                notes.append(f"not compacted ({exc}); the student keeps full precision")
        return GuidedResult(entry, report, distill_config.teacher, teacher_report, teacher_config is not None,
                            size_check(entry), compaction, notes)

    return run_job(job, on_event, cancel)


def compact_by_default() -> bool:
    """Whether a distillation compacts its student unless told: the defaults table's
    rule for the CLI and the library (the app's dialog compacts unless told otherwise:
    docs/research/decisions.md#compaction)."""
    return defaults_table.table().compact_after_distillation


def compact_student(entry: ModelEntry, report: EvaluationReport | None, distill_config, *,
                    registry: Registry | None = None, on_event: Optional[EventCallback] = None,
                    cancel: Optional[CancelToken] = None) -> tuple[ModelEntry, EvaluationReport | None, dict]:
    """Compact a registered student in place, as the guided path does after distilling
    (``fastbioner distill --compact``): the entry, its devel scores and the compaction's
    figures. One job; a cancel leaves the full-precision student registered."""
    registry = registry or Registry()
    return run_job(lambda reporter: _compact_in_place(entry, report, distill_config, registry, reporter),
                   on_event, cancel)


def _training_texts(files) -> list[str]:
    """The training sentences as text: the pieces the compacted vocabulary keeps."""
    return [" ".join(s.words) for s in read_tagged_files(files)]


def _compact_in_place(entry: ModelEntry, report: EvaluationReport | None, config, registry: Registry,
                      reporter: ProgressReporter) -> tuple[ModelEntry, EvaluationReport | None, dict]:
    """Replace the registered student by its compacted copy, scored on devel first
    (half precision moves the scores a little: the card must show the weights in
    use). Until the final rename the full-precision student stays registered."""
    import torch

    from fastbioner.models.compact import compact_model, keeps_whole_vocabulary

    whole = keeps_whole_vocabulary(entry.path)  # a convolutional student: int8 table instead of trimming
    texts = None if whole else _training_texts(config.train_files)
    with registry.staging() as folder:
        figures = compact_model(entry.path, folder, texts, dtype=torch.float16, int8_embeddings=whole,
                                on_event=relay(sub_progress(reporter, "compact"), "compact: "),
                                cancel=reporter.cancel).to_dict()
        manifest = read_manifest(folder)
        manifest.parameters = figures["parameters_after"]
        manifest.compression = {**manifest.compression, "compacted": figures}
        if not whole:
            manifest.training_data = [*manifest.training_data,
                                      *(data_record(p, "vocabulary") for p in config.train_files)]
        write_manifest(folder, manifest)
        if config.dev_file:
            forward = relay(sub_progress(reporter, "compact"), "compact: ")
            # The scores go to the manifest and the result, not into the event stream:
            # a progress view plots metrics against training steps, where the scoring's
            # own step count would put a false point.
            report = evaluate_model(folder, config.dev_file, device=config.training.device,
                                    batch_size=config.training.eval_batch_size, registry=registry,
                                    on_event=lambda e: forward(replace(e, metrics={})), cancel=reporter.cancel)
            report.source = {"model": entry.name, "file": Path(config.dev_file).name}
            manifest.metrics = report.to_dict()
            write_manifest(folder, manifest)
        reporter.check()  # a cancel now still leaves the full-precision student in place
        installed = registry.install(folder, entry.name, overwrite=True)
    # The size against the parent, now that the compacted folder's size is known.
    compression = {**installed.manifest.compression, "student_size_bytes": installed.manifest.size_bytes}
    parent_bytes = compression.get("teacher_size_bytes")
    if parent_bytes:
        compression["size_ratio"] = round(installed.manifest.size_bytes / parent_bytes, 4)
    installed = registry.update_manifest(entry.name, compression=compression)
    return installed, report, figures
