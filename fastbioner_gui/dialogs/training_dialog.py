"""The dialogs that launch a training run as a background job: *Fine-tune a teacher*
(:class:`TeacherDialog`) and *Distil a student*
(:class:`~.distill_dialog.DistillDialog`, in its own module), two forms over one base
(:class:`TrainingForm`). They only fill the core's typed configs
(:class:`TeacherConfig`, :class:`DistillConfig`) and hand them to the core job with
the jobs panel's progress callback and cancel.

Written for curators: the distillation form opens on a recipe described by what a
curator weighs (the time it takes on this machine, once measured, and the quality
it reached in the benchmarks, read from the library's defaults), the reviewed
documents of the project are used when there are any, the last settings are
remembered (QSettings, in the app's settings file), new models get readable names
(``bc5cdr-student-2026-12-05``), and the research settings and their vocabulary
wait under *Advanced*.

Layout: the form scrolls inside the dialog, so opening *Advanced* never pushes
Start and Cancel off the screen; the dialog grows to fit what is shown, up to the
screen's height, and shrinks back when it is folded again.

The run time is measured before the run starts (a few real steps). The reviewed
documents are written to a file named by its content (:mod:`..reviewed_data`), so
pressing Start again with the same settings starts the run measured for them."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea,
                               QSpinBox, QVBoxLayout, QWidget)

from fastbioner import SMALL_SOURCES  # the public API; loads a dataclass module, no torch
from fastbioner.base.errors import FastBioNERError

from ..jobs import QUIET_KIND, Job, JobManager
from ..models.workspace import Workspace
from ..reviewed_data import reviewed_count, reviewed_training_file
from ..settings import DEVICES, AppSettings, settings_store
from .training_widgets import FileList, LearningRateBox

STUDENT_SOURCES = ("teacher", *SMALL_SOURCES)
CUSTOM = "Custom"  # the recipe shown once a setting is changed by hand
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


def recipe_f1() -> dict[int, tuple[float, float]]:
    """The leading method's BC5CDR devel F1 (mean, spread) by student depth, from the
    library's defaults table (fastbioner/base/defaults.toml), not a copy."""
    from fastbioner.train.distill.config import teacher_layers_f1

    return teacher_layers_f1()


