"""The form every training dialog shares (:class:`RunForm`: data, epochs, learning rate,
batch size, device, the new model's name, whether the run time is measured first) and
the teacher's (:class:`TeacherForm`); the distillation form is :mod:`.distill`. A form
makes the core's typed config and the job that runs it; the dialog only shows it."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any, Callable, Sequence

from fastbioner import Registry, TeacherConfig, TrainingConfig  # the public API; no torch
from fastbioner.models import precision
from fastbioner.base.errors import FastBioNERError

from .fields import Form, Setting

# DRET's fine-tuning knobs: TrainingConfig's fields of the same names.
DRET_FIELDS = ("freeze_embeddings", "embedding_lr_scale", "layer_lr_decay", "head_lr_scale")
DEVICES = ("auto", "cpu", "cuda")  # where a run (or the app's models) runs: auto takes CUDA when present
# File and folder names that say nothing about the data (a name is made from the others).
_GENERIC = {"train", "training", "dev", "devel", "test", "data", "corpus", "iob", "bio", "conll", "tsv",
            "reviewed", "files", "abstracts"}


def data_stem(paths: Sequence[str], fallback: str) -> str:
    """A short word naming the training data: the first file's name, or its folder's
    when the file is called ``train.tsv`` (``…/bc5cdr/iob/train.tsv`` -> ``bc5cdr``)."""
    for path in paths:
        p = Path(path)
        for part in (p.stem, *(a.name for a in p.parents)):
            word = re.split(r"[-_.\s]+", part.lower())[0] if part else ""
            if word and word not in _GENERIC and not word.startswith("reviewed"):
                return re.sub(r"[^a-z0-9]+", "", word)[:24] or fallback
    return fallback


def unique_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3`` … when the registry has it already."""
    registry = Registry()
    name, n = base, 1
    while registry.exists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def existing_file(_form: Form, path: str) -> bool:
    """A remembered file comes back only while it is still there."""
    return Path(path).exists()


