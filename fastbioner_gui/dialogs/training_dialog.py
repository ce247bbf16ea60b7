"""The dialogs that launch a training run as a background job: *Fine-tune a teacher*
(:class:`TeacherDialog`) and *Distil a student* (:class:`DistillDialog`), two forms
over one base (:class:`TrainingForm`). They only fill the core's typed configs
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
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea,
                               QSpinBox, QVBoxLayout, QWidget)

from fastbioner import SMALL_SOURCES  # the public API; loads a dataclass module, no torch
from fastbioner.errors import FastBioNERError
from fastbioner.guided import (DEFAULT_RECIPE, RECIPE_EPOCHS, RECIPE_NOTE, RECIPES, base_encoders, base_models_folder,
                               compact_by_default, encoder_layers, recipe, student_layer_choices)

from ..jobs import QUIET_KIND, Job, JobManager
from ..models.workspace import Workspace
from ..reviewed_data import reviewed_count, reviewed_training_file
from ..settings import DEVICES, AppSettings, settings_store
from .training_widgets import AdvancedMethodSettings, FileList, LearningRateBox

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
    library's defaults table (fastbioner/defaults.toml), not a copy."""
    from fastbioner.distill.config import teacher_layers_f1

    return teacher_layers_f1()


def unique_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3`` … when the registry has it already."""
    from fastbioner.registry import Registry

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
        from fastbioner.config import TrainingConfig

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
        from fastbioner.config import TrainingConfig

        return TrainingConfig(epochs=self.epochs.value(), learning_rate=self.learning_rate.value(),
                              batch_size=self.batch_size.value(), device=self.device.currentText(),
                              threads=self.settings.threads, cpu_bf16=self.cpu_bf16.isChecked())

    def _cpu_bf16_allowed(self) -> None:
        from fastbioner.precision import cpu_flags_say_bf16  # torch-free: the GUI thread

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
        from fastbioner.estimate import estimate_run

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
        from fastbioner.config import TeacherConfig

        train = self._training_files() if train is None else train
        return TeacherConfig(base_model=self.base.text().strip(), train_files=train,
                             dev_file=self.dev_file.text().strip() or None, training=self._training())

    def run_function(self, config, teacher, name: str):
        from fastbioner.teacher import train_teacher

        def run(on_event, cancel):
            return train_teacher(config, name, on_event=on_event, cancel=cancel)
        return f"Fine-tune {name}", run

    def _remembered(self) -> dict:
        return {**super()._remembered(), "base": self.base.text()}

    def _restore(self, values: dict) -> None:
        super()._restore(values)
        if isinstance(values.get("base"), str):
            self.base.setText(values["base"])


class DistillDialog(TrainingForm):
    """Model > Distil a student…: the guided path (:mod:`fastbioner.guided`). A recipe
    fills the settings, the research settings wait under Advanced, a new user with no
    teacher fine-tunes one first in the same job, the student is compacted after
    training unless asked not to."""

    kind = "distill"
    window_title = "Distil a student"
    noun = "student"

    # Rows ---------------------------------------------------------------------------
    def _top_rows(self, layout: QVBoxLayout, form: QFormLayout, teachers: Sequence[str]) -> None:
        self._measured_seconds: dict[str, float] = {}  # recipe -> measured run time, this opening
        self.recipe = QComboBox()
        for r in RECIPES:
            self.recipe.addItem(r.name, r.name)
        self.recipe.addItem(f"{CUSTOM}: the settings below, as set by hand", CUSTOM)
        self.recipe.currentIndexChanged.connect(lambda _i: self.apply_recipe())
        self.recipe_note = QLabel()
        self.recipe_note.setWordWrap(True)
        self.recipe_note.setStyleSheet("color:#555")
        self.recipe_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.recipe.currentIndexChanged.connect(lambda _i: self._describe_recipe())
        # A row and a wrapped note below it (a form's row gave the note the height of a
        # narrower width: a gap under it).
        row = QHBoxLayout()
        row.addWidget(QLabel("<b>Recipe</b>"))
        row.addWidget(self.recipe, 1)
        layout.addLayout(row)
        self.recipe_note.setContentsMargins(4, 0, 0, 4)
        layout.addWidget(self.recipe_note)
        self._teacher_rows(form, teachers)

    def _teacher_rows(self, form: QFormLayout, teachers: Sequence[str]) -> None:
        self.teacher = QComboBox(editable=True)
        self.teacher.addItems(list(teachers))
        self.teacher.setToolTip("A registry teacher, a Hugging Face model id or a model folder")
        if not teachers:
            self.teacher.lineEdit().setPlaceholderText("no teacher registered yet: fine-tune one first (below)")
        self.teacher.currentTextChanged.connect(lambda _t: self._teacher_changed())
        form.addRow("Teacher", self.teacher)
        # A new user has no teacher: fine-tune one from a base encoder first, in the same job.
        self.fine_tune_first = QCheckBox("Fine-tune a teacher first, from a base encoder, on the training data")
        self.base_encoder = QComboBox(editable=True)
        for folder in base_encoders():
            self.base_encoder.addItem(folder.name, str(folder))
        self.base_encoder.lineEdit().setPlaceholderText("a Hugging Face id (downloaded when online) or a folder")
        self.base_encoder.setToolTip(f"The encoders installed in {base_models_folder()}, or type a model id")
        self.base_encoder.currentTextChanged.connect(lambda _t: self._teacher_changed())
        self.teacher_name = QLineEdit(placeholderText="(made up from the training data)")
        self.fine_tune_first.toggled.connect(lambda _on: self._teacher_changed())
        self.fine_tune_box = QWidget()
        box = QFormLayout(self.fine_tune_box)
        box.setContentsMargins(20, 0, 0, 0)
        box.addRow("Base encoder", self.base_encoder)
        box.addRow("New teacher's name", self.teacher_name)
        form.addRow("", self.fine_tune_first)
        form.addRow("", self.fine_tune_box)
        self.teacher_size = QLabel()
        self.teacher_size.setStyleSheet("color:#555")
        form.addRow("", self.teacher_size)
        self.fine_tune_first.setChecked(not teachers)

    def _data_rows(self, form: QFormLayout) -> None:
        # Untagged abstracts the teacher labels for the student: what raised the small
        # students most in the benchmarks (docs/benchmarks.md, table 4's cal-unlabeled-3).
        self.unlabeled_files = FileList(self.settings.data_folder, caption="Unlabelled text (PubTator, BioC, "
                                        "PubMed XML or plain text)")
        self.unlabeled_files.setToolTip(
            "Optional: untagged biomedical text (PubTator, BioC, PubMed XML, plain text) that the teacher "
            "tags for the student to learn from, beside the training data: never the devel text. It made "
            "small students more accurate in every trial.")
        form.addRow("Unlabelled text", self.unlabeled_files)
        self.student_source = QComboBox(editable=True)
        self.student_source.addItems(STUDENT_SOURCES)
        self.student_source.setToolTip("teacher: its own layers; bigru/bilstm: recurrent; "
                                       "cnn: window convolutions, the fastest tagger; "
                                       "or another encoder's id or folder")
        self.layers = QComboBox()
        self.custom_layers = QSpinBox(minimum=1, maximum=48, value=2)
        self.custom_layers.setEnabled(False)
        self.layers.currentTextChanged.connect(lambda t: self.custom_layers.setEnabled(t == "custom"))
        layer_row = QHBoxLayout()
        layer_row.addWidget(self.layers)
        layer_row.addWidget(self.custom_layers)
        layer_row.addStretch(1)
        form.addRow("Student", self.student_source)
        form.addRow("Student layers", layer_row)
        from fastbioner import METHODS

        self.method = QComboBox()
        for name, method in METHODS.items():
            self.method.addItem(name)
            self.method.setItemData(self.method.count() - 1, method.summary, Qt.ItemDataRole.ToolTipRole)
        self.temperature = QDoubleSpinBox(minimum=0.1, maximum=20, singleStep=0.5, value=1.0)
        self.b = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, value=0.3, decimals=2)
        self.b.setToolTip("fastbioner methods: phi(s) = max(1 - exp(s/G + b - 1), 0)")
        self.advanced = AdvancedMethodSettings()
        self.method.currentTextChanged.connect(self._method_changed)
        self._method_changed(self.method.currentText())
        # The method, its settings and the research behind the recipes: under Advanced.
        from fastbioner.distill.config import teacher_layers_methods_summary

        research = QLabel(f"{RECIPE_NOTE} Each recipe distils the teacher's own layers by the method that led "
                          f"at its depth ({teacher_layers_methods_summary()}) at the CLI's learning rate for "
                          f"{RECIPE_EPOCHS} epochs.")
        research.setWordWrap(True)
        research.setStyleSheet("color:#555")
        self.research_note = research
        self.advanced.form.insertRow(0, research)
        self.advanced.form.insertRow(1, "Method", self.method)
        self.advanced.form.insertRow(2, "Temperature T", self.temperature)
        self.advanced.form.insertRow(3, "b (phi offset)", self.b)
        self.advanced.toggled.connect(lambda _on: self._refit())

    def _follow_rules(self) -> None:
        from fastbioner.distill.config import default_epochs, default_learning_rate, default_method

        # A recurrent student learns from scratch at a larger rate, a convolutional one
        # for more epochs, one of another tokenizer by soft and gold labels only; the
        # CLI's rules, from core.
        def follow_rate(_=None) -> None:  # a student's source and depth set its rate
            layers = self.layer_count() if self.layers.count() else None
            self.learning_rate.setValue(default_learning_rate(self.student_source.currentText().strip(), layers))

        for signal in (self.student_source.currentTextChanged, self.layers.currentTextChanged,
                       self.custom_layers.valueChanged):
            signal.connect(follow_rate)
        self.student_source.currentTextChanged.connect(
            lambda source: self.epochs.setValue(default_epochs(source.strip())))
        # The method follows the student too: a new source always sets it (not every
        # method suits every student); a new depth only replaces the previous depth's
        # default, never a method chosen by hand.
        followed = {"method": self.method.currentText()}  # what the dialog opened with

        def follow_method(_=None, source_changed: bool = False) -> None:
            layers = self.layer_count() if self.layers.count() else None
            method = default_method(self.student_source.currentText().strip(), layers)
            if source_changed or self.method.currentText() in (followed["method"], method):
                self.method.setCurrentText(method)
            followed["method"] = method

        self.student_source.currentTextChanged.connect(lambda _s: follow_method(source_changed=True))
        for signal in (self.layers.currentTextChanged, self.custom_layers.valueChanged):
            signal.connect(follow_method)

    def _bottom_rows(self, form: QFormLayout) -> None:
        self.keep_full_precision = QCheckBox("keep full precision (do not compact the student)")
        # One rule for the app and `fastbioner distill` (the defaults table, docs/decisions.md#compaction).
        self.keep_full_precision.setChecked(not compact_by_default())
        self.keep_full_precision.setToolTip(
            "Untick to compact the student after training, as `fastbioner compact` does: its "
            "vocabulary trimmed to the training data (a convolutional student keeps it whole, its embedding "
            "table in int8) and its weights stored in float16, then scored on devel again: about a third of "
            "the size. Whether this starts ticked follows the same default as `fastbioner distill`.")
        form.addRow("Size", self.keep_full_precision)

    def _advanced_rows(self, layout: QVBoxLayout) -> None:
        layout.addWidget(self.advanced)

    def _finish(self) -> None:
        self._ready = True
        self._teacher_changed()
        self.recipe.setCurrentIndex(self.recipe.findData(DEFAULT_RECIPE))
        self.apply_recipe()
        self._describe_recipe()
        for signal in (self.layers.currentTextChanged, self.custom_layers.valueChanged,
                       self.method.currentTextChanged, self.temperature.valueChanged,
                       self.epochs.valueChanged, self.learning_rate.valueChanged,
                       self.student_source.currentTextChanged):
            signal.connect(self._changed_by_hand)

    def _method_changed(self, name: str) -> None:
        """Each method starts from its own settings: temperature (hinton, pkd and
        fastbioner-cal: 2), b (its dynamic phi's offset), calibration and attention form."""
        from fastbioner import METHODS

        method = METHODS.get(name)
        if method is None:
            return
        self.temperature.setValue(method.temperature)
        dynamic = method.schedule.name == "dynamic"
        self.b.setEnabled(dynamic)
        if dynamic:
            self.b.setValue(method.schedule.b)
        self.advanced.follow(method)

    # The teacher -----------------------------------------------------------------------
    def teacher_layers(self) -> int | None:
        """The layer count of the teacher the student will come from: the registry
        manifest's ``layers``, or the base encoder's config when one is fine-tuned first."""
        if self.fine_tune_first.isChecked():
            return encoder_layers(self.base_encoder_ref()) if self.base_encoder_ref() else None
        name = self.teacher.currentText().strip()
        layers = (self.manifests.get(name) or {}).get("layers")
        return layers if isinstance(layers, int) else (encoder_layers(name) if name else None)

    def base_encoder_ref(self) -> str:
        """The chosen base encoder: an installed folder's path, or what was typed."""
        text = self.base_encoder.currentText().strip()
        index = self.base_encoder.findText(text)
        return self.base_encoder.itemData(index) if index >= 0 and self.base_encoder.itemData(index) else text

    def _teacher_changed(self) -> None:
        if not getattr(self, "_ready", False):  # signals while the form is still being built
            return
        fine_tune = self.fine_tune_first.isChecked()
        if self.fine_tune_box.isHidden() == fine_tune:  # shown or folded: the dialog follows
            self._refit()
        self.fine_tune_box.setVisible(fine_tune)
        self.teacher.setEnabled(not fine_tune)
        layers = self.teacher_layers()
        keep = self.layer_count() if self.layers.count() else None
        self._applying, applying = True, self._applying
        try:
            self.layers.clear()
            self.layers.addItems([str(n) for n in student_layer_choices(layers)] + ["custom"])
            self.custom_layers.setMaximum(max(1, layers - 1) if layers else 48)
            if keep is not None:
                self.set_layer_count(keep)
        finally:
            self._applying = applying
        self._describe_recipes()
        if self.recipe.currentData() not in (None, CUSTOM):
            self.apply_recipe()  # the recipe's depth follows the teacher's
        name = self.teacher.currentText().strip()
        size = (self.manifests.get(name) or {}).get("size_bytes")
        if fine_tune:
            depth = f"{layers} layers" if layers else "depth known once downloaded"
            self.teacher_size.setText(f"The new teacher: {depth}; the student gets fewer.")
        elif name in self.manifests:
            mb = f", {size / 1048576:.1f} MB" if size else ""
            self.teacher_size.setText(f"{name}: {layers or '?'} layers{mb}; the student gets fewer.")
        else:
            self.teacher_size.setText("")

    # Recipes ---------------------------------------------------------------------------
    def recipe_quality(self, r) -> str:
        """The quality a recipe's student reached in the benchmarks, from the library's
        table (fastbioner.distill.config.teacher_layers_f1), for the depth it gives."""
        n = r.student_layers(self.teacher_layers())
        figures = recipe_f1()
        if n in figures:
            f1, _spread = figures[n]
            return f"{f1:.1f} F1 on the BC5CDR benchmark"
        return "quality not measured at this depth"

    def _measured_key(self, recipe_name: str) -> str:
        return f"{self.teacher.currentText().strip()}|{recipe_name}"

    @staticmethod
    def _stored_measurements() -> dict:
        import json

        raw = settings_store().value("training/measured")
        try:
            stored = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            stored = {}
        return stored if isinstance(stored, dict) else {}

    def recipe_time(self, r) -> str:
        """The run time measured on this machine for this teacher and recipe: in this
        opening, else in an earlier one (remembered with the day it was measured)."""
        from fastbioner.estimate import _duration

        seconds = self._measured_seconds.get(r.name)
        if seconds is not None:
            return f"About {_duration(seconds)} on this machine (measured)"
        stored = self._stored_measurements().get(self._measured_key(r.name))
        if isinstance(stored, dict) and isinstance(stored.get("seconds"), (int, float)):
            return f"About {_duration(stored['seconds'])} on this machine (measured {stored.get('day', 'before')})"
        return "Time on this machine: not measured yet (Estimate run time measures it)"

    def _describe_recipes(self) -> None:
        """Each recipe in the list says its student's depth for this teacher, how good
        such a student was, and the time measured for it here."""
        for i, r in enumerate(RECIPES):
            n = r.student_layers(self.teacher_layers())
            speed = {0: "quickest", len(RECIPES) - 1: "slowest, most accurate"}.get(i, "in between")
            note = f" (the teacher has {self.teacher_layers()})" if n != r.layers else ""
            self.recipe.setItemText(i, f"{r.name} ({speed}): a {n}-layer student{note}, {self.recipe_quality(r)}")
        self._describe_recipe()

    def _describe_recipe(self) -> None:
        if not hasattr(self, "recipe_note"):
            return
        name = self.recipe.currentData()
        if name in (None, CUSTOM):
            self.recipe_note.setText("The settings below, as set by hand.")
            return
        r = recipe(name)
        self.recipe_note.setText(f"{self.recipe_time(r)}. Quality: {self.recipe_quality(r)} (students of a "
                                 f"12-layer teacher; your own data will differ).")

    def _measured(self, result) -> None:
        name = self.recipe.currentData()
        if name not in (None, CUSTOM) and not self.fine_tune_first.isChecked():
            import json

            self._measured_seconds[name] = result.total_seconds
            stored = self._stored_measurements()
            stored[self._measured_key(name)] = {"seconds": round(result.total_seconds, 1),
                                                "day": f"{date.today():%Y-%m-%d}"}
            store = settings_store()
            store.setValue("training/measured", json.dumps(stored))
            store.sync()
            self._describe_recipe()

    def set_layer_count(self, n: int) -> None:
        index = self.layers.findText(str(n))
        if index >= 0:
            self.layers.setCurrentIndex(index)
        else:
            self.layers.setCurrentText("custom")
            self.custom_layers.setValue(n)

    def layer_count(self) -> int:
        text = self.layers.currentText()
        return self.custom_layers.value() if text == "custom" else int(text)

    def apply_recipe(self) -> None:
        """Fill the settings from the chosen recipe (Custom leaves them as they are)."""
        name = self.recipe.currentData()
        if name in (None, CUSTOM):
            return
        r = recipe(name)
        self._applying = True
        try:
            self.student_source.setCurrentText("teacher")
            self.set_layer_count(r.student_layers(self.teacher_layers()))
            self.method.setCurrentText(r.method(self.teacher_layers()))
            self.temperature.setValue(r.temperature(self.teacher_layers()))
            self.epochs.setValue(r.epochs)
            self.learning_rate.setValue(r.learning_rate(self.teacher_layers()))
        finally:
            self._applying = False

    def _changed_by_hand(self) -> None:
        """A setting changed by hand no longer follows a recipe."""
        if self._applying or self.recipe.currentData() == CUSTOM:
            return
        r = recipe(self.recipe.currentData())
        if (self.student_source.currentText().strip() == "teacher"
                and self.layer_count() == r.student_layers(self.teacher_layers())
                and self.method.currentText() == r.method(self.teacher_layers())
                and self.temperature.value() == r.temperature(self.teacher_layers())
                and self.epochs.value() == r.epochs
                and self.learning_rate.value() == r.learning_rate(self.teacher_layers())):
            return
        self.recipe.blockSignals(True)
        self.recipe.setCurrentIndex(self.recipe.findData(CUSTOM))
        self.recipe.blockSignals(False)
        self._describe_recipe()

    # Names -----------------------------------------------------------------------------
    def new_teacher_name(self) -> str:
        """The name of the teacher fine-tuned first (typed, or made from the data)."""
        typed = self.teacher_name.text().strip()
        if typed:
            return typed
        if not hasattr(self, "_teacher_default"):  # one name per opening, not one per press
            self._teacher_default = unique_name(f"{data_stem(self.train_files.paths(), 'my')}-teacher-"
                                                f"{date.today():%Y-%m-%d}")
        return self._teacher_default

    # Configs ---------------------------------------------------------------------------
    def build_config(self, train: list[str] | None = None):
        from fastbioner import DistillConfig, MethodConfig, StudentConfig

        train = self._training_files() if train is None else train
        source = self.student_source.currentText().strip()
        student = StudentConfig(source=source, layers=None if source in SMALL_SOURCES else self.layer_count())
        method = self.advanced.apply(MethodConfig(
            name=self.method.currentText(), temperature=self.temperature.value(),
            b=self.b.value() if self.b.isEnabled() else None))
        teacher = self.new_teacher_name() if self.fine_tune_first.isChecked() else self.teacher.currentText().strip()
        return DistillConfig(teacher=teacher, student=student, method=method, train_files=train,
                             dev_file=self.dev_file.text().strip() or None,
                             unlabeled_files=self.unlabeled_files.paths(), training=self._training())

    def teacher_config(self, config):
        """The fine-tuning of the teacher the chain starts with (None: a teacher exists).
        It trains on the same data at the CLI's teacher settings, the epochs, batch
        size and device of this dialog."""
        if not self.fine_tune_first.isChecked():
            return None
        from dataclasses import replace

        from fastbioner.config import TeacherConfig, TrainingConfig

        training = replace(config.training, learning_rate=TrainingConfig().learning_rate)
        return TeacherConfig(base_model=self.base_encoder_ref(), train_files=list(config.train_files),
                             dev_file=config.dev_file, training=training)

    def _check_more(self, config) -> None:
        depth = self.teacher_layers() if config.student.source == "teacher" else None
        if depth and config.student.layers >= depth:
            raise FastBioNERError(f"the student must have fewer layers than its teacher ({depth}): "
                                  f"{config.student.layers} compresses nothing")

    def _settings_key(self, config, teacher) -> dict:
        return {**super()._settings_key(config, teacher), "compact": not self.keep_full_precision.isChecked()}

    def run_function(self, config, teacher, name: str):
        from fastbioner.guided import fine_tune_then_distill

        teacher_name = self.new_teacher_name() if teacher is not None else None
        compact = not self.keep_full_precision.isChecked()
        title = f"Fine-tune {teacher_name}, distil {name}" if teacher is not None else f"Distil {name}"

        def run(on_event, cancel):
            return fine_tune_then_distill(teacher, teacher_name, config, name, compact=compact,
                                          on_event=on_event, cancel=cancel)
        return title, run

    # Remembered settings ------------------------------------------------------------
    def _remembered(self) -> dict:
        values = {**super()._remembered(), "recipe": self.recipe.currentData(),
                  "teacher": self.teacher.currentText(), "unlabeled_files": self.unlabeled_files.paths(),
                  "keep_full_precision": self.keep_full_precision.isChecked(),
                  "advanced": self.advanced.isChecked()}
        if values["recipe"] == CUSTOM:
            values.update(student_source=self.student_source.currentText(), layers=self.layer_count(),
                          method=self.method.currentText(), temperature=self.temperature.value())
        return values

    def _restore(self, values: dict) -> None:
        teacher = values.get("teacher")
        if isinstance(teacher, str) and teacher and self.teacher.findText(teacher) >= 0:
            self.teacher.setCurrentText(teacher)
        if isinstance(values.get("unlabeled_files"), list):
            self.unlabeled_files.add_paths([p for p in values["unlabeled_files"]
                                            if isinstance(p, str) and Path(p).exists()])
        if isinstance(values.get("keep_full_precision"), bool):
            self.keep_full_precision.setChecked(values["keep_full_precision"])
        if isinstance(values.get("advanced"), bool):
            self.advanced.setChecked(values["advanced"])
        name = values.get("recipe")
        if name in [r.name for r in RECIPES]:
            self.recipe.setCurrentIndex(self.recipe.findData(name))
            self.apply_recipe()
        # A recipe sets its own epochs and rate; those remembered count only for Custom.
        super()._restore({k: v for k, v in values.items() if k not in ("epochs", "learning_rate")})
        if name == CUSTOM:
            if isinstance(values.get("student_source"), str):
                self.student_source.setCurrentText(values["student_source"])
            if isinstance(values.get("layers"), int):
                self.set_layer_count(values["layers"])
            if isinstance(values.get("method"), str):
                self.method.setCurrentText(values["method"])
            if isinstance(values.get("temperature"), float):
                self.temperature.setValue(values["temperature"])
            for key in ("epochs", "learning_rate"):  # after the student, whose change sets them
                if key in values:
                    super()._restore({key: values[key]})
            self.recipe.setCurrentIndex(self.recipe.findData(CUSTOM))
        self._describe_recipe()
