"""Compare and adjudicate in the window: File > Compare with another annotation… reads
another curator's version, the documents panel shows each document's agreement, the
queue's keys settle every difference, each decision is one undo step, and the settled
document is reviewed, its entities remembering which annotator they came from."""

from __future__ import annotations

from PySide6.QtCore import Qt

from fastbioner.io.documents import Source, Span
from fastbioner.curate.export import ExportSettings, export_documents
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.curate.project import DocStatus, load_project
from fastbioner_gui.dialogs.shortcuts import shortcut_rows
from gui_documents import make_documents


def theirs_file(tmp_path):
    """Bob's version: "Lithium" where mine has "Lithium carbonate", the same
    "toxicity", and "heart failure" (mine has it only as a pending suggestion)."""
    docs = make_documents()
    first = docs[0]
    hf = first.text.index("heart failure")
    first.spans = [Span(0, 7, "Chemical"), Span(18, 26, "Disease"), Span(hf, hf + 13, "Disease")]
    path = tmp_path / "bob.jsonl"
    write_documents(docs, path)
    return path


def compared(window, qtbot, tmp_path):
    job = window.features["adjudication"].compare_with(str(theirs_file(tmp_path)))
    qtbot.waitUntil(lambda: window.features["adjudication"].session.active, timeout=30000)
    assert job is not None
    return window.features["adjudication"]


def _mentions(doc):
    return sorted((s.start, s.end, s.label, s.source.value) for s in doc.spans)


