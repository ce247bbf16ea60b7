"""The distillation and teacher forms for curators (issue 47): Start pressed twice with
the reviewed documents starts the run measured for them; the last settings are
remembered; readable default names; the reviewed documents are used by default when
there are some; opening Advanced keeps Start and Cancel on the screen and folding it
shrinks the dialog back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fastbioner.base.jobs import JobState

from tiny_models import make_tiny_model


@pytest.fixture
def tiny_teacher(tmp_path):
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "teacher-src"), "tiny-teacher", kind="teacher")
    return "tiny-teacher"


def _reviewed(window, qtbot, n=1):
    from gui_documents import make_documents

    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    for row in range(n):
        window.documents.set_current_row(row)
        window.commands["curate.mark_reviewed"].trigger()


def _distill(window):
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog

    return TrainingDialog("distill", window.workspace, window.jobs, window.settings, ["tiny-teacher"], window)


def test_start_pressed_twice_with_the_reviewed_documents_starts_the_measured_run(window, tiny_teacher, qtbot):
    """The defect: each press wrote a new time-stamped copy of the reviewed documents,
    so the settings never matched the measured ones and Start only ever measured."""
    _reviewed(window, qtbot, n=3)
    dialog = _distill(window)
    dialog.jobStarted.connect(window.training.follow)
    assert dialog.use_curated.isChecked() and "3 reviewed documents" in dialog.use_curated.text()
    assert dialog.estimate_first.isChecked()  # the default: measure first
    dialog.rows.layers.setCurrentText("custom")
    dialog.rows.custom_layers.setValue(1)
    dialog.epochs.setValue(1)
    dialog.batch_size.setValue(1)
    dialog.device.setCurrentText("cpu")
    dialog.name.setText("tiny-student")
    assert dialog.start() is None  # first press: measures
    with qtbot.waitSignal(dialog.estimate_job.finished, timeout=120000):
        pass
    assert dialog.start_button.text() == "Start now"
    job = dialog.start()  # second press, same settings: starts
    assert job is not None and job.kind == "train"
    with qtbot.waitSignal(job.finished, timeout=180000):
        pass
    assert job.state is JobState.DONE, job.error
    files = list((Path(dialog.curated_training_file()).parent).glob("reviewed-*.conll"))
    assert len(files) == 1  # one copy, named by its content


def test_the_same_reviewed_documents_give_the_same_file_and_an_edit_a_new_one(window, qtbot):
    from fastbioner_gui.reviewed_data import reviewed_training_file

    _reviewed(window, qtbot)
    first = reviewed_training_file(window.workspace)
    assert reviewed_training_file(window.workspace) == first
    window.documents.set_current_row(0)
    window.curation.accept(None)
    assert reviewed_training_file(window.workspace) != first


def test_no_reviewed_documents_leave_the_box_unticked_and_say_how(window):
    dialog = _distill(window)
    assert not dialog.use_curated.isChecked() and "Ctrl+M" in dialog.use_curated.text()
    dialog.reject()


def test_default_names_are_readable_and_numbered_when_taken(window, tiny_teacher, tmp_path):
    from datetime import date

    from fastbioner.models.registry import Registry

    dialog = _distill(window)
    folder = tmp_path / "bc5cdr" / "iob"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("a\tO\n", encoding="utf-8")
    dialog.train_files.add_paths([str(folder / "train.tsv")])
    today = f"{date.today():%Y-%m-%d}"
    assert dialog.form.default_name() == f"bc5cdr-student-{today}"
    Registry().import_folder(make_tiny_model(tmp_path / "m"), f"bc5cdr-student-{today}", kind="student")
    assert dialog.form.default_name() == f"bc5cdr-student-{today}-2"
    assert re.fullmatch(r"bc5cdr-teacher-\d{4}-\d\d-\d\d", dialog.form.new_teacher_name())
    dialog.reject()


def test_the_dialog_remembers_the_settings_a_run_started_with(window, tiny_teacher, tmp_path):
    data = tmp_path / "train.conll"
    data.write_text("a\tO\n", encoding="utf-8")
    dialog = _distill(window)
    dialog.rows.recipe.setCurrentIndex(dialog.rows.recipe.findData("Fast"))
    dialog.train_files.add_paths([str(data)])
    dialog.dev_file.setText(str(data))
    dialog.device.setCurrentText("cpu")
    dialog.estimate_first.setChecked(False)
    dialog.rows.keep_full_precision.setChecked(True)
    dialog.accept()  # as Start does once the run is on its way
    again = _distill(window)
    assert again.rows.recipe.currentData() == "Fast" and again.rows.layer_count() == 3
    assert again.train_files.paths() == [str(data)] and again.dev_file.text() == str(data)
    assert again.device.currentText() == "cpu" and not again.estimate_first.isChecked()
    assert again.rows.keep_full_precision.isChecked()
    # settings changed by hand (Custom) come back as set
    again.rows.layers.setCurrentText("custom")
    again.rows.custom_layers.setValue(1)
    again.epochs.setValue(7)
    again.batch_size.setValue(8)  # a recipe names its batch size too
    assert again.rows.recipe.currentData() == "Custom"
    again.accept()
    third = _distill(window)
    assert third.rows.recipe.currentData() == "Custom" and third.rows.layer_count() == 1
    assert (third.epochs.value(), third.batch_size.value()) == (7, 8)
    third.reject()


def test_cancel_puts_back_the_settings_the_dialog_opened_with(window, tiny_teacher):
    """The defect: Cancel kept what the mouse wheel had changed, for this opening and
    the next."""
    dialog = _distill(window)
    opened = (dialog.rows.recipe.currentData(), dialog.learning_rate.value(), dialog.batch_size.value(),
              dialog.rows.layer_count(), dialog.device.currentText())
    dialog.learning_rate.setValue(1e-4)
    dialog.batch_size.setValue(1)
    dialog.rows.recipe.setCurrentIndex(dialog.rows.recipe.findData("Accurate"))
    dialog.device.setCurrentText("cpu")
    dialog.reject()
    shown = (dialog.rows.recipe.currentData(), dialog.learning_rate.value(), dialog.batch_size.value(),
             dialog.rows.layer_count(), dialog.device.currentText())
    assert shown == opened
    again = _distill(window)
    assert (again.rows.recipe.currentData(), again.learning_rate.value(), again.batch_size.value(),
            again.rows.layer_count(), again.device.currentText()) == opened
    again.reject()


def test_the_wheel_changes_no_setting_the_pointer_passes_over(window, tiny_teacher, qtbot):
    """Scrolling the form over a spin box or a list left the value as it was; once the
    box is clicked into (focused) the wheel is the user's and changes it."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    dialog = _distill(window)
    qtbot.addWidget(dialog)
    dialog.rows.advanced.setChecked(True)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.start_button.setFocus()

    def wheel(widget, steps=-3):  # scrolling down, over the widget's middle
        centre = QPointF(widget.rect().center())
        event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                            QPoint(0, 120 * steps), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                            Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(widget, event)

    boxes = {"learning rate": dialog.learning_rate, "batch size": dialog.batch_size, "epochs": dialog.epochs,
             "recipe": dialog.rows.recipe, "method": dialog.rows.method, "temperature": dialog.rows.temperature,
             "device": dialog.device, "student": dialog.rows.student_source,
             "attention weight": dialog.rows.advanced.weights["attention"]}
    before = {name: (box.currentText() if hasattr(box, "currentText") else box.value()) for name, box in boxes.items()}
    config = dialog.build_config(train=["unused.conll"]).to_dict()
    for box in boxes.values():
        wheel(box)
        wheel(box.lineEdit() if hasattr(box, "lineEdit") and box.lineEdit() else box)
    after = {name: (box.currentText() if hasattr(box, "currentText") else box.value()) for name, box in boxes.items()}
    assert after == before
    assert dialog.build_config(train=["unused.conll"]).to_dict() == config
    assert dialog.rows.recipe.currentData() == "Balanced"
    assert not any(box.hasFocus() for box in boxes.values())  # the wheel gave none of them the focus
    dialog.batch_size.setFocus()  # clicked into: now the wheel is meant
    qtbot.waitUntil(dialog.batch_size.hasFocus, timeout=5000)
    wheel(dialog.batch_size, steps=1)
    assert dialog.batch_size.value() == before["batch size"] + 1 and dialog.rows.recipe.currentData() == "Custom"
    dialog.reject()


