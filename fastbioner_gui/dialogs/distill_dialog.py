"""The rows of Model > Distil a student… (:class:`DistillRows`), shown in a
:class:`~.training_dialog.TrainingDialog` over a
:class:`~fastbioner_gui.forms.distill.DistillForm`, which holds the rules: recipes
described by their measured time and benchmark quality, a teacher fine-tuned first
when there is none, the research settings under *Advanced*. This module only lays out
and binds widgets; it imports nothing of the dialog that shows it."""

from __future__ import annotations

import json
from datetime import date
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QSpinBox, QWidget)

from fastbioner import METHODS, RECIPES  # the public API; dataclass modules, no torch
from fastbioner.train.guided import RECIPE_EPOCHS, RECIPE_NOTE, base_models_folder

from ..forms.distill import CUSTOM, STUDENT_SOURCES, DistillForm
from ..models.palette import MUTED_STYLE
from ..settings import settings_store
from .form_binding import Binder
from .dret_rows import dret_rows
from .training_widgets import AdvancedMethodSettings, FileList

EXAMPLE_ENCODER = "dmis-lab/biobert-base-cased-v1.1"  # a biomedical encoder, as the teacher dialog suggests
MEASURED_KEY = "training/measured"  # run times measured per teacher and recipe, with their day


def _grey(label: QLabel, wrap: bool = True) -> QLabel:
    label.setWordWrap(wrap)
    label.setStyleSheet(MUTED_STYLE)
    return label