def test_compare_shows_agreement_and_the_queue(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    model = loaded.documents.model
    col = model.agreement_column()
    assert col >= 0 and model.headerData(col, Qt.Orientation.Horizontal) == "Agree"
    # Row 0: mine 2 mentions (suggestions left out), theirs 3, one in both: F1 0.4, 2 left.
    assert model.index(0, col).data() == "0.40 (2)"
    assert model.index(1, col).data() == "1.00 ✓"
    assert [adj.panel.queue.topLevelItem(i).text(0) for i in range(adj.panel.queue.topLevelItemCount())] == [
        "other boundaries", "only theirs"]
    # Over the three documents: mine 4 mentions, theirs 5, three in both.
    assert "F1 0.6667 (P 0.6000, R 0.7500) over 3 document(s); 2 of 2 difference(s) left" in adj.panel.summary.text()
    file_menu = loaded.menuBar().actions()[0].menu()
    assert "Compare with another annotation…" in [a.text() for a in file_menu.actions()]


def test_decisions_by_keys_each_one_undo_step(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    ws, stack, queue = loaded.workspace, loaded.stack, adj.panel.queue
    doc = ws.document(0)
    start = _mentions(doc)
    status = ws.entry(0).status
    queue.setFocus()
    n = stack.count()
    qtbot.keyClick(queue, Qt.Key.Key_T)                # take theirs: "Lithium" for "Lithium carbonate"
    assert stack.count() == n + 1
    lithium = next(s for s in doc.spans if s.start == 0)
    assert (lithium.end, lithium.source, lithium.annotator) == (7, Source.CURATOR, "bob")
    assert adj.session.left(0) == 1 and ws.entry(0).status is DocStatus.IN_REVIEW
    qtbot.keyClick(queue, Qt.Key.Key_B)                # keep both of "heart failure" (only theirs)
    assert stack.count() == n + 2
    hf = [s for s in doc.spans if doc.text[s.start:s.end] == "heart failure"]
    assert [(s.source, s.annotator) for s in hf] == [(Source.CURATOR, "bob")]   # took over the suggestion
    assert ws.entry(0).status is DocStatus.REVIEWED    # every difference settled: the reviewed version
    # The agreement is the document's as it stands: now theirs exactly (0.40 when compared).
    agree = loaded.documents.model.index(0, loaded.documents.model.agreement_column())
    assert agree.data() == "1.00 ✓" and "0.4000 when compared" in agree.data(Qt.ItemDataRole.ToolTipRole)
    stack.undo()
    assert adj.session.left(0) == 1 and ws.entry(0).status is DocStatus.IN_REVIEW
    assert not any(s.source is Source.CURATOR and s.start == hf[0].start for s in doc.spans)
    stack.undo()
    assert _mentions(doc) == start and ws.entry(0).status is status and adj.session.left(0) == 2
    stack.redo()
    assert next(s for s in doc.spans if s.start == 0).end == 7 and adj.session.left(0) == 1


def test_drop_both_keep_mine_and_boundary_keys(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    doc, queue, panel = loaded.workspace.document(0), adj.panel.queue, adj.panel
    queue.setFocus()
    qtbot.keyClick(queue, Qt.Key.Key_D)                # drop both
    assert not any(s.start == 0 for s in doc.spans)
    panel.select(0)
    qtbot.keyClick(queue, Qt.Key.Key_M)                # decided again: keep mine
    assert [(s.end, s.annotator) for s in doc.spans if s.start == 0] == [(17, "mine")]
    qtbot.keyClick(queue, Qt.Key.Key_S)                # boundary keys now move theirs
    panel.select(0)
    qtbot.keyClick(queue, Qt.Key.Key_Period)           # theirs' end a token right: "Lithium carbonate"
    assert [(s.end, s.annotator) for s in doc.spans if s.start == 0] == [(17, "bob")]
    assert "moved" in loaded.stack.undoText()
    loaded.stack.undo()
    assert [(s.end, s.annotator) for s in doc.spans if s.start == 0] == [(17, "mine")]


def test_keys_listed_in_the_shortcuts_help(loaded):
    rows = {(path, title): keys for path, title, keys in shortcut_rows(loaded.menuBar())}
    assert rows[("Adjudicate", "Keep mine")] == "M"
    assert rows[("Adjudicate", "Take theirs")] == "T"
    assert rows[("Adjudicate", "Keep both")] == "B"
    assert rows[("Adjudicate", "Drop both")] == "D"
    assert rows[("Adjudicate", "Boundary: end a token right")] == "."
    # None of the queue's keys is bound to anything else.
    mine = {keys for (path, _), keys in rows.items() if path == "Adjudicate"}
    others = {k.strip() for (path, _), keys in rows.items() if path != "Adjudicate" for k in keys.split(",")}
    assert not mine & others


def test_the_annotator_is_kept_in_the_saved_project(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    adj.panel.queue.setFocus()
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_T)
    path = tmp_path / "adjudicated.fbproj"
    loaded.projects.save(path)
    doc = load_project(path).documents[0]
    assert [(s.start, s.end, s.annotator) for s in doc.spans if s.start == 0] == [(0, 7, "bob")]


def test_a_file_of_other_documents_is_one_message(loaded, qtbot, tmp_path):
    other = tmp_path / "other.pubtator"
    other.write_text("99|t|Nothing in common\n99|a|Here.\n\n", encoding="utf-8")
    job = loaded.features["adjudication"].compare_with(str(other))
    qtbot.waitUntil(lambda: job.ended, timeout=30000)
    qtbot.waitUntil(lambda: "Cannot compare" in loaded.statusBar().currentMessage(), timeout=10000)
    assert "none of its documents is open here" in loaded.statusBar().currentMessage()
    assert not loaded.features["adjudication"].session.active


def test_the_reviewed_version_exports_with_its_annotators(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    adj.panel.queue.setFocus()
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_T)
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_T)
    entry = loaded.workspace.entry(0)
    assert entry.status is DocStatus.REVIEWED
    jsonl = export_documents([entry.document], tmp_path / "out.jsonl", ExportSettings("JSONL (lossless)"))
    (doc,) = read_documents(tmp_path / "out.jsonl")
    assert sorted((doc.text[s.start:s.end], s.annotator) for s in doc.spans if s.annotator) == [
        ("Lithium", "bob"), ("heart failure", "bob")]
    assert not any(s.source is Source.MODEL for s in doc.spans)   # the suggestion gave way
    pubtator = export_documents([entry.document], tmp_path / "out.pubtator", ExportSettings("PubTator"))
    assert jsonl.annotators_not_held == 0 and pubtator.annotators_not_held == 2
    assert "which annotator marked 2 span(s) is not written" in pubtator.summary()


def test_undoing_a_decision_of_an_earlier_comparison_leaves_the_new_one_alone(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    adj.panel.queue.setFocus()
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_T)
    job = adj.compare_with(str(tmp_path / "bob.jsonl"))             # compared again, after that decision
    qtbot.waitUntil(lambda: job.ended and adj.session.left(0) == 1, timeout=30000)
    loaded.stack.undo()                                             # the earlier comparison's decision
    assert next(s for s in loaded.workspace.document(0).spans if s.start == 0).end == 17
    # The queue follows the document: "Lithium carbonate" is back, so is its difference.
    assert adj.session.decisions == {} and adj.session.left(0) == 2


def _queue_kinds(adj):
    return [adj.panel.queue.topLevelItem(i).text(0) for i in range(adj.panel.queue.topLevelItemCount())]


def test_an_edit_of_a_compared_document_compares_it_again(loaded, qtbot, tmp_path):
    """Issue 67: mentions added after comparing left "1.00 ✓" and an unchanged queue."""
    adj = compared(loaded, qtbot, tmp_path)
    model, col = loaded.documents.model, loaded.documents.model.agreement_column()
    loaded.documents.set_current_row(1)
    qtbot.waitUntil(lambda: adj.panel.row == 1)
    assert model.index(1, col).data() == "1.00 ✓" and _queue_kinds(adj) == []
    doc = loaded.workspace.document(1)
    rats = doc.text.index("rats")
    loaded.curation.add(rats, rats + 4, "Disease")
    assert model.index(1, col).data() == "0.80 (1)"          # mine 3, theirs 2, two in both
    assert _queue_kinds(adj) == ["only mine"] and adj.session.left(1) == 1
    assert "3 of 3 difference(s) left" in adj.panel.summary.text()
    loaded.stack.undo()                                      # the edit undone: agreement again
    assert model.index(1, col).data() == "1.00 ✓" and _queue_kinds(adj) == []


def test_decisions_of_differences_an_edit_leaves_are_kept(loaded, qtbot, tmp_path):
    adj = compared(loaded, qtbot, tmp_path)
    adj.panel.queue.setFocus()
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_M)            # keep mine: "Lithium carbonate"
    assert adj.session.left(0) == 1
    doc = loaded.workspace.document(0)
    infant = doc.text.index("infant")
    loaded.curation.add(infant, infant + 6, "Disease")       # an edit beside the adjudication
    assert _queue_kinds(adj) == ["other boundaries", "only mine", "only theirs"]
    assert adj.session.left(0) == 2                          # the kept decision stands, the new one waits
    assert adj.panel.queue.topLevelItem(0).text(3) == "kept mine"


def test_a_big_document_is_compared_again_in_a_job_and_marked_meanwhile(loaded, qtbot, tmp_path, monkeypatch):
    import threading

    import fastbioner_gui.adjudication_session as session_module

    threads = []
    real = session_module.compare_spans

    def watched(*args, **kwargs):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "compare_spans", watched)
    compared(loaded, qtbot, tmp_path)
    assert threads and not any(threads)                      # the first comparison: off the GUI thread
    monkeypatch.setattr(session_module, "AT_ONCE", 0)        # every document "big"
    threads.clear()
    model, col = loaded.documents.model, loaded.documents.model.agreement_column()
    loaded.documents.set_current_row(1)
    qtbot.waitUntil(lambda: loaded.row == 1)
    doc = loaded.workspace.document(1)
    rats = doc.text.index("rats")
    loaded.curation.add(rats, rats + 4, "Disease")
    assert model.index(1, col).data() == "1.00 …"           # out of date until the job ends
    qtbot.waitUntil(lambda: model.index(1, col).data() == "0.80 (1)", timeout=30000)
    assert threads and not any(threads)


def test_j_opens_the_next_document_on_its_first_difference(loaded, qtbot, tmp_path):
    docs_b = make_documents()
    docs_b[1].spans = []                                     # two differences in the second document too
    path = tmp_path / "carol.jsonl"
    write_documents([list(read_documents(theirs_file(tmp_path)))[0], docs_b[1], docs_b[2]], path)
    adj = loaded.features["adjudication"]
    adj.compare_with(str(path))
    qtbot.waitUntil(lambda: adj.session.active, timeout=30000)
    adj.panel.queue.setFocus()
    adj.panel.select(1)                                      # on the second difference here
    qtbot.keyClick(adj.panel.queue, Qt.Key.Key_J)
    qtbot.waitUntil(lambda: adj.panel.row == 1)
    assert adj.panel.current_index() == 0
