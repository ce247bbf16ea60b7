"""The training dialogs' form model without a window (fastbioner_gui.forms, which
imports no Qt): a recipe sets every field it names, a field edited by hand leaves the
recipe and the form follows a recipe again once its settings are that recipe's, the
recipe's depth follows the teacher, Cancel's reset puts every value back, and the
remembered settings come back from the settings file as they were saved (a hand-edited
file gives the defaults, a deleted file is left out)."""

from __future__ import annotations

import json

import pytest

from fastbioner import RECIPES, DistillConfig, recipe
from fastbioner.train.distill.config import default_learning_rate, default_method
from fastbioner_gui.forms.distill import CUSTOM, DistillForm
from fastbioner_gui.forms.training import TeacherForm

MANIFESTS = {"six": {"kind": "teacher", "layers": 6}, "twelve": {"kind": "teacher", "layers": 12},
             "three": {"kind": "teacher", "layers": 3}}


def _form(**kw) -> DistillForm:
    return DistillForm(teachers=["twelve", "six", "three"], manifests=MANIFESTS, **kw)


def test_choosing_a_recipe_sets_every_field_it_names_as_the_core_recipe_does():
    """The defect: choosing Balanced again restored the rate but left batch size 1."""
    form = _form()
    assert form.recipe == "Balanced"
    form.student_source = "bigru"
    form.student_source = "teacher"
    form.layers = 2
    form.method = "hinton"
    form.temperature = 5.0
    form.epochs = 2
    form.learning_rate = 1e-4
    form.batch_size = 1
    assert form.recipe == CUSTOM
    for r in RECIPES:
        form.recipe = r.name
        assert all(form.get(f) == v for f, v in form.recipe_values(r.name).items())
        assert form.batch_size == 16 and form.follows(r.name)
        # the config the form makes is the core recipe's (student, method, epochs, rate)
        made = form.config(["train.conll"])
        core = recipe(r.name).apply(DistillConfig(teacher="twelve", train_files=["train.conll"]), 12)
        assert made.student == core.student
        assert (made.method.name, made.method.temperature) == (core.method.name, core.method.temperature)
        assert (made.training.epochs, made.training.learning_rate) == (core.training.epochs,
                                                                       core.training.learning_rate)


def test_a_field_edited_by_hand_leaves_the_recipe_until_the_settings_are_a_recipes_again():
    form = _form()
    epochs = form.epochs
    form.epochs = epochs + 1
    assert form.recipe == CUSTOM
    form.epochs = epochs
    assert form.recipe == "Balanced"  # the settings are Balanced's again
    form.batch_size = 8
    assert form.recipe == CUSTOM
    form.batch_size = 16
    form.layers = 3  # the rate and method follow the depth, as the CLI's do: the settings are Fast's
    assert form.learning_rate == pytest.approx(default_learning_rate("teacher", 3))
    assert form.method == default_method("teacher", 3) and form.recipe == "Fast"
    form.advanced = True
    form.term_weights = {"attention": 0.01}  # counts only while Advanced is open
    assert form.recipe == CUSTOM
    form.advanced = False
    assert form.recipe == "Fast"


def test_a_method_chosen_by_hand_stays_when_the_depth_changes_and_a_new_source_sets_its_own():
    form = _form()
    form.method = "og"
    form.layers = 3
    assert form.method == "og"
    form.student_source = "bigru"
    assert form.method == default_method("bigru") and form.learning_rate == default_learning_rate("bigru")
    assert form.config(["t.conll"]).student.layers is None  # a recurrent student has no teacher layers


def test_the_recipes_depth_follows_the_teacher_and_stays_below_it():
    form = _form()
    form.recipe = "Accurate"
    assert form.layers == 6
    form.teacher = "three"
    assert form.layers == 2 and form.layer_choices() == [2, 1] and form.most_layers() == 2
    form.teacher = "twelve"
    assert form.layers == 6
    form.recipe = CUSTOM  # Custom: the depth stays as set; Start refuses one as deep as the teacher
    form.teacher = "six"
    assert form.layers == 6
    with pytest.raises(Exception, match="fewer layers than its teacher"):
        form.checked(["t.conll"])


def test_reset_puts_back_every_value_the_form_opened_with_and_tells_the_widgets():
    form = _form()
    opened = form.values()
    form.recipe = "Fast"
    form.batch_size = 1
    form.device = "cpu"
    form.keep_full_precision = True
    shown = {}
    form.watch(lambda name, value: shown.__setitem__(name, value))
    form.reset(opened)
    assert form.values() == opened
    assert shown["batch_size"] == 16 and shown["recipe"] == "Balanced" and shown["device"] == "auto"


