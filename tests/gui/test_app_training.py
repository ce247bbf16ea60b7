"""Distillation from the app on tiny models: the dialog fills the core's config, the
job runs in the background with live curves in the jobs panel, the new student
appears in the model picker; a cancelled run registers nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fastbioner.jobs import JobState

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_models import make_tiny_model  # noqa: E402

SENTENCES = [
    [("cocaine", "B-Chemical"), ("induced", "O"), ("seizures", "B-Disease"), ("in", "O"), ("rats", "O")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("toxicity", "B-Disease")],
    [("naloxone", "B-Chemical"), ("and", "O"), ("clonidine", "B-Chemical"), ("after", "O"),
     ("heart", "B-Disease"), ("failure", "I-Disease")],
    [("the", "O"), ("dose", "O"), ("was", "O"), ("increased", "O")],
]


@pytest.fixture
def tiny_teacher(tmp_path):
    from fastbioner.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "teacher-src"), "tiny-teacher", kind="teacher")
    bio = tmp_path / "train.conll"
    bio.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in SENTENCES * 4) + "\n",
                   encoding="utf-8")
    return bio


def _dialog(window, bio):
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog

    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, ["tiny-teacher"], window)
    dialog.jobStarted.connect(window._training_started)
    dialog.train_files.add_paths([str(bio)])
    dialog.dev_file.setText(str(bio))
    dialog.layers.setCurrentText("custom")
    dialog.custom_layers.setValue(1)
    dialog.epochs.setValue(2)
    dialog.batch_size.setValue(4)
    dialog.device.setCurrentText("cpu")
    dialog.name.setText("tiny-student")
    return dialog


def test_distillation_runs_with_live_curves_and_registers_the_student(window, tiny_teacher, qtbot):
    dialog = _dialog(window, tiny_teacher)
    assert dialog.method.currentText() == "fastbioner" and dialog.b.value() == pytest.approx(0.3)
    config = dialog.build_config()
    assert config.student.layers == 1 and config.method.b == pytest.approx(0.3)
    job = dialog.start()
    assert job is not None and window.job_strip.row_for(job) is not None
    assert not window.jobs_dock.isVisible()  # the curves open when asked for
    window.job_strip.row_for(job).curves.click()
    assert window.jobs_dock.isVisible() and window.jobs_panel.list.currentRow() == 0
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
    qtbot.waitUntil(lambda: window.picker.findData("tiny-student") >= 0, timeout=30000)
    assert window.picker.current_name() == "tiny-student"
    assert "Teacher" in window.card.toPlainText() and "tiny-teacher" in window.card.toPlainText()


def test_a_cancelled_distillation_registers_nothing(window, tiny_teacher, qtbot):
    from fastbioner.registry import Registry

    job = _dialog(window, tiny_teacher).start()
    # At once: a tiny run can end within one event-loop turn on an idle machine.
    window.jobs_panel.row_for(job).cancel.click()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.CANCELLED
    assert [e.name for e in Registry().list()] == ["tiny-teacher"]


def test_the_dialog_refuses_settings_the_core_refuses(window, tiny_teacher):
    dialog = _dialog(window, tiny_teacher)
    dialog.teacher.setCurrentText("")
    assert dialog.start() is None and "teacher" in dialog.error.text()
    assert window.jobs.running() == [] or all(j.kind == "quiet" for j in window.jobs.running())


def test_the_dialog_measures_the_run_time_in_the_background(window, tiny_teacher, qtbot):
    from fastbioner.registry import Registry

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
    from fastbioner.config import TrainingConfig
    from fastbioner.distill.methods import MethodConfig

    dialog = _dialog(window, tiny_teacher)
    assert dialog.learning_rate.value() == pytest.approx(TrainingConfig().learning_rate)
    folded = dialog.build_config().method
    assert folded.term_weights == MethodConfig().term_weights and folded.calibrate == MethodConfig().calibrate
    assert not dialog.advanced.body.isVisible()
    dialog.student_source.setCurrentText("bigru")
    from fastbioner.distill.config import RECURRENT_LR

    assert dialog.learning_rate.value() == pytest.approx(RECURRENT_LR)
    dialog.student_source.setCurrentText("teacher")
    assert dialog.learning_rate.value() == pytest.approx(TrainingConfig().learning_rate)
    dialog.advanced.setChecked(True)
    assert dialog.advanced.body.isVisibleTo(dialog)
    dialog.advanced.weights["attention"].setValue(0.01)
    dialog.advanced.calibrate.setChecked(True)
    dialog.advanced.attention.setCurrentText("centred")
    method = dialog.build_config().method
    assert method.term_weights == {"attention": pytest.approx(0.01)}
    assert method.calibrate == "grad-norm" and method.attention == "centred"
    method.to_method()  # a valid method
    dialog.reject()


def test_training_on_curated_work_takes_reviewed_documents_with_gold_and_accepted_entities(window, tiny_teacher,
                                                                                           qtbot):
    from fastbioner.documents import Source
    from fastbioner.formats import read_documents
    from gui_documents import make_documents

    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0)
    window.curation.accept([s for s in window.workspace.document(0).spans if s.source is Source.MODEL][:1])
    dialog = _dialog(window, tiny_teacher)
    assert dialog.curated_training_file() is None  # edited, in review: not yet for training
    window.mark_reviewed_action.trigger()
    path = dialog.curated_training_file()
    (doc,) = list(read_documents(path))
    assert [doc.span_text(s) for s in doc.spans] == ["Lithium carbonate", "toxicity", "heart failure"]
