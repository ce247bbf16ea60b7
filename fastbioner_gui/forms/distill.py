"""The distillation form (Model > Distil a student…), the guided path of
:mod:`fastbioner.train.guided`: a recipe sets every field it names, a field edited by hand
leaves the recipe (and the form follows a recipe again once its settings match one),
the student's source and depth set the CLI's learning rate, epochs and method, a method
brings its own temperature, b, calibration and attention form, and a new user with no
teacher fine-tunes one first in the same job."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any, Callable, Sequence

from fastbioner import (ATTENTION_FORMS, METHODS, RECIPES, SMALL_SOURCES, DistillConfig, MethodConfig, StudentConfig,
                        TeacherConfig, TrainingConfig, fine_tune_then_distill)
from fastbioner.train.distill.config import default_epochs, default_learning_rate, default_method, teacher_layers_f1
from fastbioner.base.errors import FastBioNERError
from fastbioner.train.guided import DEFAULT_RECIPE, encoder_layers, student_layer_choices

from .fields import Setting
from .training import DRET_FIELDS, RunForm, data_stem, existing_file, unique_name

CUSTOM = "Custom"  # the recipe shown once the settings are no recipe's
STUDENT_SOURCES = ("teacher", *SMALL_SOURCES)
# A recipe's learning rate goes with the batch size its runs used, the CLI's default:
# a recipe names it too, so choosing one again undoes a changed batch size.
RECIPE_BATCH_SIZE = TrainingConfig().batch_size
# Fields that reach the config only while Advanced is open (folded: the method's own).
ADVANCED_FIELDS = ("calibrate", "attention", "term_weights", "term_ratios", *DRET_FIELDS)
# The fields a recipe names (with the method's own b, calibration and attention form).
RECIPE_FIELDS = ("student_source", "layers", "method", "temperature", "b", *ADVANCED_FIELDS, "epochs",
                 "learning_rate", "batch_size")
_TEACHER_FIELDS = ("teacher", "fine_tune_first", "base_encoder")


def teacher_candidates(manifests: dict[str, dict]) -> list[str]:
    """The models a student can be distilled from, best first: the registered teachers,
    then the other transformer models the curator has (the shipped default, an improved
    one). A student of fewer of their layers, or a convolutional one, is made from them
    without a base encoder, so a fresh install can distil at once. A convolutional or
    recurrent model has no layers to give a student: never offered."""
    def transformer(m: dict) -> bool:
        layers = m.get("layers")
        return isinstance(layers, int) and layers >= 2 and not str(m.get("model_type", "")).startswith("fastbioner-")

    teachers = [n for n, m in manifests.items() if m.get("kind") == "teacher"]
    return teachers + [n for n, m in manifests.items() if n not in teachers and transformer(m)]


def _offered_teacher(form: "DistillForm", name: str) -> bool:
    return name in form.teachers


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


class DistillForm(RunForm):
    """``teachers``: the registered teachers offered; ``manifests``: registry manifests by
    name (each teacher's layers and size); ``encoders``: the installed base encoders'
    folders, or the Hugging Face ids already downloaded (a teacher is fine-tuned from one
    when there is no model to distil from)."""

    kind = "distill"
    title = "Distil a student"
    noun = "student"

    recipe = Setting(DEFAULT_RECIPE, choices=(*(r.name for r in RECIPES), CUSTOM))
    teacher = Setting("", check=_offered_teacher)
    fine_tune_first = Setting(False, remember=False)
    base_encoder = Setting("", remember=False)
    teacher_name = Setting("", remember=False)
    unlabeled_files = Setting([], check=existing_file)
    student_source = Setting("teacher")
    layers = Setting(4)
    method = Setting(MethodConfig().name, choices=tuple(METHODS))
    temperature = Setting(1.0)
    b = Setting(0.3)
    advanced = Setting(False)
    calibrate = Setting(False)
    attention = Setting(ATTENTION_FORMS[0], choices=ATTENTION_FORMS)
    term_weights = Setting({})  # only the weights that are not 1
    term_ratios = Setting({})   # only the pulls that are not the calibration's default
    # Compacted unless asked: a student is for tagging, about a third of the size, and its
    # compacted weights are scored on devel again (docs/guides/training.md).
    keep_full_precision = Setting(False)

    def __init__(self, *, teachers: Sequence[str] = (), manifests: dict[str, dict] | None = None,
                 encoders: Sequence[Path | str] = (), **initial: Any):
        self.teachers = list(teachers)
        self.manifests = dict(manifests or {})
        # A folder is shown by its name, a hub id (a str) as it is typed.
        self.encoders = {(p.name if isinstance(p, Path) else str(p)): str(p) for p in encoders}
        self._depth_method = ""  # the method the student's depth last gave (one chosen by hand stays)
        self._teacher_default: str | None = None
        super().__init__(teacher=self.teachers[0] if self.teachers else "", fine_tune_first=not self.teachers,
                         base_encoder=next(iter(self.encoders), ""), **initial)
        self._apply_recipe()

    # The teacher -------------------------------------------------------------------------
    def teacher_layers(self) -> int | None:
        """The layer count of the teacher the student comes from: the registry manifest's
        ``layers``, or the base encoder's config when one is fine-tuned first."""
        if self.fine_tune_first:
            ref = self.base_encoder_ref()
            return encoder_layers(ref) if ref else None
        name = self.teacher.strip()
        layers = (self.manifests.get(name) or {}).get("layers")
        return layers if isinstance(layers, int) else (encoder_layers(name) if name else None)

    def base_encoder_ref(self) -> str:
        """The chosen base encoder: an installed folder's path, or what was typed."""
        text = self.base_encoder.strip()
        return self.encoders.get(text, text)

    def layer_choices(self) -> list[int]:
        return student_layer_choices(self.teacher_layers())

    def most_layers(self) -> int:
        depth = self.teacher_layers()
        return max(1, depth - 1) if depth else 48

    def new_teacher_name(self) -> str:
        """The name of the teacher fine-tuned first (typed, or made from the data, once
        per opening rather than once per press)."""
        if self.teacher_name.strip():
            return self.teacher_name.strip()
        if self._teacher_default is None:
            self._teacher_default = unique_name(f"{data_stem(self.train_files, 'my')}-teacher-"
                                                f"{date.today():%Y-%m-%d}")
        return self._teacher_default

    # Methods -----------------------------------------------------------------------------
    @staticmethod
    def method_own(name: str) -> dict[str, Any]:
        """A method's own settings, as the CLI takes them unless told: temperature, b (a
        dynamic schedule's offset), calibration and attention form."""
        method = METHODS[name]
        own: dict[str, Any] = {"temperature": method.temperature, "calibrate": method.calibrate != "none",
                               "attention": method.attention}
        if method.schedule.name == "dynamic":
            own["b"] = method.schedule.b
        return own

    def b_applies(self) -> bool:
        return METHODS[self.method].schedule.name == "dynamic"

    def ratio_applies(self, term: str) -> bool:
        """A matching term's pull counts under calibration, for a term the method has."""
        return self.calibrate and term in METHODS[self.method].term_names

    @staticmethod
    def ratio_default(term: str) -> float:
        defaults = MethodConfig()
        return defaults.term_ratios.get(term, defaults.calibration_ratio)

    # Recipes -----------------------------------------------------------------------------
    def recipe_values(self, name: str) -> dict[str, Any]:
        """Every field recipe ``name`` sets, for this teacher's depth."""
        r = next(r for r in RECIPES if r.name == name)
        depth = self.teacher_layers()
        method = r.method(depth)
        return {"student_source": "teacher", "layers": r.student_layers(depth), "method": method,
                **self.method_own(method), "temperature": r.temperature(depth), "term_weights": {},
                "term_ratios": {}, "epochs": r.epochs, "learning_rate": r.learning_rate(depth),
                "batch_size": RECIPE_BATCH_SIZE, **{f: getattr(TrainingConfig(), f) for f in DRET_FIELDS}}

    def follows(self, name: str) -> bool:
        """Whether the settings are recipe ``name``'s: those that reach the config (b for a
        dynamic schedule only, the Advanced ones only while it is open)."""
        want = self.recipe_values(name)
        for field in RECIPE_FIELDS:
            if field == "b" and ("b" not in want or not self.b_applies()):
                continue
            if field in ADVANCED_FIELDS and not self.advanced:
                continue
            if not _close(self.get(field), want[field]):
                return False
        return True

    def matching_recipe(self) -> str:
        """The recipe the settings follow (the chosen one first), else Custom."""
        names = [self.recipe, *(r.name for r in RECIPES if r.name != self.recipe)]
        return next((n for n in names if n != CUSTOM and self.follows(n)), CUSTOM)

    def _apply_recipe(self) -> None:
        if self.recipe != CUSTOM:
            values = self.recipe_values(self.recipe)
            self.put(**values)
            self._depth_method = values["method"]

    def recipe_quality(self, name: str) -> str:
        """The quality recipe ``name``'s student reached in the benchmarks (the library's
        table), for the depth it gives this teacher."""
        n = self.recipe_values(name)["layers"]
        figures = teacher_layers_f1()
        if n in figures:
            return f"{figures[n][0]:.1f} F1 on the BC5CDR benchmark"
        return "quality not measured at this depth"

    # The rules ---------------------------------------------------------------------------
    def follow(self, name: str) -> None:
        super().follow(name)
        if name == "recipe":
            self._apply_recipe()
            return
        if name in _TEACHER_FIELDS:
            self._apply_recipe()  # a recipe's depth follows the teacher's
            return
        # A student's source and depth set the CLI's rate (a recurrent student learns from
        # scratch at a larger one), its source the CLI's epochs; a new source always sets
        # the method (not every method suits every student), a new depth only replaces
        # the previous depth's default, never a method chosen by hand.
        source, layers = self.student_source.strip(), self.layers
        if name == "student_source":
            method = default_method(source, layers)
            self.put(learning_rate=default_learning_rate(source, layers), epochs=default_epochs(source),
                     method=method)
            self._depth_method = method
            self.put(**self.method_own(method))
        elif name == "layers":
            method = default_method(source, layers)
            self.put(learning_rate=default_learning_rate(source, layers))
            if self.method in (self._depth_method, method):
                self.put(method=method, **self.method_own(method))
            self._depth_method = method
        elif name == "method":
            self.put(**self.method_own(self.method))
        if name in RECIPE_FIELDS or name == "advanced":
            self.put(recipe=self.matching_recipe())

    def settle(self) -> None:
        """After a restore: a named recipe is applied again (its depth follows today's
        teacher); Custom settings stay as they were."""
        self._apply_recipe()
        if self.recipe == CUSTOM:
            self._depth_method = default_method(self.student_source.strip(), self.layers)

    # What the form makes -----------------------------------------------------------------
    def config(self, train: list[str]):
        source = self.student_source.strip()
        student = StudentConfig(source=source, layers=None if source in SMALL_SOURCES else self.layers)
        method = MethodConfig(name=self.method, temperature=self.temperature,
                              b=self.b if self.b_applies() else None)
        if self.advanced:  # folded, the method's own settings stand
            method.term_weights = dict(self.term_weights)
            method.calibrate = "grad-norm" if self.calibrate else "none"
            method.term_ratios = {t: r for t, r in self.term_ratios.items() if self.ratio_applies(t)}
            method.attention = self.attention
        teacher = self.new_teacher_name() if self.fine_tune_first else self.teacher.strip()
        return DistillConfig(teacher=teacher, student=student, method=method, train_files=train,
                             dev_file=self.dev_file.strip() or None, unlabeled_files=list(self.unlabeled_files),
                             training=self.training())

    def teacher_config(self, config):
        """The fine-tuning the chain starts with (None: a teacher exists): the same data
        at the CLI's teacher rate, with this form's epochs, batch size and device."""
        if not self.fine_tune_first:
            return None
        training = replace(config.training, learning_rate=TrainingConfig().learning_rate)
        return TeacherConfig(base_model=self.base_encoder_ref(), train_files=list(config.train_files),
                             dev_file=config.dev_file, training=training)

    def checked(self, train: list[str]):
        config, teacher = super().checked(train)
        depth = self.teacher_layers() if config.student.source == "teacher" else None
        if depth and config.student.layers >= depth:
            raise FastBioNERError(f"the student must have fewer layers than its teacher ({depth}): "
                                  f"{config.student.layers} compresses nothing")
        return config, teacher

    def run_key(self, config, teacher) -> dict:
        return {**super().run_key(config, teacher), "compact": not self.keep_full_precision}

    def job(self, config, teacher, name: str) -> tuple[str, Callable]:
        teacher_name = self.new_teacher_name() if teacher is not None else None
        compact = not self.keep_full_precision
        title = f"Fine-tune {teacher_name}, distil {name}" if teacher is not None else f"Distil {name}"

        def run(on_event, cancel):
            return fine_tune_then_distill(teacher, teacher_name, config, name, compact=compact,
                                          on_event=on_event, cancel=cancel)
        return title, run
