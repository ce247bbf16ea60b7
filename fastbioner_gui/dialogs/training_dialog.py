"""The dialog that launches a training run as a background job: *Fine-tune a teacher*
and *Distil a student* are one :class:`TrainingDialog` over a Qt-free form
(:mod:`fastbioner_gui.forms`: :class:`~fastbioner_gui.forms.training.TeacherForm`,
:class:`~fastbioner_gui.forms.distill.DistillForm`) with the rows of its kind
(:class:`TeacherRows` here, :class:`~.distill_dialog.DistillRows`). The form holds the
values, their rules and the config they make; the dialog shows it, measures the run
time and hands the form's job to the jobs panel with its progress and cancel.

Written for curators: the distillation form opens on a recipe described by what a
curator weighs (the time it takes on this machine, once measured, and the quality
it reached in the benchmarks, read from the library's defaults), the reviewed
documents of the project are used when there are any, the last settings are
remembered (the form's remembered fields, as JSON in the app's settings file), new
models get readable names (``bc5cdr-student-2026-12-05``), and the research settings
and their vocabulary wait under *Advanced*. Cancel leaves the settings as the dialog
opened with them; the mouse wheel changes no setting the pointer only passes over.

Layout: the form scrolls inside the dialog, so opening *Advanced* never pushes
Start and Cancel off the screen; the dialog grows to fit what is shown, up to the
screen's height, and shrinks back when it is folded again.

The run time is measured before the run starts (a few real steps). The reviewed
documents are written to a file named by its content (:mod:`..reviewed_data`), so
pressing Start again with the same settings starts the run measured for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QFrame,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSpinBox, QVBoxLayout,
                               QWidget)

from fastbioner.base.errors import FastBioNERError

from ..forms.distill import DistillForm
from ..forms.training import DEVICES, RunForm, TeacherForm
from ..jobs import QUIET_KIND, Job, JobManager
from ..models.palette import MUTED_STYLE
from ..models.workspace import Workspace
from ..reviewed_data import reviewed_count, reviewed_training_file
from ..settings import AppSettings, settings_store
from ..widgets.wheel import WheelGuard, guard_wheel
from .distill_dialog import DistillRows
from .dret_rows import AdvancedTraining
from .form_binding import Binder
from .training_widgets import FileList, LearningRateBox


class TeacherRows:
    """The teacher form's own row, the base model, in the places the dialog gives
    (see :class:`~.distill_dialog.DistillRows`)."""

    def __init__(self, binder: Binder, data_folder: str, refit: Callable[[], None]):
        from fastbioner.train.guided import base_models_folder

        # The installed base encoders (those made by `fastbioner transfer-embeddings` among
        # them), or a typed id or folder.
        self.base = QComboBox(editable=True)
        for name, folder in binder.form.encoders.items():
            self.base.addItem(name, folder)
        self.base.lineEdit().setPlaceholderText("Hugging Face id (dmis-lab/biobert-base-cased-v1.1) or folder")
        self.base.setToolTip(f"The encoders installed in {base_models_folder()}, or type a model id or folder")
        binder.combo_text("base", self.base)
        self.header: list = []
        self.top = [("Base model", self.base)]
        self.data: list = []
        self.end: list = []
        self.advanced = AdvancedTraining(binder)
        self.advanced.toggled.connect(lambda _on: refit())
        self.below: list = [self.advanced]

    def measured(self, result) -> None:
        """A measured run time: nothing is kept for a teacher."""


def make_form(kind: str, workspace: Workspace, settings: AppSettings, teachers: Sequence[str] = (),
              manifests: dict[str, dict] | None = None) -> RunForm:
    """The form of ``kind`` (``"distill"`` or ``"teacher"``), opening on the app's device."""
    from fastbioner.models.shipped import sample_files

    # Nothing chosen and nothing reviewed: the bundled sample abstracts, so Start works at once.
    common = {"reviewed": reviewed_count(workspace), "threads": settings.threads, "fallback_files": sample_files(),
              "device": settings.device if settings.device in DEVICES else "auto"}
    from fastbioner.train.guided import base_encoders, cached_hub_encoders

    encoders = [*base_encoders(), *cached_hub_encoders()]
    if kind == "distill":
        return DistillForm(teachers=teachers, manifests=manifests, encoders=encoders, **common)
    if kind == "teacher":
        return TeacherForm(encoders=encoders, **common)
    raise ValueError(f"no training form of kind {kind!r}")


def remembered_settings(kind: str) -> object:
    """What the last opening of ``kind`` left (None when nothing, or a hand-edited file)."""
    raw = settings_store().value(f"training/{kind}")
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:  # a hand-edited file: the defaults, never a crash
        return None