def test_keep_full_precision_starts_unticked(window, tiny_teacher):
    """The training guide says a student is compacted: the box starts unticked, and the
    run it starts compacts."""
    dialog = _distill(window)
    assert not dialog.rows.keep_full_precision.isChecked()
    assert dialog.form.run_key(dialog.build_config(train=["unused.conll"]), None)["compact"] is True
    dialog.reject()


@pytest.mark.parametrize("size", [(1600, 1000), (1024, 700)])
def test_advanced_keeps_start_and_cancel_on_the_screen_and_folding_shrinks_back(window, tiny_teacher, qtbot, size):
    from PySide6.QtCore import QRect

    screen = window.screen()
    dialog = _distill(window)
    qtbot.addWidget(dialog)
    # As on a screen of this size: the dialog never grows past it.
    screen_rect = QRect(0, 0, *size)
    dialog.screen = lambda: type("S", (), {"availableGeometry": lambda self: screen_rect})()
    dialog.fit_to_screen()
    dialog.show()
    qtbot.waitExposed(dialog)
    folded = dialog.height()
    dialog.rows.advanced.setChecked(True)
    dialog.fit_to_screen()  # what the toggle schedules, done now (no waiting on a timer)
    assert dialog.rows.advanced.body.isVisible()
    assert dialog.height() >= folded and dialog.height() <= size[1]
    for button in (dialog.start_button, dialog.buttons.button(dialog.buttons.StandardButton.Cancel)):
        assert button.isVisible()
        bottom = button.mapTo(dialog, button.rect().bottomLeft()).y()
        assert bottom <= dialog.height()  # inside the dialog, not scrolled away
    if size[1] < 900:
        assert dialog.scroll.verticalScrollBar().maximum() > 0  # the form scrolls instead
    grown = dialog.height()
    dialog.rows.advanced.setChecked(False)
    dialog.fit_to_screen()
    assert dialog.height() == pytest.approx(folded, abs=4) and dialog.height() <= grown
    if size[1] >= 900:
        assert grown > folded  # there was room: it grew, then shrank back
    assert screen is not None
    dialog.reject()


