"""Tagging from the window with a tiny registry model: the picker lists it with its
card, Tag all runs in the background with a compact job strip (the Jobs dock stays
closed), merges each chunk's suggestions as it is tagged, keeps gold and curated
spans, marks documents tagged, is one undo step, and a cancelled run keeps what it
merged (and a run cancelled before any chunk changes nothing)."""

from __future__ import annotations

import pytest

from fastbioner.io.documents import Source
from fastbioner.base.jobs import JobState
from fastbioner.curate.project import DocStatus

from tiny_models import make_tiny_model


@pytest.fixture
def tiny_model(tmp_path):
    from fastbioner.models.registry import Registry

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
    assert loaded.commands["model.tag_all"].isEnabled()
    loaded.commands["model.tag_all"].trigger()
    job = loaded.tagging.job
    assert loaded.jobs_panel.row_for(job) is not None and not loaded.commands["model.tag_all"].isEnabled()
    strip = loaded.job_strip
    assert strip.row_for(job) is not None and not strip.isHidden()
    assert not loaded.docks["jobs"].isVisible()  # tagging does not open the big panel
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
    assert loaded.commands["model.tag_all"].isEnabled()
    assert strip.row_for(job) is None and strip.isHidden()  # the strip goes when nothing runs
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
    # Compaction as `fastbioner compact` records it: trimmed, or whole with an int8 table.
    trimmed = card_html("t", {"compression": {"vocabulary": {"dtype": "float16", "vocab_before": 30522,
                                                             "vocab_after": 9247}}})
    assert "float16, vocabulary 9,247 of 30,522 pieces" in trimmed
    whole = card_html("w", {"compression": {"vocabulary": {"dtype": "float16", "vocab_before": 30522,
                                                           "vocab_after": 30522, "vocabulary_kept": True,
                                                           "embedding_storage": "int8"}}})
    assert "float16, embedding table in int8, whole vocabulary (30,522 pieces)" in whole
    # What it reads when it tags: the curator's BIO file without documents reads differently.
    packed = card_html("p", {"config": {"encoding": {"context": "packed", "max_length": 128}}})
    assert "each document whole (title and abstract), in overlapping windows of 128 subwords" in packed
    assert "without -DOCSTART- lines sentence by sentence" in packed
    assert "each sentence on its own" in card_html("imported", {"kind": "teacher"})  # as the tagger reads it


