"""The dialog that launches distillation (or teacher fine-tuning) as a background job:
it only fills the core's typed configs (:class:`DistillConfig`, :class:`TeacherConfig`)
and hands them to the core job with the jobs panel's progress callback and cancel."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QPushButton, QSpinBox, QVBoxLayout, QWidget)

from fastbioner.documents import Source
from fastbioner.errors import FastBioNERError
from fastbioner.project import DocStatus, user_home

from ..jobs import QUIET_KIND, Job, JobManager
from ..models.workspace import Workspace
from ..settings import DEVICES, AppSettings

STUDENT_SOURCES = ("teacher", "bigru", "bilstm")
LAYER_CHOICES = ("6", "4", "3", "custom")


def _methods() -> dict[str, tuple[str, float]]:
    """Each method's one-line summary and its own temperature."""
    from fastbioner.distill.methods import METHODS

    return {name: (m.summary, m.temperature) for name, m in METHODS.items()}


class AdvancedMethodSettings(QGroupBox):
    """The research settings of a distillation method, folded away by default: a
    weight per loss term, calibration of the matching terms, and how attention maps
    are compared. Defaults come from :class:`MethodConfig`, as the CLI's do."""

    def __init__(self, parent: QWidget | None = None):
        from fastbioner.distill.methods import ATTENTION_FORMS, TERM_NAMES, MethodConfig

        super().__init__("Advanced: loss-term weights, calibration, attention", parent)
        defaults = MethodConfig()
        self.setCheckable(True)
        self.setChecked(False)
        self.body = QWidget()
        form = QFormLayout(self.body)
        self.weights: dict[str, QDoubleSpinBox] = {}
        grid = QGridLayout()
        for i, term in enumerate(TERM_NAMES):
            box = QDoubleSpinBox(minimum=0.0, maximum=1e4, decimals=4, singleStep=0.1,
                                 value=defaults.term_weights.get(term, 1.0))
            box.setToolTip(f"weight of the {term} term, multiplying the method's own (1: as the method says)")
            self.weights[term] = box
            grid.addWidget(QLabel(term), i // 4, 2 * (i % 4))
            grid.addWidget(box, i // 4, 2 * (i % 4) + 1)
        form.addRow("Term weights", grid)
        self.calibrate = QCheckBox("scale each matching term so its gradient norm at the start equals the "
                                   "gold labels'")
        self.calibrate.setChecked(defaults.calibrate != "none")
        form.addRow("Calibration", self.calibrate)
        self.attention = QComboBox()
        self.attention.addItems(ATTENTION_FORMS)
        self.attention.setCurrentText(defaults.attention)
        self.attention.setToolTip("scores: QK^T/sqrt(d_k) (the paper's); centred: the same with each query "
                                  "row's mean removed (softmax ignores it); probs: after softmax")
        form.addRow("Attention maps", self.attention)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggled.connect(self.body.setVisible)

    def apply(self, method):  # noqa: ANN001,ANN201 - a MethodConfig, returned filled in
        """The settings into ``method`` (only while the section is open: folded,
        the method's defaults stand)."""
        if not self.isChecked():
            return method
        method.term_weights = {t: box.value() for t, box in self.weights.items() if box.value() != 1.0}
        method.calibrate = "grad-norm" if self.calibrate.isChecked() else "none"
        method.attention = self.attention.currentText()
        return method


class FileList(QWidget):
    """Training files: a list with Add and Remove."""

    def __init__(self, start_folder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.start_folder = start_folder
        self.list = QListWidget()
        self.list.setMaximumHeight(80)
        add, remove = QPushButton("Add…"), QPushButton("Remove")
        add.clicked.connect(self._add)
        remove.clicked.connect(lambda: [self.list.takeItem(self.list.row(i)) for i in self.list.selectedItems()])
        buttons = QVBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)

    def _add(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Training data (BIO / CoNLL)", self.start_folder)
        self.add_paths(paths)

    def add_paths(self, paths: Sequence[str]) -> None:
        for p in paths:
            self.list.addItem(p)

    def paths(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]


class TrainingDialog(QDialog):
    jobStarted = Signal(object)  # Job

    def __init__(self, kind: str, workspace: Workspace, jobs: JobManager, settings: AppSettings,
                 teachers: Sequence[str] = (), parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.workspace = workspace
        self.jobs = jobs
        self.settings = settings
        self.setWindowTitle("Distil a student" if kind == "distill" else "Fine-tune a teacher")
        form = QFormLayout()
        if kind == "distill":
            self.teacher = QComboBox(editable=True)
            self.teacher.addItems(list(teachers))
            self.teacher.setToolTip("A registry teacher, a Hugging Face model id or a model folder")
            form.addRow("Teacher", self.teacher)
        else:
            self.base = QLineEdit(placeholderText="Hugging Face id (dmis-lab/biobert-base-cased-v1.1) or folder")
            form.addRow("Base model", self.base)
        self.train_files = FileList(settings.data_folder)
        self.use_curated = QCheckBox("and the reviewed documents of this project (gold and accepted entities)")
        form.addRow("Training data", self.train_files)
        form.addRow("", self.use_curated)
        self.dev_file = QLineEdit(placeholderText="optional: BIO file for model selection")
        dev_browse = QPushButton("Browse…")
        dev_browse.clicked.connect(self._browse_dev)
        dev_row = QHBoxLayout()
        dev_row.addWidget(self.dev_file, 1)
        dev_row.addWidget(dev_browse)
        form.addRow("Devel data", dev_row)
        if kind == "distill":
            self.student_source = QComboBox(editable=True)
            self.student_source.addItems(STUDENT_SOURCES)
            self.student_source.setToolTip("teacher: its own layers (uniform mapping); bigru/bilstm: recurrent; "
                                           "or another encoder's id or folder")
            self.layers = QComboBox()
            self.layers.addItems(LAYER_CHOICES)
            self.custom_layers = QSpinBox(minimum=1, maximum=48, value=2)
            self.custom_layers.setEnabled(False)
            self.layers.currentTextChanged.connect(lambda t: self.custom_layers.setEnabled(t == "custom"))
            layer_row = QHBoxLayout()
            layer_row.addWidget(self.layers)
            layer_row.addWidget(self.custom_layers)
            layer_row.addStretch(1)
            self.method = QComboBox()
            methods = _methods()
            for name, (summary, _t) in methods.items():
                self.method.addItem(name)
                self.method.setItemData(self.method.count() - 1, summary, Qt.ItemDataRole.ToolTipRole)
            self.temperature = QDoubleSpinBox(minimum=0.1, maximum=20, singleStep=0.5, value=1.0)
            # Each method starts from its own temperature (hinton and pkd: 2).
            self.method.currentTextChanged.connect(lambda m: self.temperature.setValue(methods[m][1]))
            self.method.setCurrentText("fastbioner")  # the product's method first
            self.temperature.setValue(methods[self.method.currentText()][1])
            self.b = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, value=0.3, decimals=2)
            self.b.setToolTip("phi(s) = max(1 - exp(s/G + b - 1), 0)")
            form.addRow("Student", self.student_source)
            form.addRow("Student layers", layer_row)
            form.addRow("Method", self.method)
            form.addRow("Temperature T", self.temperature)
            form.addRow("b (phi offset)", self.b)
            self.advanced = AdvancedMethodSettings()
        self.epochs = QSpinBox(minimum=1, maximum=100, value=3)
        from fastbioner.config import TrainingConfig

        # The CLI's default, from the same dataclass.
        self.learning_rate = QDoubleSpinBox(minimum=1e-6, maximum=1e-2, decimals=6, singleStep=1e-5,
                                            value=TrainingConfig().learning_rate)
        self.batch_size = QSpinBox(minimum=1, maximum=1024, value=16)
        if kind == "distill":
            from fastbioner.distill.config import default_learning_rate

            # A recurrent student learns from scratch at a larger rate; the CLI's rule, from core.
            self.student_source.currentTextChanged.connect(
                lambda source: self.learning_rate.setValue(default_learning_rate(source.strip())))
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        self.name = QLineEdit()
        form.addRow("Epochs", self.epochs)
        form.addRow("Learning rate", self.learning_rate)
        form.addRow("Batch size", self.batch_size)
        form.addRow("Device", self.device)
        form.addRow("New model's name", self.name)
        # The run time is measured, not guessed: a few real steps of these settings.
        self.estimate_button = QPushButton("Estimate run time")
        self.estimate_button.setToolTip("Time a few real training steps with these settings on this machine "
                                        "and extrapolate to the whole run; nothing is trained or saved")
        self.estimate_button.clicked.connect(self.estimate)
        self.estimate_label = QLabel("not measured yet")
        self.estimate_label.setWordWrap(True)
        estimate_row = QHBoxLayout()
        estimate_row.addWidget(self.estimate_button)
        estimate_row.addWidget(self.estimate_label, 1)
        form.addRow("Run time", estimate_row)
        self.estimate_job: Job | None = None
        self.error = QLabel()
        self.error.setStyleSheet("color:#b00")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.start_button = buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.start)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        if kind == "distill":
            layout.addWidget(self.advanced)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(620, 0)

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
            teacher = Path(self.teacher.currentText().strip() or "teacher").name
            return f"{teacher}-{self.method.currentText()}-{self.layer_count()}L-{stamp}"
        return f"{Path(self.base.text().strip() or 'teacher').name}-teacher-{stamp}"

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

    def build_config(self):  # noqa: ANN201 - a DistillConfig or a TeacherConfig
        from fastbioner.config import TrainingConfig

        train = self.train_files.paths()
        if self.use_curated.isChecked():
            curated = self.curated_training_file()
            if curated is None:
                raise FastBioNERError("no reviewed documents in this project to train on (mark them reviewed: Ctrl+M)")
            train.append(curated)
        training = TrainingConfig(epochs=self.epochs.value(), learning_rate=self.learning_rate.value(),
                                  batch_size=self.batch_size.value(), device=self.device.currentText(),
                                  threads=self.settings.threads)
        dev = self.dev_file.text().strip() or None
        if self.kind == "teacher":
            from fastbioner.config import TeacherConfig

            return TeacherConfig(base_model=self.base.text().strip(), train_files=train, dev_file=dev,
                                 training=training)
        from fastbioner.distill.config import DistillConfig, StudentConfig
        from fastbioner.distill.methods import MethodConfig

        source = self.student_source.currentText().strip()
        student = StudentConfig(source=source, layers=None if source in ("bigru", "bilstm") else self.layer_count())
        method = self.advanced.apply(MethodConfig(
            name=self.method.currentText(), temperature=self.temperature.value(),
            b=self.b.value() if self.method.currentText() == "fastbioner" else None))
        return DistillConfig(teacher=self.teacher.currentText().strip(), student=student, method=method,
                             train_files=train, dev_file=dev, training=training)

    def checked_config(self):  # noqa: ANN201 - a validated config, or None (the error is shown)
        try:
            config = self.build_config()
            config.validate()
        except (FastBioNERError, OSError) as exc:
            self.error.setText(str(exc))
            return None
        return config

    def estimate(self) -> Job | None:
        """Measure a few steps of the current settings in the background; the label
        shows the progress, then the estimate."""
        self.cancel_estimate()
        config = self.checked_config()
        if config is None:
            return None
        self.error.clear()
        from fastbioner.estimate import estimate_run

        job = self.jobs.start("Estimate run time",
                              lambda on_event, cancel: estimate_run(config, on_event=on_event, cancel=cancel),
                              kind=QUIET_KIND)
        self.estimate_job = job
        self.estimate_label.setText("measuring…")
        job.progress.connect(lambda e: self._estimate_progress(job, e))
        job.succeeded.connect(lambda r: self._estimate_shown(job, r.describe()))
        job.failed.connect(lambda m: self._estimate_shown(job, f"could not measure: {m}"))
        job.cancelled.connect(lambda: self._estimate_shown(job, "not measured"))
        return job

    def _estimate_progress(self, job: Job, event) -> None:  # noqa: ANN001 - a ProgressEvent
        if job is self.estimate_job and event.stage == "estimate" and event.step:
            self.estimate_label.setText(f"measuring: step {event.step} of {event.total}…")
        elif job is self.estimate_job and event.stage != "estimate" and not event.step:
            self.estimate_label.setText(f"measuring: {event.message}…")

    def _estimate_shown(self, job: Job, text: str) -> None:
        if job is self.estimate_job:
            self.estimate_label.setText(text)
            self.estimate_job = None

    def cancel_estimate(self) -> None:
        if self.estimate_job is not None and self.estimate_job.running:
            self.estimate_job.cancel()
        self.estimate_job = None

    def done(self, result: int) -> None:  # closing the dialog in any way stops a measurement
        self.cancel_estimate()
        super().done(result)

    def start(self):  # noqa: ANN201 - the Job, or None when the settings are refused
        name = self.name.text().strip() or self.default_name()
        config = self.checked_config()
        if config is None:
            return None
        if self.kind == "distill":
            from fastbioner.distill.runner import distill as run
            title = f"Distil {name}"
        else:
            from fastbioner.teacher import train_teacher as run
            title = f"Fine-tune {name}"
        job = self.jobs.start(title, lambda on_event, cancel: run(config, name, on_event=on_event, cancel=cancel),
                              kind="train", config=config, model_name=name)
        self.jobStarted.emit(job)
        self.accept()
        return job
