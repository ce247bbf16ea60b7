"""Distil a student on a fresh install (issue 67, item 1): no teacher registered and no
base encoder installed, the dialog offers the model the curator tags with as the
teacher, a student of fewer of its layers, and the bundled sample abstracts to train
on; Start runs, and the student tags a document."""

from __future__ import annotations

from fastbioner.base.jobs import JobState

from gui_documents import make_documents
from tiny_models import make_tiny_model


def test_start_distils_a_student_that_tags_on_a_fresh_user_folder(qtbot, tmp_path, monkeypatch):
    from fastbioner.models.registry import Registry
    from fastbioner.models.shipped import sample_files
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from fastbioner_gui.main_window import MainWindow

    # A fresh machine: the shipped default (tiny here), no base encoder, no download.
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(make_tiny_model(tmp_path / "default-model",
                                                                       max_positions=512)))
    monkeypatch.setenv("FASTBIONER_BASE_MODELS", str(tmp_path / "base-models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    window = MainWindow()
    window.show()
    try:
        qtbot.waitUntil(lambda: window.models_listed.ended, timeout=60000)
        teachers = window.training.teachers()
        assert teachers == ["default"]  # the model tagged with, though no teacher is registered
        dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, teachers, window,
                                manifests=window.picker.manifests)
        started = []
        dialog.jobStarted.connect(started.append)
        dialog.jobStarted.connect(window.training.follow)
        rows = dialog.rows
        assert rows.teacher.currentText() == "default" and rows.teacher.isEnabled()
        assert not rows.fine_tune_first.isChecked()
        assert rows.student_source.currentText() == "teacher" and rows.layer_count() == 1  # fewer of its layers
        assert dialog.form.train_files == [] and not dialog.form.use_curated  # nothing chosen, nothing reviewed
        assert dialog.form.training_files(lambda: None) == sample_files()
        assert dialog.fallback_note.isVisibleTo(dialog) and "bundled sample" in dialog.fallback_note.text()
        hint = rows.encoder_hint.text()
        assert "No base encoder found" in hint and str(tmp_path / "base-models") in hint and "dmis-lab/" in hint
        dialog.estimate_first.setChecked(False)
        dialog.epochs.setValue(1)
        dialog.device.setCurrentText("cpu")
        dialog.name.setText("first-student")
        dialog.start_button.click()
        assert started, dialog.error.text()
        job = started[0]
        with qtbot.waitSignal(job.finished, timeout=240000):
            pass
        assert job.state is JobState.DONE, job.error
        assert Registry().get("first-student").manifest.parent == "default"
        window.training.new_model_offer.keep_button.click()
        window.workspace.add_documents(make_documents(), origin="test")
        tagging = window.tagging.tag("first-student", [0])
        with qtbot.waitSignal(tagging.finished, timeout=120000):
            pass
        assert tagging.state is JobState.DONE, tagging.error
        assert window.workspace.entry(0).tagged_by == "first-student"
    finally:
        window.jobs.cancel_all()
        window.projects.mark_clean()
        window.close()
        window.deleteLater()


def test_a_model_tagged_with_is_offered_as_teacher_but_a_convolutional_one_is_not():
    from fastbioner_gui.forms.distill import teacher_candidates

    manifests = {"cnn": {"kind": "student", "model_type": "fastbioner-cnn", "layers": 4},
                 "default": {"kind": "student", "model_type": "bert", "layers": 6},
                 "one-layer": {"kind": "student", "model_type": "bert", "layers": 1},
                 "mine": {"kind": "teacher", "model_type": "bert", "layers": 12}}
    assert teacher_candidates(manifests) == ["mine", "default"]
