"""Improve never makes the model worse, and learn while reviewing (issue 65), in the
app on tiny models: a harmful update keeps the current model and says why; the
picker never calls a held-back score a devel score; learning while reviewing is off
by default, starts an update after 10 newly reviewed documents, and when the update
wins refreshes only the unreviewed documents' suggestions, as one undo step."""

from __future__ import annotations

import pytest

from fastbioner.base.jobs import JobState
from fastbioner.curate.project import DocStatus
from fastbioner.io.documents import Document, Source, Span

from tests.gui.test_app_review_loop import _pick, _reviewed_project
from tiny_models import make_tiny_model


@pytest.fixture
def tiny_model(tmp_path):
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "tiny-src"), "tiny-student", kind="student")
    return "tiny-student"


def test_a_harmful_update_keeps_the_current_model_and_says_why(window, tiny_model, qtbot, monkeypatch):
    import fastbioner.train.finetune as finetune
    from fastbioner.models.registry import Registry

    real = finetune.fine_tune

    def harmful(model, config, name, **kw):  # a rate that wrecks the model: worse beyond doubt
        config.training.learning_rate, config.training.epochs, config.training.warmup_ratio = 0.3, 4, 0.0
        config.lr_docs = 0
        return real(model, config, name, **kw)

    monkeypatch.setattr(finetune, "fine_tune", harmful)
    _pick(window, qtbot, tiny_model)
    _reviewed_project(window, qtbot)
    for row in range(len(window.workspace)):  # a contradicting review: Chemical said Disease on half
        if row % 2:
            doc = window.workspace.document(row)
            doc.spans = [s.with_(label="Disease") if s.label == "Chemical" else s for s in doc.spans]
    job = window.features["improve"].start()
    with qtbot.waitSignal(job.finished, timeout=300000):
        pass
    assert job.state is JobState.DONE, job.error
    assert job.result.refused is not None and job.result.entry is None
    qtbot.waitUntil(lambda: window.features["improve"].message is not None, timeout=30000)
    said = window.features["improve"].message.text()
    assert said.startswith(f"Kept {tiny_model}: the improved model scored worse on 5 of your documents")
    assert [e.name for e in Registry().list()] == [tiny_model]
    assert window.picker.current_name() == tiny_model
    assert window.training.new_model_offer is None or not window.training.new_model_offer.isVisible()


def test_the_picker_never_calls_a_held_back_score_accurate_against_devel_scores():
    from fastbioner_gui.widgets.model_picker import card_html, picker_summaries

    shipped = {"name": "shipped", "metrics": {"f1": 0.865, "source": {"twin": "twin-s13"}}}
    improved = {"name": "improved", "method": "fine-tune", "metrics": {"f1": 0.896},
                "config": {"comparison": {"where": "5 of your documents (96 mentions)", "documents": 5,
                                          "mentions": 96, "before": 0.963, "after": 0.896, "low": -0.12,
                                          "high": -0.01}}}
    other = {"name": "other", "metrics": {"f1": 0.80}}
    summaries = picker_summaries({"shipped": shipped, "improved": improved, "other": other})
    assert summaries["improved"] == "F1 89.6 on 5 of your documents (96 mentions)"
    assert summaries["shipped"].startswith("accurate") and "devel F1 86.5 (its twin's)" in summaries["shipped"]
    assert "accurate" not in summaries["other"]
    card = card_html("improved", improved)
    assert "devel F1" not in card and "on 5 of your documents (96 mentions)" in card
    assert "96.3 → 89.6" in card


def _unreviewed(text, doc_id):
    doc = Document.from_parts(doc_id, text, [])
    doc.spans = [Span(0, 7, "Disease", Source.MODEL, 0.4)]
    return doc


def test_learn_while_reviewing_is_off_by_default_and_starts_after_ten_reviews(window, tiny_model, qtbot):
    learn = window.features["learn_while_reviewing"]
    assert not window.settings.learn_while_reviewing and not learn.action.isChecked()
    _pick(window, qtbot, tiny_model)
    _reviewed_project(window, qtbot, n=12)
    assert learn.check() is None  # off: nothing starts
    learn.action.trigger()  # on: reviews from now on count
    assert window.settings.learn_while_reviewing
    window.workspace.add_documents([_unreviewed(f"Aspirin case {i} with tremor.", f"u{i}") for i in range(10)])
    for row in range(12, 21):
        window.workspace.entry(row).status = DocStatus.REVIEWED
    assert learn.check() is None  # 9 new reviews: not yet
    window.workspace.entry(21).status = DocStatus.REVIEWED
    job = learn.check()
    assert job is not None and job.kind == "fine-tune"
    with qtbot.waitSignal(job.finished, timeout=300000):
        pass
    assert job.state is JobState.DONE, job.error
    assert learn.last_outcome is job.result
    learn.action.trigger()  # off again
    assert not window.settings.learn_while_reviewing


def test_a_winning_update_refreshes_only_unreviewed_suggestions_as_one_undo_step(window, tiny_model, qtbot,
                                                                                 monkeypatch):
    import fastbioner_gui.improve as improve_module   # the update both Improve and learning run
    from fastbioner.train.review_split import Comparison
    from fastbioner_gui.improve import ImproveOutcome

    class Result:
        comparison = Comparison("5 of your documents (20 mentions)", 5, 20, 0.5, 0.7, 0.05, 0.35)

    class Entry:
        name = tiny_model  # the "new" model: the tiny one again, so tagging has a model to load

    monkeypatch.setattr(improve_module, "improve", lambda *a, **k: ImproveOutcome(Entry(), None, None, [], Result(),
                                                                       split={"version": 1}))
    learn = window.features["learn_while_reviewing"]
    _pick(window, qtbot, tiny_model)
    _reviewed_project(window, qtbot, n=10)
    window.workspace.add_documents([_unreviewed(f"Lithium case {i} with tremor.", f"u{i}") for i in range(3)])
    qtbot.waitUntil(lambda: len(window.workspace) == 13, timeout=30000)
    reviewed_before = [list(window.workspace.document(r).spans) for r in range(10)]
    learn.action.trigger()
    learn.baseline = 0  # ten reviews already count
    steps = window.stack.count()
    job = learn.check()
    with qtbot.waitSignal(job.finished, timeout=300000):
        pass
    qtbot.waitUntil(lambda: not window.tagging.busy and window.stack.count() > steps, timeout=300000)
    qtbot.wait(200)
    assert window.stack.count() == steps + 1  # one undo step
    assert [list(window.workspace.document(r).spans) for r in range(10)] == reviewed_before
    assert window.workspace.project.info["review_split"] == {"version": 1}
    window.stack.undo()
    assert all(s.score == 0.4 for r in range(10, 13) for s in window.workspace.document(r).spans)
    learn.action.trigger()
