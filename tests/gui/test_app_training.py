"""Distillation from the app on tiny models: the dialog fills the core's config from a
recipe or by hand, measures the run time before starting, the job runs in the
background with live curves in the jobs panel, the new student is offered with its
card (never switched to silently); a cancelled run registers nothing; a new user with
no teacher fine-tunes one from a base encoder and distils it in one job."""

from __future__ import annotations

import pytest

from fastbioner.base.jobs import JobState

from tiny_models import make_tiny_model

SENTENCES = [
    [("cocaine", "B-Chemical"), ("induced", "O"), ("seizures", "B-Disease"), ("in", "O"), ("rats", "O")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("toxicity", "B-Disease")],
    [("naloxone", "B-Chemical"), ("and", "O"), ("clonidine", "B-Chemical"), ("after", "O"),
     ("heart", "B-Disease"), ("failure", "I-Disease")],
    [("the", "O"), ("dose", "O"), ("was", "O"), ("increased", "O")],
]


@pytest.fixture
def tiny_teacher(tmp_path):
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "teacher-src"), "tiny-teacher", kind="teacher")
    bio = tmp_path / "train.conll"
    bio.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in SENTENCES * 4) + "\n",
                   encoding="utf-8")
    return bio


def _dialog(window, bio, measure_first=False):
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog

    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, ["tiny-teacher"], window)
    dialog.jobStarted.connect(window.training.follow)
    dialog.estimate_first.setChecked(measure_first)
    dialog.train_files.add_paths([str(bio)])
    dialog.dev_file.setText(str(bio))
    dialog.rows.method.setCurrentText("fastbioner")
    dialog.rows.layers.setCurrentText("custom")
    dialog.rows.custom_layers.setValue(1)
    dialog.epochs.setValue(2)
    dialog.batch_size.setValue(4)
    dialog.device.setCurrentText("cpu")
    dialog.name.setText("tiny-student")
    return dialog


def test_distillation_runs_with_live_curves_and_the_student_is_offered_not_switched_to(window, tiny_teacher,
                                                                                       qtbot):
    window.refresh_models(select="tiny-teacher")
    qtbot.waitUntil(lambda: window.picker.current_name() == "tiny-teacher", timeout=30000)
    dialog = _dialog(window, tiny_teacher, measure_first=True)
    # Unticked: the student is compacted, as the training guide says.
    assert not dialog.rows.keep_full_precision.isChecked()
    assert dialog.rows.recipe.currentData() == "Custom"  # the settings were changed by hand
    assert dialog.rows.method.currentText() == "fastbioner" and dialog.rows.b.value() == pytest.approx(0.3)
    config = dialog.build_config()
    assert config.student.layers == 1 and config.method.b == pytest.approx(0.3)
    # The run time shows before the run starts: the first Start measures it.
    assert dialog.start() is None
    estimate = dialog.estimate_job
    with qtbot.waitSignal(estimate.finished, timeout=120000):
        pass
    assert dialog.estimate_label.text().startswith("about") and dialog.start_button.text() == "Start now"
    job = dialog.start()
    assert job is not None and window.job_strip.row_for(job) is not None
    assert not window.docks["jobs"].isVisible()  # the curves open when asked for
    window.job_strip.row_for(job).curves.click()
    assert window.docks["jobs"].isVisible() and window.jobs_panel.list.currentRow() == 0
    row = window.jobs_panel.row_for(job)
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    curves = window.jobs_panel.curves
    curves.refresh()
    assert {"phi", "soft", "gold", "hidden", "f1"} <= set(curves.series)
    xs, phis = curves.series["phi"]
    assert phis[0] == pytest.approx(0.5034, abs=0.01) and phis == sorted(phis, reverse=True)
    assert len(curves.series["f1"][0]) == 2  # devel F1 after each epoch
    # a log scale for the losses, and each curve can be switched off
    curves.log_scale.setChecked(True)
    assert curves.losses.getAxis("left").logMode
    curves.toggles["soft"].setChecked(False)
    assert not curves._items["soft"].isVisible() and curves._items["gold"].isVisible()
    row.update_view()
    assert row.status.text().startswith("done") and not row.cancel.isEnabled()
    # Offered with its card, scores and size against its teacher; the picker stays.
    qtbot.waitUntil(lambda: window.picker.findData("tiny-student") >= 0, timeout=30000)
    offer = window.training.new_model_offer
    assert offer is not None and offer.isVisible()
    text = offer.text()
    assert "tiny-student" in text and "devel F1 overall" in text and "of the size of its teacher tiny-teacher" in text
    assert "smaller than its teacher" in text and "Compacted" in text
    assert window.picker.current_name() == "tiny-teacher"
    offer.use_button.click()
    qtbot.waitUntil(lambda: window.picker.current_name() == "tiny-student", timeout=30000)
    assert "Teacher" in window.card.toPlainText() and "tiny-teacher" in window.card.toPlainText()
    assert "Against its teacher" in window.card.toPlainText()


