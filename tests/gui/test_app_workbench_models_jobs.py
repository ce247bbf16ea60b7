"""The workbench's start-up, layout, model picker and jobs (issue 48, defects 4-8):
start-up says what it waits for and Tag is enabled once the default model is found,
before the registry scan ends; the model picker shows speed and F1 in plain words from
the models' cards; a job stopped part-way shows how far it got; a chained job's parts
follow each other on the step axis; a Tag all reports progress within a long
document."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from fastbioner.base.jobs import JobState, ProgressEvent

from tiny_models import make_tiny_model

REPO = Path(__file__).resolve().parents[2]


# 4. Start-up ---------------------------------------------------------------------

def test_tag_is_enabled_once_the_default_model_is_found_before_the_scan_ends(qtbot, tmp_path, monkeypatch):
    import fastbioner.models.shipped
    from fastbioner_gui.main_window import MainWindow

    from gui_documents import make_documents

    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(make_tiny_model(tmp_path / "default-model")))
    release = threading.Event()
    real = fastbioner.models.shipped.shipped_models

    def slow_scan(*args, **kwargs):  # a busy machine: the registration takes its time
        release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(fastbioner.models.shipped, "shipped_models", slow_scan)
    window = MainWindow()
    window.show()
    try:
        assert "looking for models in" in window.waiting_label.toolTip().lower()
        window.workspace.add_documents(make_documents(), origin="test")
        qtbot.waitUntil(lambda: window.picker.current_name() == "default", timeout=30000)
        assert not window.models_listed.ended  # the scan still runs
        assert window.commands["model.tag_all"].isEnabled() and window.commands["model.tag_document"].isEnabled()
        assert (window.waiting_label.isVisibleTo(window)
                and "looking for models" in window.waiting_label.toolTip().lower())
        # Tagging with it now registers it first (the scan has not yet).
        job = window.tagging.tag("default", [0, 1, 2])
        with qtbot.waitSignal(job.finished, timeout=120000):
            pass
        assert job.state is JobState.DONE, job.error
        assert window.workspace.entry(0).tagged_by == "default"
        release.set()
        qtbot.waitUntil(lambda: window.models_listed.ended, timeout=60000)
        assert window.picker.current_name() == "default"
        assert not window.waiting_label.isVisibleTo(window)
    finally:
        release.set()
        window.jobs.cancel_all()
        window.projects.mark_clean()
        window.close()


def test_loading_a_model_is_named_in_the_status_bar_until_results_come(loaded, tmp_path, qtbot):
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "tiny"), "tiny-student", kind="student")
    shown: list[str] = []
    loaded.tagging.waiting.connect(lambda _text: shown.append(loaded.waiting_label.toolTip()))
    job = loaded.tagging.tag("tiny-student", [0, 1, 2])
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert "Loading the model tiny-student…" in shown
    assert not loaded.waiting_label.text()


# 6. Jobs -------------------------------------------------------------------------

def _ended_job(events, state):
    from fastbioner_gui.jobs import Job

    job = Job("Distil tiny", "train")
    job.events = list(events)
    job.state = state
    return job


def test_a_job_cancelled_part_way_shows_the_steps_it_reached(qtbot):
    from fastbioner_gui.widgets.jobs_panel import JobRow

    step = ProgressEvent("student: distill", step=48, total=300, seq=50)
    final = ProgressEvent("student: distill", step=48, total=300, seq=51, state=JobState.CANCELLED)
    row = JobRow(_ended_job([step], JobState.RUNNING))
    qtbot.addWidget(row)
    row.update_view()
    assert row.bar.text() == "16%"
    row.job = _ended_job([step, final], JobState.CANCELLED)
    row.update_view()
    assert row.bar.text() == "16%"  # 48 of 300, whatever range the bar had
    assert row.status.text().startswith("cancelled at student: distill 48/300")
    row.job = _ended_job([step, final], JobState.DONE)
    row.update_view()
    assert row.bar.text() == "100%"


def test_a_chained_job_draws_each_part_after_the_one_before(qtbot):
    from fastbioner_gui.widgets.curves import Curves

    events, seq = [], 0
    for stage, total, losses in (("teacher: train", 10, ("loss",)), ("student: distill", 6, ("loss", "soft"))):
        events.append(ProgressEvent(stage, step=0, total=total, seq=(seq := seq + 1)))
        for step in range(1, total + 1):
            events.append(ProgressEvent(stage, step=step, total=total, seq=(seq := seq + 1),
                                        losses={k: 1.0 / step for k in losses},
                                        metrics={"f1": 0.1 * step} if step == total else {}))
    curves = Curves()
    qtbot.addWidget(curves)
    curves.follow(events)
    assert [name for name, _ in curves.parts] == ["teacher", "student"]
    xs, ys = curves.series["loss"]
    points = [x for x, y in zip(xs, ys) if y == y]  # NaN marks the gap between the parts
    assert points == sorted(points) and len(set(points)) == len(points)  # never back
    teacher_end = curves.parts[1][1]
    assert teacher_end == 10 and all(x > teacher_end for x in curves.series["soft"][0])
    assert len([y for y in ys if y != y]) == 1  # one gap: the parts are not joined
    f1_xs = [x for x, y in zip(*curves.series["f1"]) if y == y]
    assert f1_xs == [10, 16]  # each part's devel F1 at its own end
    # The switches are the legend: nothing is drawn over the curves.
    assert curves.losses.legend is None and curves.scores.legend is None
    assert set(curves.toggles) == {"loss", "soft", "f1"}


def test_a_single_part_job_keeps_its_own_steps(qtbot):
    from fastbioner_gui.widgets.curves import Curves

    events = [ProgressEvent("student: distill", step=s, total=5, seq=s, losses={"soft": 1.0 / s})
              for s in range(1, 6)]
    curves = Curves()
    qtbot.addWidget(curves)
    curves.follow(events)
    assert curves.series["soft"][0] == [1, 2, 3, 4, 5]


# 7. The model picker -------------------------------------------------------------

def _card(folder: Path) -> dict:
    return json.loads((folder / "fastbioner.json").read_text(encoding="utf-8"))


def test_the_picker_shows_speed_and_f1_in_plain_words_from_the_shipped_cards(qtbot):
    from fastbioner_gui.widgets.model_picker import FoundModel, ModelPicker, picker_summaries

    folders = [REPO / "assets" / "default-model", *sorted((REPO / "assets" / "more-models").iterdir())]
    cards = {(c := _card(f))["name"]: c for f in folders if (f / "fastbioner.json").is_file()}
    if len(cards) < 2:
        pytest.skip("fewer than two shipped models to compare")
    summaries = picker_summaries(cards)
    f1 = {n: c["metrics"]["f1"] for n, c in cards.items()}
    tps = {n: c["speed"]["tokens_per_s"] for n, c in cards.items()}
    fastest, best = max(tps, key=tps.get), max(f1, key=f1.get)
    assert summaries[fastest].startswith("fast") and "accurate" in summaries[best]
    for name in cards:
        assert f"devel F1 {100 * f1[name]:.1f}" in summaries[name]
        assert f"speed {tps[name] / min(tps.values()):.1f}×" in summaries[name]
    picker = ModelPicker()
    qtbot.addWidget(picker)
    picker.set_entries([FoundModel(n, c) for n, c in cards.items()], best)
    assert picker.current_name() == best
    texts = [picker.itemText(i) for i in range(picker.count())]
    assert texts == [f"{n} — {summaries[n]}" for n in cards]


def test_a_model_without_figures_says_so_and_one_model_is_not_ranked():
    from fastbioner_gui.widgets.model_picker import picker_summaries

    card = {"metrics": {"overall": {"f1": 0.8}}, "speed": {"tokens_per_s": 5000.0}}
    assert picker_summaries({"only": card}) == {"only": "devel F1 80.0 · 5,000 tokens/s"}
    assert picker_summaries({"bare": {}})["bare"] == "not scored or timed yet"


# 5. Layout -----------------------------------------------------------------------

def test_panels_give_way_in_proportion_and_never_below_their_minimum():
    from fastbioner_gui.layout_fit import give_way

    assert give_way(100, [400, 300], [200, 200]) == [333, 267]  # room 200 and 100: cut 67 and 33
    assert give_way(1000, [400, 300], [200, 250]) == [200, 250]  # no further than the minimums
    assert give_way(0, [400, 300], [200, 200]) == [400, 300]
    assert sum(give_way(7, [301, 301, 301], [0, 0, 0])) == 903 - 7


@pytest.mark.parametrize("docks", [(), ("jobs",), ("card",), ("card", "jobs")])
def test_at_1024x700_the_reading_view_keeps_half_the_width(loaded, qtbot, docks):
    window = loaded
    window.resize(1600, 1000)
    for name in docks:
        {"jobs": window.docks["jobs"], "card": window.docks["model-card"]}[name].show()
    window.resize(1024, 700)
    reading = window.splitter.widget(0)
    qtbot.waitUntil(lambda: window.width() == 1024 and reading.width() >= window.width() // 2, timeout=10000)
    # The side panels gave way, and stay usable.
    assert window.entities.width() >= 200 and window.docks["documents"].width() >= 180
    assert reading.height() >= 300
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: window.width() == 1600, timeout=10000)
    qtbot.waitUntil(lambda: reading.width() >= 800, timeout=10000)


# 8. Interrupted runs -------------------------------------------------------------

SENTENCES = [
    [("cocaine", "B-Chemical"), ("induced", "O"), ("seizures", "B-Disease"), ("in", "O"), ("rats", "O")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("toxicity", "B-Disease")],
    [("the", "O"), ("dose", "O"), ("was", "O"), ("increased", "O")],
]


def _fake_leftover(name: str, step: int, total: int, size: int) -> Path:
    from fastbioner.train.leftovers import checkpoints_root
    from fastbioner.models.registry import Registry

    folder = checkpoints_root(Registry()) / name
    (folder / "latest").mkdir(parents=True)
    (folder / "latest" / "state.json").write_text(json.dumps({"state": {"step": step, "total_steps": total}}))
    (folder / "latest" / "weights-student.safetensors").write_bytes(b"\0" * size)
    return folder


def _open_leftovers(window, qtbot):
    from fastbioner_gui.dialogs.leftovers_dialog import LeftoversDialog

    dialog = LeftoversDialog(window.jobs, window)
    dialog.jobStarted.connect(window.training.follow)
    qtbot.waitUntil(lambda: dialog.listing.ended, timeout=30000)
    return dialog


def test_interrupted_runs_are_listed_with_their_size_and_deleted(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    folder = _fake_leftover("my-student", 48, 300, 2_000_000)
    assert window.commands["model.interrupted_runs"] in window.menuBar().actions()[3].menu().actions()  # Model menu
    dialog = _open_leftovers(window, qtbot)
    cells = [dialog.table.item(0, c).text() for c in range(dialog.table.columnCount())]
    assert cells[0] == "my-student" and cells[2] == "step 48 of 300 (16%)" and cells[3].startswith("2.0 MB")
    assert dialog.delete_button.isEnabled()
    assert not dialog.resume_button.isEnabled()  # it recorded no settings to resume with
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    assert dialog.delete() is None and folder.is_dir()  # asked, and kept
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    job = dialog.delete()
    qtbot.waitUntil(lambda: job.ended and dialog.listing.ended and dialog.table.rowCount() == 0, timeout=30000)
    assert not folder.exists()
    assert dialog.status.text().startswith("Deleted the checkpoint of my-student: 2.0 MB freed")
    dialog.reject()


def test_a_cancelled_distillation_is_resumed_from_the_app(window, qtbot, tmp_path):
    from fastbioner.train.distill.config import DistillConfig, StudentConfig
    from fastbioner.train.distill.runner import distill
    from fastbioner.base.jobs import CancelToken, Cancelled
    from fastbioner.train.leftovers import list_leftovers
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "teacher-src"), "tiny-teacher", kind="teacher")
    bio = tmp_path / "train.conll"
    bio.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in SENTENCES * 4) + "\n",
                   encoding="utf-8")
    config = DistillConfig(teacher="tiny-teacher", train_files=[str(bio)], dev_file=str(bio),
                           student=StudentConfig(layers=1))
    config.training.epochs = 2
    config.training.batch_size = 4
    config.training.device = "cpu"
    cancel = CancelToken()

    def stop_after_two(event):
        if event.stage == "distill" and event.step >= 2:
            cancel.cancel()
    with pytest.raises(Cancelled):
        distill(config, "tiny-student", on_event=stop_after_two, cancel=cancel)
    [left] = list_leftovers()
    assert left.name == "tiny-student" and left.kind == "distill" and left.step >= 2 and left.size_bytes > 0
    dialog = _open_leftovers(window, qtbot)
    assert dialog.table.rowCount() == 1 and dialog.resume_button.isEnabled()
    job = dialog.resume()
    with qtbot.waitSignal(job.finished, timeout=180000):
        pass
    assert job.state is JobState.DONE, job.error
    assert any("resuming at step" in e.message for e in job.events)
    assert Registry().exists("tiny-student") and list_leftovers() == []


def test_tag_all_reports_progress_within_one_long_document(loaded, tmp_path, qtbot):
    from fastbioner.io.documents import Document
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "tiny"), "tiny-student", kind="student")
    sentence = "Lithium carbonate toxicity was seen in a newborn infant with heart failure."
    long = Document.from_parts("999", "A long report.", [(None, " ".join([sentence] * 40))])
    loaded.workspace.add_documents([long], origin="test")
    loaded.settings.batch_size = 2  # batches of two windows: many batches in one document
    job = loaded.tagging.tag("tiny-student", [3])
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    assert job.state is JobState.DONE, job.error
    steps = [e.step for e in job.events if e.stage == "tag" and not e.finished]
    total = next(e.total for e in job.events if e.stage == "tag")
    assert total >= 40 and steps[-1] == total and steps == sorted(steps)
    within = {s for s in steps if 0 < s < total}
    assert len(within) >= 5  # the bar moves while the one document is tagged