class RunForm(Form):
    """What every training form has. ``reviewed``: the project's reviewed documents
    (used by default when there are some); ``threads``: the app's CPU threads."""

    kind = ""
    title = ""
    noun = "model"

    train_files = Setting([], check=existing_file)
    use_curated = Setting(False, remember=False)
    dev_file = Setting("")
    # The CLI's defaults, from the same dataclass.
    epochs = Setting(TrainingConfig().epochs)
    learning_rate = Setting(TrainingConfig().learning_rate)
    batch_size = Setting(TrainingConfig().batch_size)
    device = Setting("auto", choices=DEVICES)
    cpu_bf16 = Setting(False, remember=False)  # off unless asked, as the CLI's --cpu-bf16
    name = Setting("", remember=False)
    estimate_first = Setting(True)
    # DRET's fine-tuning knobs, under Advanced (they reach the config only while it is open):
    # the CLI's defaults, from the same dataclass (docs/explanation/dret.md).
    freeze_embeddings = Setting(TrainingConfig().freeze_embeddings)
    embedding_lr_scale = Setting(TrainingConfig().embedding_lr_scale)
    layer_lr_decay = Setting(TrainingConfig().layer_lr_decay)
    head_lr_scale = Setting(TrainingConfig().head_lr_scale)

    def __init__(self, *, reviewed: int = 0, threads: int = 0, fallback_files: Sequence[str] = (), **initial: Any):
        self.reviewed = reviewed
        self.threads = threads
        self.fallback_files = list(fallback_files)  # trained on when nothing is chosen (the bundled samples)
        super().__init__(use_curated=reviewed > 0, **initial)

    def follow(self, name: str) -> None:
        if name == "device" and not self.bf16_allowed():
            self.put(cpu_bf16=False)

    def bf16_allowed(self) -> bool:
        """bf16 steps on the CPU only where it has them natively, and not on the GPU
        (on "auto" a GPU, if any, takes its own mixed precision and ignores this)."""
        return self.device != "cuda" and precision.cpu_flags_say_bf16() is not False  # torch-free

    # What the form makes ----------------------------------------------------------------
    def advanced_open(self) -> bool:
        """Whether the Advanced section is open: its settings count only then."""
        return bool(getattr(self, "advanced", False))

    def training(self) -> TrainingConfig:
        knobs = {f: self.get(f) for f in DRET_FIELDS} if self.advanced_open() else {}
        return TrainingConfig(epochs=self.epochs, learning_rate=self.learning_rate, batch_size=self.batch_size,
                              device=self.device, threads=self.threads,
                              cpu_bf16=self.cpu_bf16 and self.bf16_allowed(), **knobs)

    def falls_back(self) -> list[str]:
        """The files trained on because none is chosen (empty when some are)."""
        return [] if self.train_files or self.use_curated else list(self.fallback_files)

    def training_files(self, reviewed_file: Callable[[], str | None]) -> list[str]:
        """The chosen files, and the reviewed documents' file (``reviewed_file()``, made
        only when they are used); with neither, the fallback files."""
        train = list(self.train_files) or self.falls_back()
        if self.use_curated:
            curated = reviewed_file()
            if curated is None:
                raise FastBioNERError("no reviewed documents in this project to train on (mark them reviewed: Ctrl+M)")
            train.append(curated)
        return train

    def config(self, train: list[str]):
        """The core's config of this run, trained on ``train``."""
        raise NotImplementedError

    def teacher_config(self, config):
        """The teacher fine-tuned before ``config``'s run, if any (None)."""
        return None

    def checked(self, train: list[str]):
        """``(config, teacher config or None)``, both validated; raises the core's errors."""
        config = self.config(train)
        teacher = self.teacher_config(config)
        if teacher is not None:
            teacher.validate()
        config.validate()
        return config, teacher

    def run_key(self, config, teacher) -> dict:
        """What a measured run time is for: the same key, the same run."""
        return {"config": config.to_dict(), "teacher": teacher.to_dict() if teacher is not None else None}

    def job(self, config, teacher, name: str) -> tuple[str, Callable]:
        """The job's title and its function ``run(on_event, cancel)``."""
        raise NotImplementedError

    def default_name(self) -> str:
        """A readable name: the data's word, the kind of model and the day
        (``bc5cdr-student-2026-12-05``), numbered when that name is taken."""
        return unique_name(f"{data_stem(self.train_files, 'my')}-{self.noun}-{date.today():%Y-%m-%d}")

    def model_name(self) -> str:
        return self.name.strip() or self.default_name()


class TeacherForm(RunForm):
    """Model > Fine-tune a teacher…: a base encoder trained on annotated documents."""

    kind = "teacher"
    title = "Fine-tune a teacher"
    noun = "teacher"

    base = Setting("")
    advanced = Setting(False)

    def __init__(self, *, encoders: Sequence[Path | str] = (), **initial: Any):
        # The installed base encoders (those `fastbioner transfer-embeddings` made among them)
        # by folder name, and the Hugging Face ids already downloaded, as typed.
        self.encoders = {(p.name if isinstance(p, Path) else str(p)): str(p) for p in encoders}
        super().__init__(**initial)

    def base_ref(self) -> str:
        """The chosen base encoder: an installed folder's path, or what was typed."""
        text = self.base.strip()
        return self.encoders.get(text, text)

    def config(self, train: list[str]):
        return TeacherConfig(base_model=self.base_ref(), train_files=train,
                             dev_file=self.dev_file.strip() or None, training=self.training())

    def job(self, config, teacher, name: str) -> tuple[str, Callable]:
        def run(on_event, cancel):
            from fastbioner import train_teacher  # torch: in the job's thread, not at the dialog's opening

            return train_teacher(config, name, on_event=on_event, cancel=cancel)
        return f"Fine-tune {name}", run
