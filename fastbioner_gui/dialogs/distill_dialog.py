"""Model > Distil a student…: the distillation form (:class:`DistillDialog`), the
guided path of :mod:`fastbioner.train.guided` over the shared :class:`~.training_dialog.TrainingForm`:
recipes described by their measured time and benchmark quality, the project's reviewed
documents, a teacher fine-tuned first when there is none, the research settings under
*Advanced*."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QSpinBox, QVBoxLayout, QWidget)

from fastbioner import SMALL_SOURCES  # the public API; loads a dataclass module, no torch
from fastbioner.base.errors import FastBioNERError
from fastbioner.train.guided import (
    DEFAULT_RECIPE, RECIPE_EPOCHS, RECIPE_NOTE, RECIPES, base_encoders, base_models_folder, compact_by_default,
    encoder_layers, recipe, student_layer_choices,
)

from ..settings import settings_store
from .training_dialog import CUSTOM, STUDENT_SOURCES, TrainingForm, data_stem, recipe_f1, unique_name
from .training_widgets import AdvancedMethodSettings, FileList


class DistillDialog(TrainingForm):
    """Model > Distil a student…: the guided path (:mod:`fastbioner.train.guided`). A recipe
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
        # students most in the benchmarks (docs/research/benchmarks.md, table 4's cal-unlabeled-3).
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
        from fastbioner.train.distill.config import teacher_layers_methods_summary

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
        from fastbioner.train.distill.config import default_epochs, default_learning_rate, default_method

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
        # One rule for the app and `fastbioner distill` (the defaults table, docs/research/decisions.md#compaction).
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
        table (fastbioner.train.distill.config.teacher_layers_f1), for the depth it gives."""
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
        from fastbioner.train.estimate import _duration

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

        from fastbioner.base.config import TeacherConfig, TrainingConfig

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
        from fastbioner.train.guided import fine_tune_then_distill

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
