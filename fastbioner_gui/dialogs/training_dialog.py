"""The dialog that launches distillation (or teacher fine-tuning) as a background job:
it only fills the core's typed configs (:class:`DistillConfig`, :class:`TeacherConfig`)
and hands them to the core job with the jobs panel's progress callback and cancel.

Distillation is the guided path (:mod:`fastbioner.guided`): a recipe at the top fills
the settings, the research settings wait in the Advanced section, a new user with no
teacher fine-tunes one first in the same job, the student is compacted after training
unless asked not to, and the run time is measured before the run starts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from fastbioner import SMALL_SOURCES  # the public API; loads a dataclass module, no torch
from fastbioner.documents import Source
from fastbioner.errors import FastBioNERError
from fastbioner.project import DocStatus, user_home

from fastbioner.guided import (DEFAULT_RECIPE, RECIPE_EPOCHS, RECIPE_NOTE, RECIPES, base_encoders, base_models_folder,
                               encoder_layers, recipe, student_layer_choices)

from ..jobs import QUIET_KIND, Job, JobManager
from ..models.workspace import Workspace
from ..settings import DEVICES, AppSettings
from .training_widgets import AdvancedMethodSettings, FileList, LearningRateBox

STUDENT_SOURCES = ("teacher", *SMALL_SOURCES)
CUSTOM = "Custom"  # the recipe shown once a setting is changed by hand


class TrainingDialog(QDialog):
    jobStarted = Signal(object)  # Job

    def __init__(self, kind: str, workspace: Workspace, jobs: JobManager, settings: AppSettings,
                 teachers: Sequence[str] = (), parent: QWidget | None = None,
                 manifests: dict[str, dict] | None = None):
        super().__init__(parent)
        from fastbioner.config import TrainingConfig

        self.kind = kind
        self.workspace = workspace
        self.jobs = jobs
        self.settings = settings
        self.manifests = dict(manifests or {})  # registry manifests by name (layers, size of each teacher)
        self._applying = False  # a recipe is filling the form: its changes are not "by hand"
        self.setWindowTitle("Distil a student" if kind == "distill" else "Fine-tune a teacher")
        layout = QVBoxLayout(self)
        form = QFormLayout()
        if kind == "distill":
            self._recipe_rows(layout)
            self._teacher_rows(form, teachers)
        else:
            self.base = QLineEdit(placeholderText="Hugging Face id (dmis-lab/biobert-base-cased-v1.1) or folder")
            form.addRow("Base model", self.base)
        self.train_files = FileList(settings.data_folder)
        self.use_curated = QCheckBox("and the reviewed documents of this project (gold and accepted entities)")
        form.addRow("Training data", self.train_files)
        form.addRow("", self.use_curated)
        self.dev_file = QLineEdit(placeholderText="optional: BIO file for model selection and the new model's scores")
        dev_browse = QPushButton("Browse…")
        dev_browse.clicked.connect(self._browse_dev)
        dev_row = QHBoxLayout()
        dev_row.addWidget(self.dev_file, 1)
        dev_row.addWidget(dev_browse)
        form.addRow("Devel data", dev_row)
        if kind == "distill":
            # Untagged abstracts the teacher labels for the student: the lever that moved
            # the 3-layer students most (docs/benchmarks.md, table 4's cal-unlabeled-3).
            self.unlabeled_files = FileList(settings.data_folder, caption="Unlabelled text (PubTator, BioC, "
                                            "PubMed XML or plain text)")
            self.unlabeled_files.setToolTip(
                "Optional: untagged biomedical text (PubTator, BioC, PubMed XML, plain text) that the teacher "
                "tags for the student to learn from, beside the training data: never the devel text. In the "
                "benchmarks it gave the largest gains to small students.")
            form.addRow("Unlabelled text", self.unlabeled_files)
            self._student_rows(form)
        self.epochs = QSpinBox(minimum=1, maximum=100, value=TrainingConfig().epochs)
        # The CLI's default, from the same dataclass, written as people write it.
        self.learning_rate = LearningRateBox(TrainingConfig().learning_rate)
        self.batch_size = QSpinBox(minimum=1, maximum=1024, value=16)
        if kind == "distill":
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
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        self.name = QLineEdit(placeholderText="(a name is made up from the settings)")
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
        if kind == "distill":
            self.keep_full_precision = QCheckBox("keep full precision (do not compact the student)")
            self.keep_full_precision.setToolTip(
                "By default the student is compacted after training, as `fastbioner compact` does: its "
                "vocabulary trimmed to the training data (a convolutional student keeps it whole, its embedding "
                "table in int8) and its weights stored in float16, then scored on "
                "devel again. Its size is stated against its teacher's when the run ends.")
            form.addRow("Size", self.keep_full_precision)
        layout.addLayout(form)
        if kind == "distill":
            layout.addWidget(self.advanced)
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
        layout.addLayout(estimate_row)
        layout.addWidget(self.estimate_first)
        self.estimate_job: Job | None = None
        self._estimated: dict | None = None  # the settings the shown estimate is for
        self._start_after_estimate = False
        self.error = QLabel()
        self.error.setStyleSheet("color:#b00")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.start_button = buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.start)
        buttons.rejected.connect(self.reject)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        if kind == "distill":
            self._ready = True
            self._teacher_changed()
            self.recipe.setCurrentIndex(self.recipe.findData(DEFAULT_RECIPE))
            self.apply_recipe()
            for signal in (self.layers.currentTextChanged, self.custom_layers.valueChanged,
                           self.method.currentTextChanged, self.temperature.valueChanged,
                           self.epochs.valueChanged, self.learning_rate.valueChanged,
                           self.student_source.currentTextChanged):
                signal.connect(self._changed_by_hand)
        # Word-wrapped notes make the needed height depend on the width: a resize to
        # height 0 took the hint for a narrower dialog and squeezed the form's rows.
        self.resize(680, max(self.layout().totalHeightForWidth(680), self.minimumSizeHint().height()))

    # Distillation's rows ------------------------------------------------------
    def _recipe_rows(self, layout: QVBoxLayout) -> None:
        self.recipe = QComboBox()
        for r in RECIPES:
            self.recipe.addItem(f"{r.name}: {r.summary}", r.name)
        self.recipe.addItem(f"{CUSTOM}: the settings below, as set by hand", CUSTOM)
        from fastbioner.distill.config import teacher_layers_methods_summary
        # From core's by-depth table, so the tooltip cannot go stale when a default changes.
        self.recipe.setToolTip("Each recipe distils the teacher's own layers by the method that led at its "
                               f"depth in docs/benchmarks.md ({teacher_layers_methods_summary()}; T=2) at "
                               f"the CLI's learning rate for {RECIPE_EPOCHS} epochs")
        self.recipe.currentIndexChanged.connect(lambda _i: self.apply_recipe())
        self.recipe_note = QLabel(RECIPE_NOTE)
        self.recipe_note.setWordWrap(True)
        self.recipe_note.setStyleSheet("color:#555")
        row = QFormLayout()
        row.addRow("<b>Recipe</b>", self.recipe)
        row.addRow("", self.recipe_note)
        layout.addLayout(row)

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
        self.teacher_name = QLineEdit(placeholderText="(made up from the base encoder)")
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

    def _student_rows(self, form: QFormLayout) -> None:
        self.student_source = QComboBox(editable=True)
        self.student_source.addItems(STUDENT_SOURCES)
        self.student_source.setToolTip("teacher: its own layers (uniform mapping); bigru/bilstm: recurrent; "
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
        from fastbioner.distill.methods import METHODS

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
        # The method's own settings are research settings too: first in the Advanced section.
        self.advanced.form.insertRow(0, "Method", self.method)
        self.advanced.form.insertRow(1, "Temperature T", self.temperature)
        self.advanced.form.insertRow(2, "b (phi offset)", self.b)

    def _method_changed(self, name: str) -> None:
        """Each method starts from its own settings: temperature (hinton, pkd and
        fastbioner-cal: 2), b (its dynamic phi's offset), calibration and attention form."""
        from fastbioner.distill.methods import METHODS

        method = METHODS.get(name)
        if method is None:
            return
        self.temperature.setValue(method.temperature)
        dynamic = method.schedule.name == "dynamic"
        self.b.setEnabled(dynamic)
        if dynamic:
            self.b.setValue(method.schedule.b)
        self.advanced.follow(method)

    def _cpu_bf16_allowed(self) -> None:
        from fastbioner.precision import cpu_flags_say_bf16  # torch-free: the GUI thread

        # On "auto" a GPU, if any, takes its own mixed precision and ignores this.
        allowed = self.device.currentText() != "cuda" and cpu_flags_say_bf16() is not False
        self.cpu_bf16.setEnabled(allowed)
        if not allowed:
            self.cpu_bf16.setChecked(False)

    def teacher_layers(self) -> int | None:
        """The layer count of the teacher the student will come from: the registry
        manifest's ``layers``, or the base encoder's config when one is fine-tuned first."""
        if self.kind != "distill":
            return None
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
        for i, r in enumerate(RECIPES):  # each recipe says the depth it will give this teacher
            n = r.student_layers(layers)
            note = f" (the teacher has {layers})" if n != r.layers else ""
            self.recipe.setItemText(i, f"{r.name}: a {n}-layer student{note}; {r.summary.split(': ', 1)[-1]}"
                                    if ": " in r.summary else f"{r.name}: a {n}-layer student{note}")
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

    def set_layer_count(self, n: int) -> None:
        index = self.layers.findText(str(n))
        if index >= 0:
            self.layers.setCurrentIndex(index)
        else:
            self.layers.setCurrentText("custom")
            self.custom_layers.setValue(n)

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

    # Building the configs -------------------------------------------------------
    def _browse_dev(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Devel data (BIO / CoNLL)", self.settings.data_folder)
        if path:
            self.dev_file.setText(path)

    def layer_count(self) -> int:
        text = self.layers.currentText()
        return self.custom_layers.value() if text == "custom" else int(text)

    def default_name(self) -> str:
        stamp = datetime.now().strftime("%Y%m%d-%H%M")
        if self.kind == "distill":
            teacher = self.new_teacher_name() if self.fine_tune_first.isChecked() else Path(
                self.teacher.currentText().strip() or "teacher").name
            return f"{teacher}-{self.method.currentText()}-{self.layer_count()}L-{stamp}"
        return f"{Path(self.base.text().strip() or 'teacher').name}-teacher-{stamp}"

    def new_teacher_name(self) -> str:
        """The name of the teacher fine-tuned first (typed, or made from the base)."""
        typed = self.teacher_name.text().strip()
        if typed:
            return typed
        if not hasattr(self, "_teacher_stamp"):
            self._teacher_stamp = datetime.now().strftime("%Y%m%d-%H%M")
        base = Path(self.base_encoder_ref() or "teacher").name.replace("/", "-")
        return f"{base}-teacher-{self._teacher_stamp}"

    def curated_training_file(self) -> str | None:
        """The project's reviewed documents as a BIO file (gold and accepted
        entities), or None when there are none."""
        from fastbioner.export import ExportSettings, export_documents

        docs = [self.workspace.document(r) for r in range(len(self.workspace))
                if self.workspace.entry(r).status is DocStatus.REVIEWED]
        if not docs:
            return None
        path = user_home() / "training-data" / f"reviewed-{datetime.now():%Y%m%d-%H%M%S}.conll"
        export_documents(docs, path, ExportSettings("BIO / CoNLL (IOB2)", (Source.GOLD, Source.CURATOR)))
        return str(path)

    def _training_files(self) -> list[str]:
        train = self.train_files.paths()
        if self.use_curated.isChecked():
            curated = self.curated_training_file()
            if curated is None:
                raise FastBioNERError("no reviewed documents in this project to train on (mark them reviewed: Ctrl+M)")
            train.append(curated)
        return train

    def build_config(self, train: list[str] | None = None):  # noqa: ANN201 - a DistillConfig or a TeacherConfig
        from fastbioner.config import TrainingConfig

        train = self._training_files() if train is None else train
        training = TrainingConfig(epochs=self.epochs.value(), learning_rate=self.learning_rate.value(),
                                  batch_size=self.batch_size.value(), device=self.device.currentText(),
                                  threads=self.settings.threads, cpu_bf16=self.cpu_bf16.isChecked())
        dev = self.dev_file.text().strip() or None
        if self.kind == "teacher":
            from fastbioner.config import TeacherConfig

            return TeacherConfig(base_model=self.base.text().strip(), train_files=train, dev_file=dev,
                                 training=training)
        from fastbioner.distill.config import DistillConfig, StudentConfig
        from fastbioner.distill.methods import MethodConfig

        source = self.student_source.currentText().strip()
        student = StudentConfig(source=source, layers=None if source in SMALL_SOURCES else self.layer_count())
        method = self.advanced.apply(MethodConfig(
            name=self.method.currentText(), temperature=self.temperature.value(),
            b=self.b.value() if self.b.isEnabled() else None))
        teacher = self.new_teacher_name() if self.fine_tune_first.isChecked() else self.teacher.currentText().strip()
        return DistillConfig(teacher=teacher, student=student, method=method, train_files=train, dev_file=dev,
                             unlabeled_files=self.unlabeled_files.paths(), training=training)

    def teacher_config(self, config):  # noqa: ANN001,ANN201 - the DistillConfig -> a TeacherConfig or None
        """The fine-tuning of the teacher the chain starts with (None: a teacher exists).
        It trains on the same data at the CLI's teacher settings, the epochs, batch
        size and device of this dialog."""
        if self.kind != "distill" or not self.fine_tune_first.isChecked():
            return None
        from dataclasses import replace

        from fastbioner.config import TeacherConfig, TrainingConfig

        training = replace(config.training, learning_rate=TrainingConfig().learning_rate)
        return TeacherConfig(base_model=self.base_encoder_ref(), train_files=list(config.train_files),
                             dev_file=config.dev_file, training=training)

    def checked_configs(self):  # noqa: ANN201 - (config, teacher config or None), or None (the error is shown)
        try:
            config = self.build_config()
            teacher = self.teacher_config(config)
            if teacher is not None:
                teacher.validate()
            config.validate()
            depth = self.teacher_layers() if config.student.source == "teacher" else None
            if depth and config.student.layers >= depth:
                raise FastBioNERError(f"the student must have fewer layers than its teacher ({depth}): "
                                      f"{config.student.layers} compresses nothing")
        except (FastBioNERError, OSError) as exc:
            self.error.setText(str(exc))
            return None
        return config, teacher

    def checked_config(self):  # noqa: ANN201 - a validated config, or None (the error is shown)
        checked = self.checked_configs()
        return None if checked is None else checked[0]

    # The run time ---------------------------------------------------------------
    def _settings_key(self, config, teacher) -> dict:  # noqa: ANN001
        return {"config": config.to_dict(), "teacher": teacher.to_dict() if teacher is not None else None,
                "compact": self.kind == "distill" and not self.keep_full_precision.isChecked()}

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
        self.error.clear()
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
        job.succeeded.connect(lambda r: self._estimate_shown(job, f"{prefix}{r.describe()}{suffix}", key))
        job.failed.connect(lambda m: self._estimate_shown(job, f"could not measure: {m}"))
        job.cancelled.connect(lambda: self._estimate_shown(job, "not measured"))
        return job

    def _estimate_progress(self, job: Job, event) -> None:  # noqa: ANN001 - a ProgressEvent
        if job is self.estimate_job and event.stage == "estimate" and event.step:
            self.estimate_label.setText(f"measuring: step {event.step} of {event.total}…")
        elif job is self.estimate_job and event.stage != "estimate" and not event.step:
            self.estimate_label.setText(f"measuring: {event.message}…")

    def _estimate_shown(self, job: Job, text: str, key: dict | None = None) -> None:
        if job is self.estimate_job:
            self.estimate_label.setText(text)
            self.estimate_job = None
            self._estimated = key
            if key is not None and self._start_after_estimate:
                self.start_button.setText("Start now")
                self.start_button.setToolTip("The run time above is measured: press to start the run")
            self._start_after_estimate = False

    def cancel_estimate(self) -> None:
        if self.estimate_job is not None and self.estimate_job.running:
            self.estimate_job.cancel()
        self.estimate_job = None

    def done(self, result: int) -> None:  # closing the dialog in any way stops a measurement
        self.cancel_estimate()
        super().done(result)

    # Starting -------------------------------------------------------------------
    def start(self):  # noqa: ANN201 - the Job, or None when the settings are refused or measured first
        """Start the run. With *measure the run time before starting* on and no
        estimate shown for these settings, the first press measures and shows the
        run time instead (the button then reads *Start now*)."""
        name = self.name.text().strip() or self.default_name()
        checked = self.checked_configs()
        if checked is None:
            return None
        config, teacher = checked
        self.error.clear()
        if self.estimate_first.isChecked() and self._estimated != self._settings_key(config, teacher):
            if self.estimate_job is None:
                self._start_after_estimate = True
                self.estimate()
            return None
        if self.kind == "distill":
            from fastbioner.guided import fine_tune_then_distill

            teacher_name = self.new_teacher_name() if teacher is not None else None
            compact = not self.keep_full_precision.isChecked()
            title = f"Fine-tune {teacher_name}, distil {name}" if teacher is not None else f"Distil {name}"

            def run(on_event, cancel):  # noqa: ANN001,ANN202 - the job protocol's arguments
                return fine_tune_then_distill(teacher, teacher_name, config, name, compact=compact,
                                              on_event=on_event, cancel=cancel)
        else:
            from fastbioner.teacher import train_teacher

            title = f"Fine-tune {name}"

            def run(on_event, cancel):  # noqa: ANN001,ANN202
                return train_teacher(config, name, on_event=on_event, cancel=cancel)
        self.cancel_estimate()
        job = self.jobs.start(title, run, kind="train", config=config, model_name=name)
        self.jobStarted.emit(job)
        self.accept()
        return job