def test_keep_the_current_one_leaves_the_picker_alone(window, tiny_teacher, qtbot):
    window.refresh_models(select="tiny-teacher")
    qtbot.waitUntil(lambda: window.picker.current_name() == "tiny-teacher", timeout=30000)
    dialog = _dialog(window, tiny_teacher)
    dialog.rows.keep_full_precision.setChecked(True)
    dialog.epochs.setValue(1)
    job = dialog.start()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    qtbot.waitUntil(lambda: window.picker.findData("tiny-student") >= 0, timeout=30000)
    offer = window.training.new_model_offer
    assert "Compacted" not in offer.text()  # full precision, as asked
    offer.keep_button.click()
    assert not offer.isVisible() and window.picker.current_name() == "tiny-teacher"


@pytest.mark.parametrize("kind", ["distill", "teacher"])
def test_the_dialog_opens_tall_enough_for_every_row(window, qtbot, kind):
    """The recipe note wraps, so the height the dialog needs depends on its width;
    opened, no row is squeezed below its minimum: the training-file list shows its
    Add and Remove buttons whole, above the next row."""
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog

    manifests = {"six": {"kind": "teacher", "layers": 6, "size_bytes": 90 * 1048576}}
    dialog = TrainingDialog(kind, window.workspace, window.jobs, window.settings, ["six"], window,
                            manifests=manifests)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    files = dialog.train_files
    assert files.height() >= files.minimumSizeHint().height()
    for button in (files.add_button, files.remove_button):
        assert button.height() >= button.sizeHint().height()
    assert files.geometry().bottom() < dialog.use_curated.geometry().top()