def unique_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3`` … when the registry has it already."""
    from fastbioner.models.registry import Registry

    registry = Registry()
    name, n = base, 1
    while registry.exists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def TrainingDialog(kind: str, workspace: Workspace, jobs: JobManager, settings: AppSettings,
                   teachers: Sequence[str] = (), parent: QWidget | None = None,
                   manifests: dict[str, dict] | None = None) -> "TrainingForm":
    """The form of ``kind`` (``"distill"`` or ``"teacher"``)."""
    from .distill_dialog import DistillDialog  # its own module; it builds on TrainingForm below

    cls = DistillDialog if kind == "distill" else TeacherDialog
    return cls(workspace, jobs, settings, teachers, parent, manifests=manifests)


class TrainingForm(QDialog):
    """What the two forms share: training and devel data (and the project's reviewed
    documents), epochs, learning rate, batch size, device, the new model's name, the
    run-time measurement, Start and Cancel, the scrolling layout and the memory of the
    last settings."""

    jobStarted = Signal(object)  # Job
    kind = ""
    window_title = ""
    noun = "model"

    def __init__(self, workspace: Workspace, jobs: JobManager, settings: AppSettings,
                 teachers: Sequence[str] = (), parent: QWidget | None = None,
                 manifests: dict[str, dict] | None = None):
        super().__init__(parent)
        from fastbioner.base.config import TrainingConfig

        self.workspace = workspace
        self.jobs = jobs
        self.settings = settings
        self.manifests = dict(manifests or {})  # registry manifests by name (layers, size of each teacher)
        self._applying = False  # a recipe is filling the form: its changes are not "by hand"
        self.setWindowTitle(self.window_title)
        # The form scrolls; the run time, the error and the buttons stay below it, in view.
        self.body = QWidget()
        layout = QVBoxLayout(self.body)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.body)
        outer = QVBoxLayout(self)
        outer.addWidget(self.scroll, 1)
        form = QFormLayout()
        self._top_rows(layout, form, teachers)
        self.train_files = FileList(settings.data_folder)
        self.reviewed = reviewed_count(workspace)
        self.use_curated = QCheckBox(self._reviewed_text())
        self.use_curated.setToolTip("Their gold and accepted entities; undecided suggestions are left out")
        self.use_curated.setChecked(self.reviewed > 0)
        form.addRow("Training data", self.train_files)
        form.addRow("", self.use_curated)
        self.dev_file = QLineEdit(
            placeholderText="optional: an annotated file to pick the best step and score the model")
        dev_browse = QPushButton("Browse…")
        dev_browse.clicked.connect(self._browse_dev)
        dev_row = QHBoxLayout()
        dev_row.addWidget(self.dev_file, 1)
        dev_row.addWidget(dev_browse)
        form.addRow("Devel data", dev_row)
        self._data_rows(form)
        self.epochs = QSpinBox(minimum=1, maximum=100, value=TrainingConfig().epochs)
        # The CLI's default, from the same dataclass, written as people write it.
        self.learning_rate = LearningRateBox(TrainingConfig().learning_rate)
        self.batch_size = QSpinBox(minimum=1, maximum=1024, value=16)
        self._follow_rules()
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        self.name = QLineEdit(placeholderText=f"(a name is made up: {self.default_name()})")
        form.addRow("Epochs", self.epochs)
        form.addRow("Learning rate", self.learning_rate)
        form.addRow("Batch size", self.batch_size)
        form.addRow("Device", self.device)
        self.cpu_bf16 = QCheckBox("bf16 training on this CPU (faster steps; weights stay fp32)")
        self.cpu_bf16.setToolTip("Runs each step under bfloat16 autocast where the CPU has it natively "
                                 "(AVX512-BF16 or AMX); about 1.5x faster steps on an AVX512-BF16 EPYC. "
                                 "Not used on a GPU, which has its own mixed precision.")
        self.device.currentTextChanged.connect(lambda _d: self._cpu_bf16_allowed())
        self._cpu_bf16_allowed()
        form.addRow("", self.cpu_bf16)
        form.addRow("New model's name", self.name)
        self._bottom_rows(form)
        layout.addLayout(form)
        self._advanced_rows(layout)
        layout.addStretch(1)
        # The run time is measured, not guessed: a few real steps of these settings,
        # shown before the run starts (next to Start).
        self.estimate_button = QPushButton("Estimate run time")
        self.estimate_button.setToolTip("Time a few real training steps with these settings on this machine "
                                        "and extrapolate to the whole run; nothing is trained or saved")
        self.estimate_button.clicked.connect(self.estimate)
        self.estimate_label = QLabel("not measured yet")
        self.estimate_label.setWordWrap(True)
        self.estimate_first = QCheckBox("measure the run time before starting")
        self.estimate_first.setChecked(True)
        self.estimate_first.setToolTip("Start first measures a few steps and shows the estimate here; "
                                       "press Start again to run")
        estimate_row = QHBoxLayout()
        estimate_row.addWidget(QLabel("<b>Run time</b>"))
        estimate_row.addWidget(self.estimate_button)
        estimate_row.addWidget(self.estimate_label, 1)
        outer.addLayout(estimate_row)
        outer.addWidget(self.estimate_first)
        self.estimate_job: Job | None = None
        self._estimated: dict | None = None  # the settings the shown estimate is for
        self._start_after_estimate = False
        self.error = QLabel()
        self.error.setStyleSheet("color:#b00")
        self.error.setWordWrap(True)
        self.error.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.start_button = buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons = buttons
        buttons.accepted.connect(self.start)
        buttons.rejected.connect(self.reject)
        outer.addWidget(self.error)
        outer.addWidget(buttons)
        self._finish()
        self.restore_settings()
        self.fit_to_screen()

    # Hooks of the two forms -------------------------------------------------------
    def _top_rows(self, layout: QVBoxLayout, form: QFormLayout, teachers: Sequence[str]) -> None: ...

    def _data_rows(self, form: QFormLayout) -> None: ...

    def _follow_rules(self) -> None: ...

    def _bottom_rows(self, form: QFormLayout) -> None: ...

    def _advanced_rows(self, layout: QVBoxLayout) -> None: ...

    def _finish(self) -> None: ...

    def build_config(self, train: list[str] | None = None):
        raise NotImplementedError

    def teacher_config(self, config):
        return None

    def run_function(self, config, teacher, name: str):
        raise NotImplementedError

    def teacher_layers(self) -> int | None:
        return None

    # Layout ---------------------------------------------------------------------------
    def fit_to_screen(self) -> None:
        """As tall as what is shown needs, never past the screen (the form scrolls
        then); called when a section opens or folds, so the dialog follows."""
        self.body.adjustSize()
        need_w = self.body.minimumSizeHint().width() + self.scroll.verticalScrollBar().sizeHint().width() + 24
        width = max(680, need_w)
        chrome = self.sizeHint().height() - self.scroll.sizeHint().height()
        want = self.body.layout().totalHeightForWidth(width) if self.body.layout().hasHeightForWidth() else -1
        want = max(want, self.body.sizeHint().height(), self.body.minimumSizeHint().height()) + max(0, chrome) + 8
        screen = self.screen() or (self.parentWidget().screen() if self.parentWidget() else None)
        room = int(screen.availableGeometry().height() * 0.9) if screen is not None else want
        self.scroll.setMinimumWidth(need_w)
        self.resize(width, min(want, room))

    def _refit(self) -> None:
        QTimer.singleShot(0, self.fit_to_screen)

    # Data -----------------------------------------------------------------------------
    def _reviewed_text(self) -> str:
        n = self.reviewed
        if not n:
            return "and the reviewed documents of this project (none yet: Ctrl+M marks one reviewed)"
        return f"and the {n} reviewed document{'s' if n != 1 else ''} of this project"

    def _browse_dev(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Devel data (BIO / CoNLL)", self.settings.data_folder)
        if path:
            self.dev_file.setText(path)

    def curated_training_file(self) -> str | None:
        """The project's reviewed documents as a BIO file (gold and accepted entities),
        named by its content; None when there are none."""
        return reviewed_training_file(self.workspace)

    def _training_files(self) -> list[str]:
        train = self.train_files.paths()
        if self.use_curated.isChecked():
            curated = self.curated_training_file()
            if curated is None:
                raise FastBioNERError("no reviewed documents in this project to train on (mark them reviewed: Ctrl+M)")
            train.append(curated)
        return train

    def _training(self):
        from fastbioner.base.config import TrainingConfig

        return TrainingConfig(epochs=self.epochs.value(), learning_rate=self.learning_rate.value(),
                              batch_size=self.batch_size.value(), device=self.device.currentText(),
                              threads=self.settings.threads, cpu_bf16=self.cpu_bf16.isChecked())

    def _cpu_bf16_allowed(self) -> None:
        from fastbioner.models.precision import cpu_flags_say_bf16  # torch-free: the GUI thread

        # On "auto" a GPU, if any, takes its own mixed precision and ignores this.
        allowed = self.device.currentText() != "cuda" and cpu_flags_say_bf16() is not False
        self.cpu_bf16.setEnabled(allowed)
        if not allowed:
            self.cpu_bf16.setChecked(False)

    def default_name(self) -> str:
        """A readable name: the data's word, the kind of model and the day
        (``bc5cdr-student-2026-12-05``), numbered when that name is taken."""
        paths = self.train_files.paths() if hasattr(self, "train_files") else []
        return unique_name(f"{data_stem(paths, 'my')}-{self.noun}-{date.today():%Y-%m-%d}")

    def checked_configs(self):
        try:
            config = self.build_config()
            teacher = self.teacher_config(config)
            if teacher is not None:
                teacher.validate()
            config.validate()
            self._check_more(config)
        except (FastBioNERError, OSError) as exc:
            self.show_error(str(exc))
            return None
        return config, teacher

    def _check_more(self, config) -> None:
        pass

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    # Remembered settings ------------------------------------------------------------
    def _remembered(self) -> dict:
        """What is remembered from one opening to the next (by the form's kind)."""
        return {"train_files": self.train_files.paths(), "dev_file": self.dev_file.text(),
                "epochs": self.epochs.value(), "learning_rate": self.learning_rate.value(),
                "batch_size": self.batch_size.value(), "device": self.device.currentText(),
                "estimate_first": self.estimate_first.isChecked()}

    def _restore(self, values: dict) -> None:
        if isinstance(values.get("train_files"), list):
            self.train_files.add_paths([p for p in values["train_files"] if isinstance(p, str) and Path(p).exists()])
        if isinstance(values.get("dev_file"), str):
            self.dev_file.setText(values["dev_file"])
        for box, key in ((self.epochs, "epochs"), (self.batch_size, "batch_size")):
            if isinstance(values.get(key), int):
                box.setValue(values[key])
        if isinstance(values.get("learning_rate"), float):
            self.learning_rate.setValue(values["learning_rate"])
        if values.get("device") in DEVICES:
            self.device.setCurrentText(values["device"])
        if isinstance(values.get("estimate_first"), bool):
            self.estimate_first.setChecked(values["estimate_first"])

    def restore_settings(self) -> None:
        import json

        raw = settings_store().value(f"training/{self.kind}")
        try:
            values = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:  # a hand-edited file: the defaults, never a crash
            values = None
        if isinstance(values, dict):
            self._applying, was = True, self._applying
            try:
                self._restore(values)
            finally:
                self._applying = was

    def save_settings(self) -> None:
        import json

        store = settings_store()
        store.setValue(f"training/{self.kind}", json.dumps(self._remembered()))
        store.sync()

    # The run time ---------------------------------------------------------------
    def _settings_key(self, config, teacher) -> dict:
        return {"config": config.to_dict(), "teacher": teacher.to_dict() if teacher is not None else None}

    def estimate(self) -> Job | None:
        """Measure a few steps of the current settings in the background; the label
        shows the progress, then the estimate. When a teacher is fine-tuned first,
        its fine-tuning is what is measured (the distillation after it needs the
        teacher to exist)."""
        self.cancel_estimate()
        checked = self.checked_configs()
        if checked is None:
            return None
        config, teacher = checked
        self.show_error("")
        from fastbioner.train.estimate import estimate_run

        probe = teacher if teacher is not None else config
        job = self.jobs.start("Estimate run time",
                              lambda on_event, cancel: estimate_run(probe, on_event=on_event, cancel=cancel),
                              kind=QUIET_KIND)
        self.estimate_job = job
        key = self._settings_key(config, teacher)
        self.estimate_label.setText("measuring…")
        prefix = "fine-tuning the teacher: " if teacher is not None else ""
        suffix = "; the distillation after it is measured once the teacher exists" if teacher is not None else ""
        job.progress.connect(lambda e: self._estimate_progress(job, e))
        job.succeeded.connect(lambda r: self._estimate_shown(job, f"{prefix}{r.describe()}{suffix}", key, r))
        job.failed.connect(lambda m: self._estimate_shown(job, f"could not measure: {m}"))
        job.cancelled.connect(lambda: self._estimate_shown(job, "not measured"))
        return job

    def _estimate_progress(self, job: Job, event) -> None:
        if job is self.estimate_job and event.stage == "estimate" and event.step:
            self.estimate_label.setText(f"measuring: step {event.step} of {event.total}…")
        elif job is self.estimate_job and event.stage != "estimate" and not event.step:
            self.estimate_label.setText(f"measuring: {event.message}…")

    def _estimate_shown(self, job: Job, text: str, key: dict | None = None, result=None) -> None:
        if job is self.estimate_job:
            self.estimate_label.setText(text)
            self.estimate_job = None
            self._estimated = key
            if key is not None and result is not None:
                self._measured(result)
            if key is not None and self._start_after_estimate:
                self.start_button.setText("Start now")
                self.start_button.setToolTip("The run time above is measured: press to start the run")
            self._start_after_estimate = False

    def _measured(self, result) -> None:
        pass

    def cancel_estimate(self) -> None:
        if self.estimate_job is not None and self.estimate_job.running:
            self.estimate_job.cancel()
        self.estimate_job = None

    def done(self, result: int) -> None:  # closing the dialog in any way stops a measurement
        self.cancel_estimate()
        self.save_settings()  # Cancel keeps what was set too: the next opening starts from it
        super().done(result)

    # Starting -------------------------------------------------------------------
    def start(self):
        """Start the run. With *measure the run time before starting* on and no
        estimate shown for these settings, the first press measures and shows the
        run time instead (the button then reads *Start now*); the next press with
        the same settings starts."""
        name = self.name.text().strip() or self.default_name()
        checked = self.checked_configs()
        if checked is None:
            return None
        config, teacher = checked
        self.show_error("")
        self.save_settings()
        if self.estimate_first.isChecked() and self._estimated != self._settings_key(config, teacher):
            if self.estimate_job is None:
                self._start_after_estimate = True
                self.estimate()
            return None
        title, run = self.run_function(config, teacher, name)
        self.cancel_estimate()
        job = self.jobs.start(title, run, kind="train", config=config, model_name=name)
        self.jobStarted.emit(job)
        self.accept()
        return job


class TeacherDialog(TrainingForm):
    """Model > Fine-tune a teacher…: a base encoder trained on annotated documents."""

    kind = "teacher"
    window_title = "Fine-tune a teacher"
    noun = "teacher"

    def _top_rows(self, layout: QVBoxLayout, form: QFormLayout, teachers: Sequence[str]) -> None:
        self.base = QLineEdit(placeholderText="Hugging Face id (dmis-lab/biobert-base-cased-v1.1) or folder")
        form.addRow("Base model", self.base)

    def build_config(self, train: list[str] | None = None):
        from fastbioner.base.config import TeacherConfig

        train = self._training_files() if train is None else train
        return TeacherConfig(base_model=self.base.text().strip(), train_files=train,
                             dev_file=self.dev_file.text().strip() or None, training=self._training())

    def run_function(self, config, teacher, name: str):
        from fastbioner.train.teacher import train_teacher

        def run(on_event, cancel):
            return train_teacher(config, name, on_event=on_event, cancel=cancel)
        return f"Fine-tune {name}", run

    def _remembered(self) -> dict:
        return {**super()._remembered(), "base": self.base.text()}

    def _restore(self, values: dict) -> None:
        super()._restore(values)
        if isinstance(values.get("base"), str):
            self.base.setText(values["base"])