class DistillRows:
    """The distillation form's widgets, bound to ``binder``'s :class:`DistillForm`, in
    the places the dialog gives its sections: ``header`` (above the form), ``top``,
    ``data`` and ``end`` (form rows), ``below`` (after the form). ``refit`` is called when
    a part opens or folds, so the dialog follows."""

    def __init__(self, binder: Binder, data_folder: str, refit: Callable[[], None]):
        assert isinstance(binder.form, DistillForm)
        self.form = binder.form
        self.refit = refit
        self._measured_seconds: dict[str, float] = {}  # recipe -> run time measured in this opening
        # The recipe, and a wrapped note below it (a form's row gave the note the height
        # of a narrower width: a gap under it).
        self.recipe = QComboBox()
        for r in RECIPES:
            self.recipe.addItem(r.name, r.name)
        self.recipe.addItem(f"{CUSTOM}: the settings below, as set by hand", CUSTOM)
        self.recipe_note = _grey(QLabel())
        self.recipe_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.recipe_note.setContentsMargins(4, 0, 0, 4)
        row = QHBoxLayout()
        row.addWidget(QLabel("<b>Recipe</b>"))
        row.addWidget(self.recipe, 1)
        self.header = [row, self.recipe_note]
        self.top = self._teacher_rows()
        self.data = self._student_rows(data_folder)
        self.keep_full_precision = QCheckBox("keep full precision (do not compact the student)")
        self.keep_full_precision.setToolTip(
            "Ticked, the student is registered as trained. Unticked (the default), it is compacted after "
            "training, as `fastbioner compact` does: its vocabulary trimmed to the training data (a "
            "convolutional student keeps it whole, its embedding table in int8) and its weights stored in "
            "float16, then scored on devel again: about a third of the size.")
        self.end = [("Size", self.keep_full_precision)]
        self.below = [self.advanced]
        self._bind(binder)

    # Rows --------------------------------------------------------------------------------
    def _teacher_rows(self) -> list:
        self.teacher = QComboBox(editable=True)
        self.teacher.addItems(self.form.teachers)
        self.teacher.setToolTip("A registered teacher, a model you tag with (its layers make the student), "
                                "a Hugging Face model id or a model folder")
        if not self.form.teachers:
            self.teacher.lineEdit().setPlaceholderText("no model to distil from yet: fine-tune a teacher first "
                                                       "(below)")
        # A new user has no teacher: fine-tune one from a base encoder first, in the same job.
        self.fine_tune_first = QCheckBox("Fine-tune a teacher first, from a base encoder, on the training data")
        self.base_encoder = QComboBox(editable=True)
        for name, folder in self.form.encoders.items():
            self.base_encoder.addItem(name, folder)
        self.base_encoder.lineEdit().setPlaceholderText("a Hugging Face id (downloaded when online) or a folder")
        self.base_encoder.setToolTip(f"The encoders installed in {base_models_folder()}, or type a model id")
        # Where none is installed, the curator learns where one goes or what to type.
        self.encoder_hint = _grey(QLabel(self.encoder_hint_text()))
        self.teacher_name = QLineEdit(placeholderText="(made up from the training data)")
        self.fine_tune_box = QWidget()
        self._fine_tune_shown: bool | None = None
        box = QFormLayout(self.fine_tune_box)
        box.setContentsMargins(20, 0, 0, 0)
        box.addRow("Base encoder", self.base_encoder)
        box.addRow("", self.encoder_hint)
        box.addRow("New teacher's name", self.teacher_name)
        self.teacher_size = _grey(QLabel(), wrap=False)
        return [("Teacher", self.teacher), ("", self.fine_tune_first), ("", self.fine_tune_box),
                ("", self.teacher_size)]

    def encoder_hint_text(self) -> str:
        folder = base_models_folder()
        if self.form.encoders:
            return f"Found in {folder}: {', '.join(self.form.encoders)}. Or type a Hugging Face id."
        return (f"No base encoder found. Put a Hugging Face model folder (with its config.json) in {folder}, "
                f"or type an id such as {EXAMPLE_ENCODER} (downloaded when online).")

    def _student_rows(self, data_folder: str) -> list:
        # Untagged abstracts the teacher labels for the student: what raised the small
        # students most in the benchmarks (docs/research/benchmarks.md, table 4's cal-unlabeled-3).
        self.unlabeled_files = FileList(data_folder, caption="Unlabelled text (PubTator, BioC, PubMed XML or plain "
                                        "text)")
        self.unlabeled_files.setToolTip(
            "Optional: untagged biomedical text (PubTator, BioC, PubMed XML, plain text) that the teacher "
            "tags for the student to learn from, beside the training data: never the devel text. It made "
            "small students more accurate in every trial.")
        self.student_source = QComboBox(editable=True)
        self.student_source.addItems(STUDENT_SOURCES)
        self.student_source.setToolTip("teacher: its own layers; bigru/bilstm: recurrent; "
                                       "cnn: window convolutions, the fastest tagger; "
                                       "or another encoder's id or folder")
        self.layers = QComboBox()
        self.custom_layers = QSpinBox(minimum=1, maximum=48, value=2)
        layer_row = QHBoxLayout()
        layer_row.addWidget(self.layers)
        layer_row.addWidget(self.custom_layers)
        layer_row.addStretch(1)
        self.method = QComboBox()
        for name, method in METHODS.items():
            self.method.addItem(name)
            self.method.setItemData(self.method.count() - 1, method.summary, Qt.ItemDataRole.ToolTipRole)
        self.temperature = QDoubleSpinBox(minimum=0.1, maximum=20, singleStep=0.5, value=1.0)
        self.b = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, value=0.3, decimals=2)
        self.b.setToolTip("fastbioner methods: phi(s) = max(1 - exp(s/G + b - 1), 0)")
        # The method, its settings and the research behind the recipes: under Advanced.
        from fastbioner.train.distill.config import teacher_layers_methods_summary

        self.advanced = AdvancedMethodSettings()
        self.research_note = _grey(QLabel(
            f"{RECIPE_NOTE} Each recipe distils the teacher's own layers by the method that led at its depth "
            f"({teacher_layers_methods_summary()}) at the CLI's learning rate for {RECIPE_EPOCHS} epochs."))
        self.advanced.form.insertRow(0, self.research_note)
        self.advanced.form.insertRow(1, "Method", self.method)
        self.advanced.form.insertRow(2, "Temperature T", self.temperature)
        self.advanced.form.insertRow(3, "b (phi offset)", self.b)
        return [("Unlabelled text", self.unlabeled_files), ("Student", self.student_source),
                ("Student layers", layer_row)]

    def _bind(self, binder: Binder) -> None:
        self._fill_layers(binder)
        binder.combo_data("recipe", self.recipe)
        binder.combo_text("teacher", self.teacher)
        binder.check("fine_tune_first", self.fine_tune_first)
        binder.combo_text("base_encoder", self.base_encoder)
        binder.text("teacher_name", self.teacher_name)
        binder.files("unlabeled_files", self.unlabeled_files)
        binder.combo_text("student_source", self.student_source)
        for signal in (self.layers.currentTextChanged, self.custom_layers.valueChanged):
            binder.bind("layers", signal, self.layer_count, self.set_layer_count)
        binder.combo_text("method", self.method)
        binder.value("temperature", self.temperature)
        binder.value("b", self.b)
        binder.check("keep_full_precision", self.keep_full_precision)
        self.advanced.bind(binder)
        for label, widget in dret_rows(binder):
            self.advanced.form.addRow(label, widget)
        self.advanced.toggled.connect(lambda _on: self.refit())
        binder.on_change(lambda name: self._changed(binder, name))
        self._show_teacher()
        self._show_states()

    # The form changed ---------------------------------------------------------------------
    def _changed(self, binder: Binder, name: str) -> None:
        if name in ("teacher", "fine_tune_first", "base_encoder"):
            self._fill_layers(binder)
            self._show_teacher()
        self._show_states()

    def _show_states(self) -> None:
        form = self.form
        self.custom_layers.setEnabled(self.layers.currentText() == "custom")
        self.b.setEnabled(form.b_applies())
        self.teacher.setEnabled(not form.fine_tune_first)
        if self._fine_tune_shown != form.fine_tune_first:  # shown or folded: the dialog follows
            self._fine_tune_shown = form.fine_tune_first
            self.fine_tune_box.setVisible(form.fine_tune_first)
            self.refit()
        self.describe_recipe()

    def _fill_layers(self, binder: Binder) -> None:
        """The depths a student of this teacher can have (fewer layers than it)."""
        with binder.showing():
            self.layers.clear()
            self.layers.addItems([str(n) for n in self.form.layer_choices()] + ["custom"])
            self.custom_layers.setMaximum(self.form.most_layers())
            self.set_layer_count(self.form.layers)

    def _show_teacher(self) -> None:
        form = self.form
        layers = form.teacher_layers()
        name = form.teacher.strip()
        if form.fine_tune_first:
            depth = f"{layers} layers" if layers else "depth known once downloaded"
            self.teacher_size.setText(f"The new teacher: {depth}; the student gets fewer.")
        elif name in form.manifests:
            size = form.manifests[name].get("size_bytes")
            mb = f", {size / 1048576:.1f} MB" if size else ""
            # A model tagged with (not fine-tuned as a teacher) teaches too: no base encoder needed.
            whose = "" if form.manifests[name].get("kind") == "teacher" else " (a model you tag with)"
            self.teacher_size.setText(f"{name}{whose}: {layers or '?'} layers{mb}; the student gets fewer, "
                                      f"or is convolutional (Student: cnn).")
        else:
            self.teacher_size.setText("")
        self.describe_recipes()

    # The student's depth: a usual one from the list, or any under "custom" ---------------
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

    # Recipes: time on this machine and benchmark quality ------------------------------------
    def _measured_key(self, recipe_name: str) -> str:
        return f"{self.form.teacher.strip()}|{recipe_name}"

    @staticmethod
    def _stored_measurements() -> dict:
        raw = settings_store().value(MEASURED_KEY)
        try:
            stored = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            stored = {}
        return stored if isinstance(stored, dict) else {}

    def recipe_time(self, name: str) -> str:
        """The run time measured on this machine for this teacher and recipe: in this
        opening, else in an earlier one (remembered with the day it was measured)."""
        from fastbioner.train.estimate import duration_words

        seconds = self._measured_seconds.get(name)
        if seconds is not None:
            return f"About {duration_words(seconds)} on this machine (measured)"
        stored = self._stored_measurements().get(self._measured_key(name))
        if isinstance(stored, dict) and isinstance(stored.get("seconds"), (int, float)):
            return f"About {duration_words(stored['seconds'])} on this machine (measured {stored.get('day', 'before')})"
        return "Time on this machine: not measured yet (Estimate run time measures it)"

    def describe_recipes(self) -> None:
        """Each recipe in the list says its student's depth for this teacher, how good
        such a student was, and the time measured for it here."""
        depth = self.form.teacher_layers()
        for i, r in enumerate(RECIPES):
            n = self.form.recipe_values(r.name)["layers"]
            speed = {0: "quickest", len(RECIPES) - 1: "slowest, most accurate"}.get(i, "in between")
            note = f" (the teacher has {depth})" if n != r.layers else ""
            self.recipe.setItemText(i, f"{r.name} ({speed}): a {n}-layer student{note}, "
                                       f"{self.form.recipe_quality(r.name)}")
        self.describe_recipe()

    def describe_recipe(self) -> None:
        name = self.form.recipe
        if name == CUSTOM:
            self.recipe_note.setText("The settings below, as set by hand.")
            return
        self.recipe_note.setText(f"{self.recipe_time(name)}. Quality: {self.form.recipe_quality(name)} (students "
                                 f"of a 12-layer teacher; your own data will differ).")

    def measured(self, result) -> None:
        """A run time was measured: kept for this teacher and recipe (not for a chain
        that fine-tunes a teacher first: its measurement is the fine-tuning's)."""
        name = self.form.recipe
        if name == CUSTOM or self.form.fine_tune_first:
            return
        self._measured_seconds[name] = result.total_seconds
        stored = self._stored_measurements()
        stored[self._measured_key(name)] = {"seconds": round(result.total_seconds, 1),
                                            "day": f"{date.today():%Y-%m-%d}"}
        store = settings_store()
        store.setValue(MEASURED_KEY, json.dumps(stored))
        store.sync()
        self.describe_recipe()