def test_a_recipes_measured_time_is_remembered_for_its_teacher(window, tiny_teacher):
    from types import SimpleNamespace

    dialog = _distill(window)
    assert dialog.rows.fine_tune_first.isChecked() is False
    dialog.rows.recipe.setCurrentIndex(dialog.rows.recipe.findData("Fast"))
    assert "not measured yet" in dialog.rows.recipe_note.text()
    dialog.rows.measured(SimpleNamespace(total_seconds=600.0))  # what a measurement of this recipe gives
    assert dialog.rows.recipe_note.text().startswith("About 10 min on this machine")
    dialog.reject()
    again = _distill(window)
    again.rows.recipe.setCurrentIndex(again.rows.recipe.findData("Fast"))
    assert again.rows.recipe_note.text().startswith("About 10 min on this machine (measured 20")
    again.rows.recipe.setCurrentIndex(again.rows.recipe.findData("Accurate"))  # another recipe: not measured
    assert "not measured yet" in again.rows.recipe_note.text()
    again.reject()


def test_the_teacher_dialog_lists_transferred_encoders_and_shows_drets_knobs_under_advanced(window, tmp_path,
                                                                                              monkeypatch):
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from tiny_models import make_tiny_encoder

    bases = tmp_path / "bases"
    make_tiny_encoder(bases / "minilm-dret")
    monkeypatch.setenv("FASTBIONER_BASE_MODELS", str(bases))
    dialog = TrainingDialog("teacher", window.workspace, window.jobs, window.settings, [], window)
    combo = dialog.rows.base
    assert [combo.itemText(i) for i in range(combo.count())][:1] == ["minilm-dret"]
    assert not dialog.rows.advanced.body.isVisible()
    dialog.rows.advanced.header.setChecked(True)
    assert dialog.form.advanced
    dialog.form.edit(freeze_embeddings=True, base="minilm-dret")
    config = dialog.build_config(["t.tsv"])
    assert config.training.freeze_embeddings and config.base_model == str(bases / "minilm-dret")
    dialog.reject()
