"""The curator loop in the app (issue 47), on tiny models: tagging records how unsure
the model was of each document and the documents panel sorts by it; U and L go to
the next undecided and next low-confidence suggestion across documents; the review
queue shows suggestions one at a time, least sure first, for accept, reject and
relabel with undo; Model > Improve the model from my reviews runs in the background,
registers a new model, offers it with its before/after scores and never switches."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.jobs import JobState
from fastbioner.curate.project import DocStatus
from fastbioner.infer.uncertainty import METADATA_KEY

from tiny_models import make_tiny_model


@pytest.fixture
def tiny_model(tmp_path):
    from fastbioner.models.registry import Registry

    Registry().import_folder(make_tiny_model(tmp_path / "tiny-src"), "tiny-student", kind="student")
    return "tiny-student"


def _pick(window, qtbot, name):
    window.refresh_models()
    qtbot.waitUntil(lambda: window.picker.findData(name) >= 0, timeout=30000)
    window.picker.setCurrentIndex(window.picker.findData(name))
    qtbot.waitUntil(lambda: window.picker.current_name() == name, timeout=30000)


def _doc(doc_id, text, suggestions, unsure=None):
    """A document with model suggestions ((word, label, score)) and, when given, the
    uncertainty figure tagging would have recorded."""
    doc = Document.from_parts(doc_id, text, [])
    doc.spans = [Span(text.index(w), text.index(w) + len(w), label, Source.MODEL, score)
                 for w, label, score in suggestions]
    if unsure is not None:
        doc.metadata[METADATA_KEY] = {"figure": "expected_errors", "value": unsure, "expected_errors": unsure,
                                      "tokens": len(text.split()), "per_token": 0.1, "lowest_span": 0.5}
    return doc


@pytest.fixture
def suggested(window, qtbot):
    docs = [_doc("1", "Aspirin eased the headache.", [("Aspirin", "Chemical", 0.95), ("headache", "Disease", 0.9)],
                 0.4),
            _doc("2", "Lithium caused tremor and nausea.",
                 [("Lithium", "Chemical", 0.8), ("tremor", "Disease", 0.3), ("nausea", "Disease", 0.6)], 3.2),
            _doc("3", "No entity in this one.", [], 0.1),
            _doc("4", "Cocaine and seizures.", [("Cocaine", "Chemical", 0.45)], 1.5)]
    window.workspace.add_documents(docs)
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    return window


def _shown_ids(window):
    proxy = window.documents.proxy
    return [proxy.index(r, 0).data() for r in range(proxy.rowCount())]


def test_tagging_records_the_uncertainty_and_the_panel_sorts_by_it(loaded, tiny_model, qtbot):
    _pick(loaded, qtbot, tiny_model)
    loaded.commands["model.tag_all"].trigger()
    with qtbot.waitSignal(loaded.tagging.job.finished, timeout=60000):
        pass
    ws, model = loaded.workspace, loaded.documents.model
    column = model.uncertainty_column()
    assert model.headerData(column, Qt.Orientation.Horizontal) == "Unsure"
    values = []
    for row in range(len(ws)):
        figure = ws.document(row).metadata[METADATA_KEY]
        assert figure["tokens"] > 0 and figure["value"] >= 0
        assert model.index(row, column).data() == f"{figure['value']:.1f}"
        values.append(figure["value"])
    loaded.features["suggestion_nav"].sort_action.trigger()
    row_of = {ws.document(r).id: r for r in range(len(ws))}
    assert [values[row_of[i]] for i in _shown_ids(loaded)] == sorted(values, reverse=True)


def test_the_uncertainty_column_sorts_most_unsure_first_and_untagged_last(suggested):
    suggested.workspace.add_documents([Document.from_parts("5", "Not tagged.", [])])
    suggested.features["suggestion_nav"].sort_action.trigger()
    assert _shown_ids(suggested) == ["2", "4", "1", "3", "5"]
    column = suggested.documents.model.uncertainty_column()
    assert suggested.documents.model.index(4, column).data() == ""  # not tagged: empty, not 0


def test_u_goes_to_the_next_undecided_and_l_to_the_next_low_confidence_suggestion(suggested, qtbot):
    w = suggested
    w.settings.low_confidence = 0.5
    w.view.setFocus()
    ws = w.workspace

    def current():
        (span,) = w.keys.targets()
        return w.workspace.document(w.row).id, w.workspace.document(w.row).span_text(span)

    qtbot.keyClick(w.view, Qt.Key.Key_U)
    assert current() == ("1", "Aspirin")
    w.curation.accept([ws.document(0).spans[0]])  # decided: U skips it now
    w.keys.select(None)
    qtbot.keyClick(w.view, Qt.Key.Key_U)
    assert current() == ("1", "headache")
    qtbot.keyClick(w.view, Qt.Key.Key_U)
    assert current() == ("2", "Lithium")  # the next document in the panel's order
    # L: below the threshold only (tremor 0.3, Cocaine 0.45), across documents, round
    qtbot.keyClick(w.view, Qt.Key.Key_L)
    assert current() == ("2", "tremor")
    qtbot.keyClick(w.view, Qt.Key.Key_L)
    assert current() == ("4", "Cocaine")
    qtbot.keyClick(w.view, Qt.Key.Key_L)
    assert current() == ("2", "tremor")
    # in the panel's order: sorted by uncertainty, U from document 2 goes to 4
    w.features["suggestion_nav"].sort_action.trigger()
    w.documents.set_current_row(1)
    w.keys.select(ws.document(1).sorted_spans()[-1])
    w.view.setFocus()
    qtbot.keyClick(w.view, Qt.Key.Key_U)
    assert current() == ("4", "Cocaine")


def test_review_queue_accepts_rejects_relabels_and_undoes_least_sure_first(suggested, qtbot):
    w = suggested
    ws = w.workspace
    w.features["review_queue"].action.trigger()
    queue = w.features["review_queue"].queue
    assert w.features["review_queue"].dock.isVisible()
    qtbot.waitUntil(queue.hasFocus, timeout=5000)

    def shown():
        row, span = queue.current
        return ws.document(row).id, ws.document(row).span_text(span)

    # most unsure document first (2: 3.2), least confident suggestion in it first
    assert shown() == ("2", "tremor") and queue.remaining == 6
    assert w.row == 1 and [ws.document(1).span_text(s) for s in w.keys.targets()] == ["tremor"]
    assert "tremor" in queue.context.text() and "Disease" in queue.question.text()
    qtbot.keyClick(queue, Qt.Key.Key_A)
    tremor = next(s for s in ws.document(1).spans if ws.document(1).span_text(s) == "tremor")
    assert tremor.source is Source.CURATOR
    assert shown() == ("2", "nausea")
    qtbot.keyClick(queue, Qt.Key.Key_X)
    assert "nausea" not in [ws.document(1).span_text(s) for s in ws.document(1).spans]
    assert shown() == ("2", "Lithium")
    labels = ws.labels()
    qtbot.keyClick(queue, Qt.Key.Key_1 + labels.index("Disease"))  # relabel: accepted as Disease
    lithium = next(s for s in ws.document(1).spans if ws.document(1).span_text(s) == "Lithium")
    assert (lithium.label, lithium.source) == ("Disease", Source.CURATOR)
    assert shown() == ("4", "Cocaine")
    qtbot.keyClick(queue, Qt.Key.Key_Backspace)  # undo: Lithium undecided again, and shown
    assert shown() == ("2", "Lithium")
    assert next(s for s in ws.document(1).spans if ws.document(1).span_text(s) == "Lithium").source is Source.MODEL
    qtbot.keyClick(queue, Qt.Key.Key_Backspace)  # and the reject before it
    assert shown() == ("2", "nausea")
    left = queue.remaining
    qtbot.keyClick(queue, Qt.Key.Key_S)  # skip: the next one shown, nothing decided
    assert shown() == ("2", "Lithium")
    assert queue.remaining == left and f"{left} undecided suggestions left (1 skipped)" in queue.progress.text()
    # a reviewed document leaves the queue
    w.documents.set_current_row(1)
    w.commands["curate.mark_reviewed"].trigger()
    queue.refresh()
    assert shown() == ("4", "Cocaine")


def _reviewed_project(window, qtbot, n=12):
    """``n`` small reviewed documents (enough for a held-back slice of 5)."""
    docs = []
    for i in range(n):
        text = f"Patient {i} took aspirin and had a headache. Lithium caused tremor."
        doc = Document.from_parts(str(100 + i), text, [])
        doc.spans = [Span(text.index("aspirin"), text.index("aspirin") + 7, "Chemical", Source.CURATOR),
                     Span(text.index("headache"), text.index("headache") + 8, "Disease", Source.CURATOR),
                     Span(text.index("Lithium"), text.index("Lithium") + 7, "Chemical", Source.GOLD),
                     Span(text.index("tremor"), text.index("tremor") + 6, "Disease", Source.CURATOR)]
        docs.append(doc)
    window.workspace.add_documents(docs)
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    for row in range(n):
        window.workspace.entry(row).status = DocStatus.REVIEWED


def test_improve_the_model_from_my_reviews_offers_the_new_model_and_never_switches(window, tiny_model, qtbot):
    from fastbioner.models.registry import Registry

    _pick(window, qtbot, tiny_model)
    assert window.features["improve"].start() is None  # nothing reviewed yet: says so, starts nothing
    assert "Ctrl+M" in window.features["improve"].message.text()
    window.features["improve"].message.close()
    _reviewed_project(window, qtbot)
    job = window.features["improve"].start()
    assert job is not None and job.kind == "fine-tune" and window.jobs_panel.row_for(job) is not None
    with qtbot.waitSignal(job.finished, timeout=300000):
        pass
    assert job.state is JobState.DONE, job.error
    window.show_curves(job)  # the jobs panel keeps the run with its curves
    curves = window.jobs_panel.curves
    curves.refresh()
    assert "f1" in curves.series and len(curves.series["f1"][0]) >= 1  # held-back F1 as it trained
    outcome = job.result
    assert outcome.result.held_back == 5 and outcome.before_after() is not None  # before/after on the held back
    name = outcome.entry.name
    assert name.startswith("tiny-student-improved-") and Registry().exists(name)
    assert any(line.startswith("F1 on 5 of your documents (") and "95% interval" in line for line in outcome.notes)
    assert "review_split" in window.workspace.project.info  # the project keeps its held-back documents
    qtbot.waitUntil(lambda: window.training.new_model_offer is not None and window.training.new_model_offer.isVisible(),
                    timeout=30000)
    text = window.training.new_model_offer.text()
    assert name in text and "before" in text and "after" in text
    assert window.picker.current_name() == tiny_model  # offered, not switched to
    window.training.new_model_offer.keep_button.click()
    assert window.picker.current_name() == tiny_model


def test_a_cancelled_improvement_registers_nothing(window, tiny_model, qtbot):
    from fastbioner.models.registry import Registry

    _pick(window, qtbot, tiny_model)
    _reviewed_project(window, qtbot)
    job = window.features["improve"].start()
    job.cancel()
    with qtbot.waitSignal(job.finished, timeout=300000):
        pass
    assert job.state is JobState.CANCELLED
    assert [e.name for e in Registry().list()] == [tiny_model]


def test_the_new_keys_are_in_the_shortcuts_help_and_clash_with_none(window):
    from fastbioner_gui.dialogs.shortcuts import shortcut_rows, shortcuts_html

    assert "In the Review queue" in shortcuts_html(window.menuBar())  # its own keys, said under the table

    rows = {title: keys for _path, title, keys in shortcut_rows(window.menuBar())}
    assert rows["Next undecided suggestion"] == "U"
    assert rows["Next low-confidence suggestion"] == "L"
    assert rows["Sort documents by uncertainty"] == QKeySequence("Ctrl+Shift+U").toString(
        QKeySequence.SequenceFormat.NativeText)
    assert any(t.startswith("Review queue") for t in rows)
    assert window.commands["model.improve"].text() == "Improve the model from my reviews"
    ours = {"Next undecided suggestion", "Next low-confidence suggestion", "Sort documents by uncertainty"}
    ours |= {t for t in rows if t.startswith("Review queue")}
    taken = {}
    for title, keys in rows.items():
        for key in keys.split(", "):
            taken.setdefault(key, []).append(title)
    for title in ours:
        for key in rows[title].split(", "):
            assert taken[key] == [title], (key, taken[key])
    # nor with the review queue's own keys, which act only while it has the focus
    queue = window.features["review_queue"].queue
    queue_keys = {k.toString() for a in queue.actions() for k in a.shortcuts()}
    assert not queue_keys & {"U", "L"}
    assert QApplication.instance() is not None


def test_in_a_narrow_window_the_queue_takes_the_documents_panels_place(suggested, qtbot):
    w = suggested
    w.resize(1024, 700)
    w.features["review_queue"].action.trigger()
    assert w.features["review_queue"].dock in w.tabifiedDockWidgets(w.docks["documents"])
    assert w.features["review_queue"].queue.current is not None and w.features["review_queue"].queue.isVisible()


def test_the_uncertainty_is_saved_with_the_project(suggested, tmp_path, qtbot):
    path = suggested.projects.save(tmp_path / "loop.fbproj")
    suggested.projects.open(path)
    qtbot.waitUntil(lambda: len(suggested.workspace) == 4, timeout=30000)
    model = suggested.documents.model
    column = model.uncertainty_column()
    assert [model.index(r, column).data() for r in range(4)] == ["0.4", "3.2", "0.1", "1.5"]
