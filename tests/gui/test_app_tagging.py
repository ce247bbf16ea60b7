"""Tagging from the window with a tiny registry model: the picker lists it with its
card, Tag all runs in the background, keeps gold and curated spans, marks documents
tagged, is one undoable command, and a cancelled run changes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fastbioner.documents import Source
from fastbioner.jobs import JobState
from fastbioner.project import DocStatus

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_models import make_tiny_model  # noqa: E402


@pytest.fixture
def tiny_model(tmp_path):
    from fastbioner.registry import Registry

    folder = make_tiny_model(tmp_path / "tiny-src")
    Registry().import_folder(folder, "tiny-student", kind="student")
    return "tiny-student"


def _pick(window, qtbot, name):
    window.refresh_models()
    qtbot.waitUntil(lambda: window.picker.findData(name) >= 0, timeout=30000)
    window.picker.setCurrentIndex(window.picker.findData(name))


def test_tag_all_in_background_keeps_curated_and_undoes(loaded, tiny_model, qtbot):
    ws = loaded.workspace
    start = ws.document(0).text.index("serum")
    loaded.curation.add(start, start + 5, "Chemical")
    curated = ws.document(0).spans_by(Source.CURATOR)
    gold = [ws.document(i).spans_by(Source.GOLD) for i in range(3)]
    _pick(loaded, qtbot, tiny_model)
    assert "Layers" in loaded.card.toPlainText() and tiny_model in loaded.card.toPlainText()
    assert loaded.tag_all_action.isEnabled()
    loaded.tag_all_action.trigger()
    job = loaded.tagging.job
    assert loaded.jobs_panel.row_for(job) is not None and not loaded.tag_all_action.isEnabled()
    with qtbot.waitSignal(job.finished, timeout=60000):
        pass
    assert job.state is JobState.DONE, job.error
    assert [ws.entry(i).tagged_by for i in range(3)] == [tiny_model] * 3
    assert ws.entry(0).status is DocStatus.IN_REVIEW and ws.entry(2).status is DocStatus.TAGGED
    assert ws.document(0).spans_by(Source.CURATOR) == curated
    assert [ws.document(i).spans_by(Source.GOLD) for i in range(3)] == gold
    for i in range(3):
        doc = ws.document(i)
        for span in doc.spans_by(Source.MODEL):
            assert 0 <= span.start < span.end <= len(doc.text) and span.score is not None
    assert tiny_model in ws.project.models
    assert loaded.tag_all_action.isEnabled()
    loaded.stack.undo()
    assert [ws.entry(i).tagged_by for i in range(3)] == [None] * 3
    assert ws.entry(2).status is DocStatus.NEW


def test_a_cancelled_tagging_run_changes_nothing(loaded, tiny_model, qtbot):
    ws = loaded.workspace
    before = [list(ws.document(i).spans) for i in range(3)]
    _pick(loaded, qtbot, tiny_model)
    job = loaded.tagging.tag(tiny_model, [0, 1, 2])
    job.cancel()
    with qtbot.waitSignal(job.finished, timeout=60000):
        pass
    assert job.state is JobState.CANCELLED
    assert [list(ws.document(i).spans) for i in range(3)] == before
    assert loaded.stack.count() == 0
    row = loaded.jobs_panel.row_for(job)
    row.update_view()
    assert row.status.text().startswith("cancelled")


def test_model_card_shows_shape_size_scores_per_type_and_speed():
    from fastbioner_gui.widgets.model_picker import card_html

    manifest = {"kind": "student", "base_model": "/models/all-mpnet-base-v2", "layers": 3, "width": 768,
                "parameters": 45_100_000, "size_bytes": 180 * 1024 * 1024, "parent": "mpnet-teacher",
                "method": "fastbioner",
                "metrics": {"f1": 0.8512, "per_type": {"Chemical": {"f1": 0.9023}, "Disease": {"f1": 0.7801}}},
                "speed": {"tokens_per_s": 5230.4, "ms_per_abstract": 41.5, "precision": "bf16",
                          "hardware": "Intel Xeon"}}
    html = card_html("student-3", manifest)
    for text in ("all-mpnet-base-v2", "3 × 768", "45.1 M", "180.0 MB", "mpnet-teacher", "85.12", "90.23",
                 "78.01", "5,230 tokens/s", "41.5 ms/abstract", "bf16", "Intel Xeon"):
        assert text in html, text
    assert "not measured" in card_html("bare", {"kind": "teacher"})


def test_a_folder_of_1000_abstracts_loads_and_tags_in_slices_the_gui_thread_can_afford(
        window, tiny_model, tmp_path, qtbot, monkeypatch):
    """A folder of 1,000 abstracts is opened and tagged; the window merges the
    results into the documents at most ``APPLY_CHUNK`` documents per event-loop
    turn (merging all 1,000 in one go held the GUI thread 110 ms), refreshes the
    views once per merged range rather than once per document, and the whole run is
    still one undoable command. Counted in work slices, not timed: how long the GUI
    thread is busy is measured by ``benchmarks/bench_gui_responsiveness.py``."""
    from fastbioner_gui import tagging

    folder = tmp_path / "abstracts"
    folder.mkdir()
    for part in range(10):  # ten PubTator files of 100 abstracts each
        blocks = []
        for i in range(100):
            pmid = 10_000 + part * 100 + i
            blocks.append(f"{pmid}|t|Lithium carbonate toxicity in case {pmid}\n"
                          f"{pmid}|a|Seizures and renal failure followed cocaine use; naloxone was given.\n")
        (folder / f"part{part}.pubtator").write_text("\n".join(blocks), encoding="utf-8")
    with qtbot.waitSignal(window.loader.loaded, timeout=60000):
        window.loader.open([folder])
    assert len(window.workspace) == 1000

    slices: list[int] = []  # documents merged per event-loop turn
    real_change = tagging.tagging_change

    def counting_change(*args, **kwargs):
        slices[-1] += 1
        return real_change(*args, **kwargs)

    real_apply = tagging.TaggingController._apply

    def counting_apply(self, result, project, start=0, changes=None):
        slices.append(0)
        return real_apply(self, result, project, start, changes)

    monkeypatch.setattr(tagging, "tagging_change", counting_change)
    monkeypatch.setattr(tagging.TaggingController, "_apply", counting_apply)
    refreshes: list[tuple[int, int]] = []
    window.workspace.documentsChanged.connect(lambda first, last: refreshes.append((first, last)))

    _pick(window, qtbot, tiny_model)
    window.tag_all_action.trigger()
    job = window.tagging.job
    with qtbot.waitSignal(window.tagging.applied, timeout=300000):
        pass
    assert job.state is JobState.DONE, job.error
    assert all(window.workspace.entry(i).tagged_by == tiny_model for i in range(1000))
    merged = [n for n in slices if n]
    assert max(merged) <= tagging.APPLY_CHUNK and len(merged) >= 1000 // tagging.APPLY_CHUNK
    # one refresh per merged range (the final push, and the one command's redo), not 1,000
    assert 0 < len(refreshes) <= 2 * len(slices), len(refreshes)
    window.stack.undo()  # still one command
    assert all(window.workspace.entry(i).tagged_by is None for i in range(1000))