def test_recipes_fill_the_settings_with_a_student_smaller_than_its_teacher(window, monkeypatch):
    from fastbioner.train.guided import RECIPE_EPOCHS, RECIPE_NOTE
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog

    manifests = {"six": {"kind": "teacher", "layers": 6, "size_bytes": 90 * 1048576}}
    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, ["six"], window,
                            manifests=manifests)
    assert not dialog.rows.fine_tune_first.isChecked()  # a teacher exists
    assert dialog.rows.recipe.currentData() == "Balanced"
    # For a curator: the time on this machine and the benchmark quality, from core's table
    from fastbioner.train.distill.config import teacher_layers_methods_summary
    from fastbioner.train.distill.config import teacher_layers_f1
    assert "Time on this machine" in dialog.rows.recipe_note.text()
    assert f"{teacher_layers_f1()[4][0]:.1f} F1" in dialog.rows.recipe_note.text()
    # the research behind the recipes only under Advanced
    assert RECIPE_NOTE in dialog.rows.research_note.text() and not dialog.rows.research_note.isVisibleTo(dialog)
    assert "docs/research/benchmarks.md" in RECIPE_NOTE and "%" not in RECIPE_NOTE  # no accuracy claimed
    assert teacher_layers_methods_summary() in dialog.rows.research_note.text()  # core's rule, not a copy
    from fastbioner.train.distill.config import default_learning_rate, default_method

    # readable, the CLI's for the Balanced recipe's 4 layers
    assert dialog.learning_rate.text() == f"{default_learning_rate('teacher', 4):g}"
    got = {}
    for name in ("Fast", "Balanced", "Accurate"):
        dialog.rows.recipe.setCurrentIndex(dialog.rows.recipe.findData(name))
        config = dialog.build_config(train=["unused.conll"])
        # the method that led at the recipe's depth (core's TEACHER_LAYERS_METHOD)
        assert config.method.name == default_method("teacher", config.student.layers)
        assert config.method.temperature == 2.0
        assert config.training.epochs == RECIPE_EPOCHS
        # the CLI's rate for the recipe's depth: the 3-layer students' above the deeper ones'
        assert config.training.learning_rate == pytest.approx(default_learning_rate("teacher", config.student.layers))
        got[name] = (config.student.layers, config.training.learning_rate, config.method.name)
    assert {n: layers for n, (layers, _, _) in got.items()} == {"Fast": 3, "Balanced": 4, "Accurate": 5}  # never 6 of 6
    assert {n: method for n, (_, _, method) in got.items()} == {
        "Fast": "pkd", "Balanced": "pkd", "Accurate": "pkd"}  # 5 of 6 layers: nearest is 6
    assert got["Fast"][1] > got["Balanced"][1] == got["Accurate"][1]
    assert "5-layer student (the teacher has 6)" in dialog.rows.recipe.currentText()
    assert [dialog.rows.layers.itemText(i) for i in range(dialog.rows.layers.count())] == ["4", "3", "2", "1", "custom"]
    assert dialog.rows.custom_layers.maximum() == 5
    assert "six: 6 layers, 90.0 MB" in dialog.rows.teacher_size.text()
    dialog.epochs.setValue(5)  # by hand: the recipe no longer applies
    assert dialog.rows.recipe.currentData() == "Custom" and dialog.epochs.value() == 5
    # the method follows the depth (as if hinton had led at 4 layers) unless chosen by hand
    from dataclasses import replace

    from fastbioner.base import defaults as defaults_table
    real = defaults_table.table()
    by_depth = {**real.by_depth, 4: replace(real.by_depth[4], method="hinton")}
    monkeypatch.setattr(defaults_table, "table", lambda: replace(real, by_depth=by_depth))
    dialog.rows.set_layer_count(4)
    assert dialog.rows.method.currentText() == "hinton"
    dialog.rows.set_layer_count(3)
    assert dialog.rows.method.currentText() == "pkd"
    dialog.rows.method.setCurrentText("og")
    dialog.rows.set_layer_count(4)
    assert dialog.rows.method.currentText() == "og"
    dialog.learning_rate.lineEdit().setText("3e-4")
    dialog.learning_rate.interpretText()
    assert dialog.learning_rate.value() == pytest.approx(3e-4) and dialog.learning_rate.text() == "0.0003"
    dialog.reject()


