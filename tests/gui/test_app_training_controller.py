"""The training flow belongs to a TrainingController beside the TaggingController: the
window's menus open its dialogs, and a run it follows ends with the models listed again
and the new model offered (never switched to); a cancelled or failed run is listed
again without an offer."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fastbioner.base.jobs import Cancelled, JobState
from tests.tiny_models import make_tiny_model


def test_the_model_menu_goes_through_the_training_controller(window, monkeypatch):
    from fastbioner_gui.training import TrainingController

    assert isinstance(window.training, TrainingController)
    opened = []
    monkeypatch.setattr(TrainingController, "open_dialog", lambda self, kind: opened.append(kind))
    monkeypatch.setattr(TrainingController, "open_leftovers", lambda self: opened.append("leftovers"))
    window.commands["model.distill"].trigger()
    window.commands["model.fine_tune"].trigger()
    window.commands["model.interrupted_runs"].trigger()
    assert opened == ["distill", "teacher", "leftovers"]


def test_a_finished_run_is_offered_and_the_picker_keeps_its_model(window, qtbot, tmp_path):
    from fastbioner.models.registry import Registry

    registry = Registry()
    registry.import_folder(make_tiny_model(tmp_path / "in-use"), "in-use", kind="teacher")
    entry = registry.import_folder(make_tiny_model(tmp_path / "new"), "new-student", kind="student")
    window.refresh_models(select="in-use")
    qtbot.waitUntil(lambda: window.picker.current_name() == "in-use", timeout=30000)
    messages = []
    window.training.message.connect(messages.append)
    result = SimpleNamespace(entry=entry, report=None, notes=["a note of the run"])
    job = window.jobs.start("Distil new-student", lambda on_event, cancel: result, kind="train",
                            model_name="new-student")
    window.training.follow(job)
    qtbot.waitUntil(lambda: window.training.new_model_offer is not None and window.training.new_model_offer.isVisible(),
                    timeout=30000)
    assert job.state is JobState.DONE
    offer = window.training.new_model_offer
    assert "new-student" in offer.text() and "a note of the run" in offer.text()
    assert messages == ["new-student is registered; the picker keeps in-use until you choose"]
    offer.keep_button.click()
    qtbot.waitUntil(lambda: window.picker.findData("new-student") >= 0, timeout=30000)
    assert window.picker.current_name() == "in-use"


def test_a_cancelled_run_lists_the_models_again_without_an_offer(window, qtbot, monkeypatch):
    listed = []
    monkeypatch.setattr(window.training, "refresh_models", lambda select: listed.append(select))

    def cancelled(on_event, cancel):
        raise Cancelled()

    job = window.jobs.start("Distil gone", cancelled, kind="train", model_name="gone")
    window.training.follow(job)
    qtbot.waitUntil(lambda: job.state is JobState.CANCELLED and listed == [None], timeout=30000)
    assert window.training.new_model_offer is None
    assert "Interrupted runs" in window.training.outcome(job)


def test_the_window_no_longer_runs_the_training_flow_itself():
    source = (Path(__file__).resolve().parents[2] / "fastbioner_gui" / "main_window.py").read_text(encoding="utf-8")
    for name in ("TrainingDialog", "LeftoversDialog", "NewModelOffer"):
        assert name not in source, name