def _write_abstracts(folder, n):
    folder.mkdir()
    for part in range(n // 100):  # PubTator files of 100 abstracts each
        blocks = []
        for i in range(100):
            pmid = 10_000 + part * 100 + i
            blocks.append(f"{pmid}|t|Lithium carbonate toxicity in case {pmid}\n"
                          f"{pmid}|a|Seizures and renal failure followed cocaine use; naloxone was given.\n")
        (folder / f"part{part}.pubtator").write_text("\n".join(blocks), encoding="utf-8")


def test_a_folder_of_1000_abstracts_is_tagged_chunk_by_chunk_as_one_undo_step(
        window, tiny_model, tmp_path, qtbot, monkeypatch):
    """A folder of 1,000 abstracts is opened and tagged; each chunk's suggestions are
    merged into the documents while the run goes on (not all at its end), at most
    ``APPLY_CHUNK`` documents per event-loop turn (merging all 1,000 in one go held
    the GUI thread 110 ms), with one view refresh per merged chunk rather than one per
    document, and the whole run is still one undo step. Counted in work slices, not
    timed: how long the GUI thread is busy is measured by
    ``benchmarks/bench_gui_responsiveness.py``."""
    from fastbioner_gui import tagging

    _write_abstracts(tmp_path / "abstracts", 1000)
    with qtbot.waitSignal(window.loader.loaded, timeout=60000):
        window.loader.open([tmp_path / "abstracts"])
    assert len(window.workspace) == 1000

    slices: list[int] = []          # documents merged per event-loop turn
    running_at_merge: list[bool] = []
    real_change = tagging.tagging_change

    def counting_change(*args, **kwargs):
        slices[-1] += 1
        return real_change(*args, **kwargs)

    real_merge = tagging.TaggingController._merge

    def counting_merge(self, run, found):
        slices.append(0)
        running_at_merge.append(self.job.running)
        return real_merge(self, run, found)

    monkeypatch.setattr(tagging, "tagging_change", counting_change)
    monkeypatch.setattr(tagging.TaggingController, "_merge", counting_merge)
    refreshes: list[tuple[int, int]] = []
    window.workspace.documentsChanged.connect(lambda first, last: refreshes.append((first, last)))

    _pick(window, qtbot, tiny_model)
    window.commands["model.tag_all"].trigger()
    job = window.tagging.job
    with qtbot.waitSignal(window.tagging.applied, timeout=300000):
        pass
    assert job.state is JobState.DONE, job.error
    assert all(window.workspace.entry(i).tagged_by == tiny_model for i in range(1000))
    assert max(slices) <= tagging.APPLY_CHUNK and len(slices) == -(-1000 // tagging.CHUNK)
    assert all(running_at_merge)  # every chunk merged while the run was still going
    assert 0 < len(refreshes) <= len(slices), len(refreshes)  # one refresh per chunk, not 1,000
    assert window.stack.count() == 1 and "1000 documents" in window.stack.text(0)
    window.stack.undo()  # still one undo step
    assert all(window.workspace.entry(i).tagged_by is None for i in range(1000))


def test_a_run_cancelled_midway_keeps_what_it_merged_as_one_undo_step(window, tiny_model, tmp_path, qtbot,
                                                                       monkeypatch):
    from fastbioner.infer.inference import Tagger
    from fastbioner_gui import tagging

    _write_abstracts(tmp_path / "abstracts", 200)
    with qtbot.waitSignal(window.loader.loaded, timeout=60000):
        window.loader.open([tmp_path / "abstracts"])
    real_tag = Tagger.tag_with_uncertainty  # what the app calls (spans and each document's uncertainty)

    def tag_then_cancel(self, docs, cancel=None, **kwargs):  # the curator presses Cancel after one chunk
        found = real_tag(self, docs, cancel, **kwargs)
        cancel.cancel()
        return found

    monkeypatch.setattr(Tagger, "tag_with_uncertainty", tag_then_cancel)
    _pick(window, qtbot, tiny_model)
    window.commands["model.tag_all"].trigger()
    job = window.tagging.job
    with qtbot.waitSignal(window.tagging.applied, timeout=300000):
        pass
    ws = window.workspace
    assert job.state is JobState.CANCELLED
    tagged = [i for i in range(200) if ws.entry(i).tagged_by == tiny_model]
    assert tagged == list(range(tagging.CHUNK))  # the first chunk merged and kept
    assert all(ws.entry(i).status is DocStatus.TAGGED for i in tagged)
    assert "kept what was tagged" in window.statusBar().currentMessage()
    assert window.stack.count() == 1
    window.stack.undo()
    assert all(ws.entry(i).tagged_by is None for i in range(200))


def test_a_final_models_card_says_what_it_is_what_it_learnt_from_and_whose_scores_it_shows():
    # A shipped model rebuilt on train + devel: devel taught it, so its card shows the
    # scores of its train-only twin, says so, and says in plain words what it is for.
    from fastbioner_gui.widgets.model_picker import card_html, picker_summaries

    final = {"kind": "student", "summary": "The accurate one: the default.",
             "training_data": [{"file": "train.tsv", "role": "train"}, {"file": "devel.tsv", "role": "train"},
                               {"file": "a.xml", "role": "unlabeled"}, {"file": "b.xml", "role": "unlabeled"},
                               {"file": "train.tsv", "role": "vocabulary"}],
             "metrics": {"f1": 0.8611, "source": {"model": "final", "twin": "pkd-s13", "file": "devel.tsv"}},
             "speed": {"tokens_per_s": 4000.0}}
    html = card_html("final", final)
    for text in ("The accurate one: the default.", "train.tsv + devel.tsv, and 2 files of unlabelled text",
                 "86.11", "pkd-s13, the same recipe trained without devel"):
        assert text in html, text
    own = {"kind": "student", "training_data": [{"file": "train.tsv", "role": "train"}],
           "metrics": {"f1": 0.80}, "speed": {"tokens_per_s": 9000.0}}
    assert "Scores from" not in card_html("own", own) and "<p>" not in card_html("own", own)
    summaries = picker_summaries({"final": final, "own": own})
    assert "devel F1 86.1 (its twin's)" in summaries["final"] and "(its twin's)" not in summaries["own"]