def test_remembered_settings_come_back_as_saved(tmp_path):
    data = tmp_path / "train.conll"
    data.write_text("a\tO\n", encoding="utf-8")
    form = _form()
    form.train_files = [str(data)]
    form.teacher = "six"
    form.layers = 1
    form.epochs = 9
    form.advanced = True
    form.calibrate = True
    form.term_ratios = {"hidden": 200.0}
    form.keep_full_precision = True
    form.name = "not remembered"
    saved = json.loads(json.dumps(form.remembered()))  # through the settings file
    again = _form()
    again.restore(saved)
    assert again.remembered() == form.remembered() and again.recipe == CUSTOM
    assert again.name == "" and again.teacher == "six" and again.term_ratios == {"hidden": 200.0}
    data.unlink()  # a file since deleted is left out
    third = _form()
    third.restore(saved)
    assert third.train_files == [] and third.epochs == 9


def test_a_named_recipe_comes_back_at_the_depth_of_todays_teacher():
    form = _form()
    form.recipe = "Accurate"
    saved = form.remembered()
    smaller = DistillForm(teachers=["three"], manifests=MANIFESTS)
    smaller.restore(saved)  # "twelve" is no longer offered: the teacher stays the first offered
    assert smaller.teacher == "three" and smaller.recipe == "Accurate" and smaller.layers == 2


@pytest.mark.parametrize("bad", [
    {"epochs": "ten", "batch_size": True, "learning_rate": "fast", "device": "gpu", "method": "nope",
     "recipe": "Quick", "train_files": "x", "term_weights": {"soft": "high"}, "keep_full_precision": 1},
    [1, 2], "garbage", None])
def test_a_hand_edited_settings_file_gives_the_defaults_never_a_crash(bad):
    form = _form()
    form.restore(bad)
    assert form.values() == _form().values()


def test_a_student_is_compacted_unless_asked_and_the_teacher_form_makes_its_config():
    form = _form()
    assert form.keep_full_precision is False
    assert form.run_key(form.config(["t.conll"]), None)["compact"] is True
    teacher = TeacherForm(device="cpu", reviewed=2)
    teacher.base = " bert-base "
    config = teacher.config(["t.conll"])
    assert config.base_model == "bert-base" and config.training.device == "cpu" and teacher.use_curated
    assert "base" in teacher.remembered() and "use_curated" not in teacher.remembered()


def test_a_new_user_with_no_teacher_fine_tunes_one_first(tmp_path):
    encoder = tmp_path / "tiny-encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text('{"num_hidden_layers": 4}', encoding="utf-8")
    form = DistillForm(encoders=[encoder])
    assert form.fine_tune_first and form.base_encoder == "tiny-encoder" and form.teacher_layers() == 4
    assert form.layers == 3  # Balanced's 4 layers, below the new teacher's 4
    config = form.config(["t.conll"])
    teacher = form.teacher_config(config)
    assert teacher.base_model == str(encoder) and config.teacher == form.new_teacher_name()


def test_drets_knobs_reach_the_config_only_while_advanced_is_open(tmp_path):
    encoder = tmp_path / "minilm-dret"
    encoder.mkdir()
    teacher = TeacherForm(device="cpu", encoders=[encoder, "org/hub-model"])
    teacher.put(base="minilm-dret", freeze_embeddings=True, layer_lr_decay=0.8, head_lr_scale=5.0)
    folded = teacher.config(["t.tsv"])
    assert folded.base_model == str(encoder)   # an installed encoder (a transferred one too) by its name
    assert not folded.training.freeze_embeddings and folded.training.layer_lr_decay == 1.0
    teacher.put(advanced=True)
    training = teacher.config(["t.tsv"]).training
    assert training.freeze_embeddings and training.layer_lr_decay == 0.8 and training.head_lr_scale == 5.0

    form = DistillForm(teachers=["t"], manifests={"t": {"kind": "teacher", "layers": 6}}, device="cpu")
    assert form.recipe != CUSTOM
    form.edit(advanced=True)
    form.edit(freeze_embeddings=True)
    assert form.recipe == CUSTOM       # a knob changed by hand leaves the recipe
    assert form.config(["t.tsv"]).training.freeze_embeddings
    form.edit(recipe=RECIPES[0].name)  # and a recipe puts it back
    assert not form.freeze_embeddings