class TrainingDialog(QDialog):
    """Model > Fine-tune a teacher… (``kind="teacher"``) or Distil a student…
    (``"distill"``): training and devel data (and the project's reviewed documents),
    epochs, learning rate, batch size, device, the new model's name, the rows of its
    kind, the run-time measurement, Start and Cancel."""

    jobStarted = Signal(object)  # Job

    def __init__(self, kind: str, workspace: Workspace, jobs: JobManager, settings: AppSettings,
                 teachers: Sequence[str] = (), parent: QWidget | None = None,
                 manifests: dict[str, dict] | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.jobs = jobs
        self.settings = settings
        self.form = make_form(kind, workspace, settings, teachers, manifests)
        self.form.restore(remembered_settings(self.form.kind))
        self.opened = self.form.values()  # what Cancel goes back to
        self.binder = Binder(self.form)
        self.setWindowTitle(self.form.title)
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
        rows_of = DistillRows if isinstance(self.form, DistillForm) else TeacherRows
        self.rows = rows_of(self.binder, settings.data_folder, self._refit)
        for part in self.rows.header:
            (layout.addLayout if not isinstance(part, QWidget) else layout.addWidget)(part)
        form = QFormLayout()
        self._add_rows(form, self.rows.top)
        self._data_rows(form)
        self._add_rows(form, self.rows.data)
        self._run_rows(form)
        self._add_rows(form, self.rows.end)
        layout.addLayout(form)
        for widget in self.rows.below:
            layout.addWidget(widget)
        layout.addStretch(1)
        self._estimate_rows(outer)
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
        self.binder.on_change(lambda name: self.show_states() if name in ("device", "train_files", "use_curated")
                              else None)
        self.show_states()
        self.wheel_guard = WheelGuard(self)
        guard_wheel(self, self.wheel_guard)
        self.fit_to_screen()

    # Rows -------------------------------------------------------------------------------
    @staticmethod
    def _add_rows(form: QFormLayout, rows: list) -> None:
        for label, field in rows:
            form.addRow(label, field)

    def _data_rows(self, form: QFormLayout) -> None:
        self.train_files = FileList(self.settings.data_folder)
        self.use_curated = QCheckBox(self._reviewed_text())
        self.use_curated.setToolTip("Their gold and accepted entities; undecided suggestions are left out")
        self.fallback_note = QLabel()
        self.fallback_note.setWordWrap(False)  # one short line: a wrapped one left a gap above it in the form
        self.fallback_note.setStyleSheet(MUTED_STYLE)
        self.dev_file = QLineEdit(
            placeholderText="optional: an annotated file to pick the best step and score the model")
        dev_browse = QPushButton("Browse…")
        dev_browse.clicked.connect(self._browse_dev)
        dev_row = QHBoxLayout()
        dev_row.addWidget(self.dev_file, 1)
        dev_row.addWidget(dev_browse)
        self._add_rows(form, [("Training data", self.train_files), ("", self.use_curated),
                              ("", self.fallback_note), ("Devel data", dev_row)])
        self.binder.files("train_files", self.train_files)
        self.binder.check("use_curated", self.use_curated)
        self.binder.text("dev_file", self.dev_file)

    def _run_rows(self, form: QFormLayout) -> None:
        self.epochs = QSpinBox(minimum=1, maximum=100)
        self.learning_rate = LearningRateBox(self.form.learning_rate)  # written as people write it
        self.batch_size = QSpinBox(minimum=1, maximum=1024)
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.cpu_bf16 = QCheckBox("bf16 training on this CPU (faster steps; weights stay fp32)")
        self.cpu_bf16.setToolTip("Runs each step under bfloat16 autocast where the CPU has it natively "
                                 "(AVX512-BF16 or AMX); about 1.5x faster steps on an AVX512-BF16 EPYC. "
                                 "Not used on a GPU, which has its own mixed precision.")
        self.name = QLineEdit(placeholderText=f"(a name is made up: {self.form.default_name()})")
        self._add_rows(form, [("Epochs", self.epochs), ("Learning rate", self.learning_rate),
                              ("Batch size", self.batch_size), ("Device", self.device), ("", self.cpu_bf16),
                              ("New model's name", self.name)])
        for name, box in (("epochs", self.epochs), ("learning_rate", self.learning_rate),
                          ("batch_size", self.batch_size)):
            self.binder.value(name, box)
        self.binder.combo_text("device", self.device)
        self.binder.check("cpu_bf16", self.cpu_bf16)
        self.binder.text("name", self.name)

    def _estimate_rows(self, outer: QVBoxLayout) -> None:
        # The run time is measured, not guessed: a few real steps of these settings,
        # shown before the run starts (next to Start).
        self.estimate_button = QPushButton("Estimate run time")
        self.estimate_button.setToolTip("Time a few real training steps with these settings on this machine "
                                        "and extrapolate to the whole run; nothing is trained or saved")
        self.estimate_button.clicked.connect(self.estimate)
        self.estimate_label = QLabel("not measured yet")
        self.estimate_label.setWordWrap(True)
        self.estimate_first = QCheckBox("measure the run time before starting")
        self.estimate_first.setToolTip("Start first measures a few steps and shows the estimate here; "
                                       "press Start again to run")
        self.binder.check("estimate_first", self.estimate_first)
        estimate_row = QHBoxLayout()
        estimate_row.addWidget(QLabel("<b>Run time</b>"))
        estimate_row.addWidget(self.estimate_button)
        estimate_row.addWidget(self.estimate_label, 1)
        outer.addLayout(estimate_row)
        outer.addWidget(self.estimate_first)
        self.estimate_job: Job | None = None
        self._estimated: dict | None = None  # the settings the shown estimate is for
        self._start_after_estimate = False

    def show_states(self) -> None:
        """What can be chosen now: bf16 steps only where this CPU has them; what Start
        trains on when nothing is chosen."""
        self.cpu_bf16.setEnabled(self.form.bf16_allowed())
        if not self.form.bf16_allowed():
            self.form.put(cpu_bf16=False)
        fallback = self.form.falls_back()
        self.fallback_note.setVisible(bool(fallback))
        if fallback:
            self.fallback_note.setText(f"Nothing chosen: Start trains on the bundled sample abstracts "
                                       f"({', '.join(Path(p).name for p in fallback)}).")

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
        n = self.form.reviewed
        if not n:
            return "and the reviewed documents of this project (none yet: Ctrl+M marks one reviewed)"
        return f"and the {n} reviewed document{'s' if n != 1 else ''} of this project"

    def _browse_dev(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Devel data (BIO / CoNLL)", self.settings.data_folder)
        if path:
            self.form.edit(dev_file=path)

    def curated_training_file(self) -> str | None:
        """The project's reviewed documents as a BIO file (gold and accepted entities),
        named by its content; None when there are none."""
        return reviewed_training_file(self.workspace)

    def build_config(self, train: list[str] | None = None):
        """The config the form makes now, on ``train`` (None: the chosen training data)."""
        return self.form.config(self.form.training_files(self.curated_training_file) if train is None else train)

    def checked_configs(self):
        try:
            checked = self.form.checked(self.form.training_files(self.curated_training_file))
        except (FastBioNERError, OSError) as exc:
            self.show_error(str(exc))
            return None
        return checked

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    # Remembered settings ------------------------------------------------------------
    def save_settings(self) -> None:
        store = settings_store()
        store.setValue(f"training/{self.form.kind}", json.dumps(self.form.remembered()))
        store.sync()

    # The run time ---------------------------------------------------------------
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
        key = self.form.run_key(config, teacher)
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
                self.rows.measured(result)
            if key is not None and self._start_after_estimate:
                self.start_button.setText("Start now")
                self.start_button.setToolTip("The run time above is measured: press to start the run")
            self._start_after_estimate = False

    def cancel_estimate(self) -> None:
        if self.estimate_job is not None and self.estimate_job.running:
            self.estimate_job.cancel()
        self.estimate_job = None

    def done(self, result: int) -> None:
        """Closing the dialog in any way stops a measurement; Cancel (or Escape, or the
        window's close button) puts the settings back as the dialog opened with them,
        so the next opening starts from those too."""
        self.cancel_estimate()
        if result != QDialog.DialogCode.Accepted:
            self.form.reset(self.opened)
        self.save_settings()
        super().done(result)

    # Starting -------------------------------------------------------------------
    def start(self):
        """Start the run. With *measure the run time before starting* on and no
        estimate shown for these settings, the first press measures and shows the
        run time instead (the button then reads *Start now*); the next press with
        the same settings starts."""
        name = self.form.model_name()
        checked = self.checked_configs()
        if checked is None:
            return None
        config, teacher = checked
        self.show_error("")
        self.save_settings()
        if self.form.estimate_first and self._estimated != self.form.run_key(config, teacher):
            if self.estimate_job is None:
                self._start_after_estimate = True
                self.estimate()
            return None
        title, run = self.form.job(config, teacher, name)
        self.cancel_estimate()
        job = self.jobs.start(title, run, kind="train", config=config, model_name=name)
        self.jobStarted.emit(job)
        self.accept()
        return job