def test_a_new_user_fine_tunes_a_teacher_then_distils_in_one_job(window, tmp_path, monkeypatch, qtbot):
    """No teacher registered (the only model is the one in use, a student): the dialog
    offers to fine-tune one from the installed base encoders, and one job (one row, one
    progress stream) registers the teacher and the compacted student."""
    from fastbioner.models.registry import Registry
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from tiny_models import make_tiny_encoder

    monkeypatch.setenv("FASTBIONER_BASE_MODELS", str(tmp_path / "bases"))
    make_tiny_encoder(tmp_path / "bases" / "tiny-encoder", layers=2)
    Registry().import_folder(make_tiny_model(tmp_path / "in-use"), "in-use", kind="student")
    bio = tmp_path / "train.conll"
    bio.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in SENTENCES * 4) + "\n",
                   encoding="utf-8")
    window.refresh_models(select="in-use")
    qtbot.waitUntil(lambda: window.picker.current_name() == "in-use", timeout=30000)
    teachers = [n for n, m in window.picker.manifests.items() if m.get("kind") == "teacher"]
    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, teachers, window,
                            manifests=window.picker.manifests)
    dialog.jobStarted.connect(window.training.follow)
    assert teachers == [] and dialog.rows.fine_tune_first.isChecked() and not dialog.rows.teacher.isEnabled()
    assert dialog.rows.base_encoder.currentText() == "tiny-encoder" and dialog.form.teacher_layers() == 2
    assert dialog.rows.layer_count() == 1  # the recipe's student is shallower than the 2-layer teacher
    dialog.estimate_first.setChecked(False)
    dialog.train_files.add_paths([str(bio)])
    dialog.dev_file.setText(str(bio))
    dialog.rows.teacher_name.setText("my-teacher")
    dialog.name.setText("my-student")
    dialog.epochs.setValue(1)
    dialog.batch_size.setValue(4)
    dialog.device.setCurrentText("cpu")
    dialog.rows.keep_full_precision.setChecked(False)  # compacted, as asked
    job = dialog.start()
    assert job is not None and window.jobs_panel.row_for(job) is not None
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    assert [j for j in window.jobs.jobs() if j.kind == "train"] == [job]  # one chained job
    stages = [e.stage for e in job.events]
    assert stages.index("teacher: train") < stages.index("student: distill") < stages.index("compact: write")
    seqs = [e.seq for e in job.events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    registry = Registry()
    assert sorted(e.name for e in registry.list()) == ["in-use", "my-student", "my-teacher"]
    assert registry.get("my-student").manifest.parent == "my-teacher"
    qtbot.waitUntil(lambda: window.picker.findData("my-student") >= 0, timeout=30000)
    assert window.picker.current_name() == "in-use"  # offered, not switched to
    assert "of the size of its teacher my-teacher" in window.training.new_model_offer.text()
    assert "smaller than its teacher" in window.training.new_model_offer.text()
    assert "teacher my-teacher fine-tuned from" in window.training.new_model_offer.text()
    window.training.new_model_offer.keep_button.click()
    assert window.picker.current_name() == "in-use"


def test_a_cancelled_distillation_registers_nothing(window, tiny_teacher, qtbot):
    from fastbioner.models.registry import Registry

    job = _dialog(window, tiny_teacher).start()
    # At once: a tiny run can end within one event-loop turn on an idle machine.
    window.jobs_panel.row_for(job).cancel.click()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.CANCELLED
    assert [e.name for e in Registry().list()] == ["tiny-teacher"]


def test_unlabelled_text_from_the_dialog_takes_part_and_is_saved_with_the_student(window, tiny_teacher, qtbot):
    from fastbioner.models.registry import Registry

    text = tiny_teacher.parent / "abstracts.txt"
    text.write_text("Lithium induced renal failure in rats.\n\nNaloxone reverses hypertension.\n", encoding="utf-8")
    dialog = _dialog(window, tiny_teacher)
    assert dialog.build_config().unlabeled_files == []  # optional: none unless added
    dialog.rows.unlabeled_files.add_paths([str(text)])
    job = dialog.start()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    config = Registry().get("tiny-student").manifest.config
    # The manifest names the files (not this machine's folders), the text beside the tagged data.
    assert config["unlabeled_files"] == [text.name] and config["train_files"] == [tiny_teacher.name]


def test_the_dialog_refuses_settings_the_core_refuses(window, tiny_teacher):
    dialog = _dialog(window, tiny_teacher)
    dialog.rows.teacher.setCurrentText("")
    assert dialog.start() is None and "teacher" in dialog.error.text()
    assert window.jobs.running() == [] or all(j.kind == "quiet" for j in window.jobs.running())


def test_the_dialog_measures_the_run_time_in_the_background(window, tiny_teacher, qtbot):
    from fastbioner.models.registry import Registry

    dialog = _dialog(window, tiny_teacher)
    dialog.estimate_button.click()
    job = dialog.estimate_job
    assert job is not None and dialog.estimate_label.text().startswith("measuring")
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    text = dialog.estimate_label.text()
    assert text.startswith("about") and "8 steps" in text and "measured from 8 steps" in text  # 16 / 4 x 2
    assert window.jobs_panel.row_for(job) is None  # housekeeping, not a job of the panel
    assert [e.name for e in Registry().list()] == ["tiny-teacher"]


def test_closing_the_dialog_stops_a_measurement(window, tiny_teacher, qtbot):
    dialog = _dialog(window, tiny_teacher)
    job = dialog.estimate()
    dialog.reject()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state in (JobState.CANCELLED, JobState.DONE)
    assert job.token.cancelled


def test_the_advanced_section_sets_term_weights_calibration_and_attention(window, tiny_teacher):
    """Folded (the default) it leaves the method's defaults; opened, its weights,
    calibration and attention form reach the config the job runs with, and the
    learning rate starts at the CLI's default."""
    from fastbioner.train.distill.config import default_learning_rate
    from fastbioner.train.distill.methods import MATCHING_TERMS, METHODS, MethodConfig

    dialog = _dialog(window, tiny_teacher)
    assert dialog.rows.layer_count() == 1
    assert dialog.learning_rate.value() == pytest.approx(default_learning_rate("teacher", 1))
    dialog.rows.custom_layers.setValue(5)  # a deeper student: the CLI's lower rate
    assert dialog.learning_rate.value() == pytest.approx(default_learning_rate("teacher", 5))
    assert default_learning_rate("teacher", 5) < default_learning_rate("teacher", 1)
    dialog.rows.custom_layers.setValue(1)
    folded = dialog.build_config().method
    assert folded.term_weights == MethodConfig().term_weights and folded.calibrate == MethodConfig().calibrate
    assert not dialog.rows.advanced.body.isVisible()
    # Folded, the section is its one line: no empty frame below the check box.
    assert dialog.rows.advanced.sizeHint().height() == dialog.rows.advanced.header.sizeHint().height()
    dialog.rows.student_source.setCurrentText("bigru")
    from fastbioner.train.distill.config import default_epochs

    assert dialog.learning_rate.value() == pytest.approx(default_learning_rate("bigru"))
    dialog.rows.student_source.setCurrentText("cnn")  # the CLI's epochs for such a student too
    assert dialog.epochs.value() == default_epochs("cnn") == dialog.build_config().training.epochs
    dialog.rows.student_source.setCurrentText("teacher")
    assert dialog.learning_rate.value() == pytest.approx(default_learning_rate("teacher", 1))
    assert dialog.epochs.value() == default_epochs("teacher")
    dialog.rows.advanced.setChecked(True)
    assert dialog.rows.advanced.body.isVisibleTo(dialog)
    dialog.rows.advanced.weights["attention"].setValue(0.01)
    dialog.rows.advanced.calibrate.setChecked(True)
    dialog.rows.advanced.attention.setCurrentText("centred")
    method = dialog.build_config().method
    assert method.term_weights == {"attention": pytest.approx(0.01)}
    assert method.calibrate == "grad-norm" and method.attention == "centred"
    assert method.term_ratios == {}  # every pull left at 1: the calibration's default
    method.to_method()  # a valid method
    # A matching term's pull under calibration reaches the config (--term-ratio); a box
    # is live only for a term the chosen method has, and only while calibrating.
    dialog.rows.method.setCurrentText("fastbioner")  # the paper's form: uncalibrated until asked
    assert not any(box.isEnabled() for box in dialog.rows.advanced.ratios.values())
    dialog.rows.advanced.calibrate.setChecked(True)
    own = set(METHODS["fastbioner"].term_names)
    live = {t for t, box in dialog.rows.advanced.ratios.items() if box.isEnabled()}
    assert live == own & set(MATCHING_TERMS) and "hidden" in live
    assert not dialog.rows.advanced.ratios["hidden-norm"].isEnabled()  # pkd's term, not this method's
    dialog.rows.advanced.ratios["hidden"].setValue(200)
    method = dialog.build_config().method
    assert method.term_ratios == {"hidden": pytest.approx(200)}
    assert method.to_method().calibrate == "grad-norm"
    dialog.rows.advanced.calibrate.setChecked(False)  # no calibration: no pull to set, none sent
    assert not any(box.isEnabled() for box in dialog.rows.advanced.ratios.values())
    assert dialog.build_config().method.term_ratios == {}
    dialog.rows.method.setCurrentText("pkd")
    dialog.rows.advanced.calibrate.setChecked(True)
    ratios = dialog.rows.advanced.ratios
    assert ratios["hidden-norm"].isEnabled() and not ratios["hidden"].isEnabled()
    dialog.reject()


def test_the_dialog_shows_each_methods_own_b_calibration_and_attention(window, tiny_teacher):
    """Choosing a method shows its own settings, as the CLI takes them: fastbioner-cal
    calibrated, centred, b = 0; the paper's fastbioner uncalibrated, scores, b = 0.3;
    b only for a dynamic schedule."""
    from fastbioner.train.distill.methods import METHODS

    dialog = _dialog(window, tiny_teacher)
    for name in ("fastbioner-cal", "fastbioner", "hinton"):
        own = METHODS[name]
        dialog.rows.method.setCurrentText(name)
        assert dialog.rows.advanced.calibrate.isChecked() == (own.calibrate != "none")
        assert dialog.rows.advanced.attention.currentText() == own.attention
        assert dialog.rows.b.isEnabled() == (own.schedule.name == "dynamic")
        if dialog.rows.b.isEnabled():
            assert dialog.rows.b.value() == pytest.approx(own.schedule.b)
        built = dialog.build_config().method.to_method()
        assert (built.calibrate, built.attention, built.schedule.b) == (own.calibrate, own.attention,
                                                                       own.schedule.b)
    dialog.reject()


def test_training_on_curated_work_takes_reviewed_documents_with_gold_and_accepted_entities(window, tiny_teacher,
                                                                                           qtbot):
    from fastbioner.io.documents import Source
    from fastbioner.io.formats import read_documents
    from gui_documents import make_documents

    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    window.curation.accept([s for s in window.workspace.document(0).spans if s.source is Source.MODEL][:1])
    dialog = _dialog(window, tiny_teacher)
    assert dialog.curated_training_file() is None  # edited, in review: not yet for training
    window.commands["curate.mark_reviewed"].trigger()
    path = dialog.curated_training_file()
    (doc,) = list(read_documents(path))
    assert [doc.span_text(s) for s in doc.spans] == ["Lithium carbonate", "toxicity", "heart failure"]


def test_bf16_training_on_the_cpu_is_offered_off_and_reaches_the_run_config(window, tiny_teacher, monkeypatch):
    """Off by default; where the CPU has native bf16 and the device is not a GPU it can
    be ticked, and the job's training config carries it; on the GPU it is unticked."""
    monkeypatch.setattr("fastbioner.models.precision.cpu_flags_say_bf16", lambda: True)
    dialog = _dialog(window, tiny_teacher)
    dialog.show_states()
    assert not dialog.build_config().training.cpu_bf16
    assert dialog.cpu_bf16.isEnabled()
    dialog.cpu_bf16.setChecked(True)
    assert dialog.build_config().training.cpu_bf16
    dialog.device.setCurrentText("cuda")
    assert not dialog.cpu_bf16.isEnabled() and not dialog.build_config().training.cpu_bf16
    monkeypatch.setattr("fastbioner.models.precision.cpu_flags_say_bf16", lambda: False)
    dialog.device.setCurrentText("cpu")
    assert not dialog.cpu_bf16.isEnabled()
    dialog.reject()
