"""Issue 53 in the window: Curate > Annotate all occurrences… (preview count, the case rule,
one undo step however many documents), concept lookup (the concept cell completes
from the shipped dictionary and the open documents; an accepted suggestion gets the
proposed id in the same undo step) and the Relations dock (add and remove by
keyboard, each one undo step; relations follow a concept-id edit)."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from fastbioner.curate import occurrences as rules
from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.project import load_project
from fastbioner_gui import concept_lookup
from fastbioner_gui.dialogs.shortcuts import shortcuts_html


def _lithium_docs():
    docs = []
    for i, text in enumerate(["Lithium toxicity: lithium levels rose.", "Serum lithium and LITHIUM.",
                              "No such mention."]):
        doc = Document(str(100 + i), text)
        for start in range(len(text)):
            if text[start:start + 7].lower() == "lithium":
                doc.spans.append(Span(start, start + 7, "Chemical", Source.MODEL, 0.7))
        docs.append(doc)
    docs[0].spans[0] = docs[0].spans[0].with_(source=Source.GOLD, score=None, concept_id="D008094")
    return docs


def _open(window, qtbot, docs):
    window.workspace.add_documents(docs, origin="test")
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    # The concept dictionary is built in the background: proposals and completion need it.
    qtbot.waitUntil(window.features["concept_lookup"].lookup.up_to_date, timeout=30000)


def _spans(window):
    return [list(window.workspace.document(r).spans) for r in range(len(window.workspace))]


def test_all_occurrences_previews_then_applies_in_one_undo_step(window, qtbot):
    _open(window, qtbot, _lithium_docs())
    before = _spans(window)
    gold = window.workspace.document(0).spans[0]
    window.keys.select(gold)
    window.entities.table.setFocus()
    dialog = window.features["occurrences"].make_dialog()
    assert dialog is not None and dialog.text == "Lithium" and dialog.action() == rules.ADD
    assert dialog.case.currentText() == rules.EXACT and dialog.whole.isChecked()   # the case rule, shown
    dialog.buttons[rules.ACCEPT].setChecked(True)
    assert dialog.current.changes == 0 and "Changes nothing" in dialog.preview_label.text()
    dialog.case.setCurrentText(rules.IGNORE_CASE)
    assert dialog.current.describe() == "Accepts 1 suggestion in 1 document"
    dialog.scope.setCurrentIndex(1)   # the whole project
    assert dialog.current.describe() == "Accepts 3 suggestions in 2 documents"
    assert "One undo step" in dialog.preview_label.text()
    steps = window.stack.count()
    dialog.apply()
    assert window.stack.count() == steps + 1
    after = _spans(window)
    accepted = [s for doc in after for s in doc if s.label == "Chemical"]
    assert len(accepted) == 4 and not any(s.source is Source.MODEL for s in accepted)
    # The mention's id goes to every accepted one.
    assert {s.concept_id for s in accepted} == {"D008094"}
    window.undo()
    assert _spans(window) == before
    window.redo()
    assert _spans(window) == after


def test_reject_all_occurrences_remembers_them_and_undoes_at_once(window, qtbot):
    _open(window, qtbot, _lithium_docs())
    suggestion = window.workspace.document(0).spans[1]
    window.keys.select(suggestion)
    window.entities.table.setFocus()
    dialog = window.features["occurrences"].make_dialog()
    assert dialog.action() == rules.ACCEPT   # a suggestion: accept is offered first
    dialog.buttons[rules.REJECT].setChecked(True)
    dialog.case.setCurrentText(rules.IGNORE_CASE)
    dialog.scope.setCurrentIndex(1)
    assert dialog.current.describe() == "Rejects 3 suggestions in 2 documents"
    dialog.apply()
    assert [len(window.workspace.entry(r).rejected) for r in range(3)] == [1, 2, 0]
    window.undo()
    assert [len(window.workspace.entry(r).rejected) for r in range(3)] == [0, 0, 0]


def test_all_occurrences_of_a_text_selection_adds_them(window, qtbot):
    doc = Document("7", "Cocaine and cocaine; cocaineX.")
    _open(window, qtbot, [doc])
    window.view.select_offsets(0, 7)
    window.view.setFocus()
    dialog = window.features["occurrences"].make_dialog()
    assert dialog.action() == rules.ADD and not dialog.buttons[rules.ACCEPT].isEnabled()
    assert dialog.add_label.currentText() == "Chemical"   # the dictionary knows cocaine as a chemical
    dialog.case.setCurrentText(rules.IGNORE_CASE)
    assert dialog.current.describe() == "Adds 2 entities in 1 document"   # not inside "cocaineX"
    dialog.whole.setChecked(False)
    assert dialog.current.describe() == "Adds 3 entities in 1 document"
    dialog.whole.setChecked(True)
    dialog.apply()
    spans = window.workspace.document(0).spans
    assert [(s.start, s.end, s.label, s.concept_id) for s in spans] == [(0, 7, "Chemical", "D003042"),
                                                                        (12, 19, "Chemical", "D003042")]


def test_the_concept_cell_completes_by_name_or_id_from_the_shipped_and_open_documents(window, qtbot):
    docs = [Document("1", "Lithium carbonate and cocaine.",
                     spans=[Span(0, 17, "Chemical", concept_id="D016651"), Span(22, 29, "Chemical", Source.MODEL)]),
            Document("2", "Zorblamide helped.", spans=[Span(0, 10, "Chemical", concept_id="C999999")])]
    _open(window, qtbot, docs)
    entities = window.entities
    assert entities.edit_concept(window.workspace.document(0).spans[1])
    editor = entities.table.findChild(QLineEdit)
    completer = window.features["concept_lookup"].delegate.last_completer
    assert completer.label == "Chemical"
    qtbot.keyClicks(editor, "cocai")
    assert completer.offered()[0] == "D003042"        # shipped (BC5CDR/NCBI train)
    editor.clear()
    qtbot.keyClicks(editor, "zorbl")
    assert completer.offered() == ["C999999"]         # a concept of an open document only
    editor.clear()
    qtbot.keyClicks(editor, "D01665")
    assert "D016651" in completer.offered()            # by id
    # Choosing an offer puts the id in the cell.
    completer.popup().setCurrentIndex(completer.completionModel().index(0, 0))
    qtbot.keyClick(completer.popup(), Qt.Key.Key_Return)
    assert editor.text() == "D016651"
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.workspace.document(0).spans[-1].concept_id == "D016651", timeout=5000)


def test_the_concept_cell_names_its_concept(window, qtbot):
    from fastbioner_gui.models.entity_table import CONCEPT

    _open(window, qtbot, [Document("3", "Cocaine and zorblamide.", spans=[
        Span(0, 7, "Chemical", concept_id="D003042"), Span(12, 22, "Chemical", concept_id="C0")])])
    delegate, proxy = window.features["concept_lookup"].delegate, window.entities.proxy
    tips = [delegate.tooltip(proxy.index(r, CONCEPT)) for r in range(proxy.rowCount())]
    assert tips[0].startswith("D003042 — cocaine (Chemical,")
    assert tips[1] == "C0 — zorblamide (Chemical, 1 mention in the dictionary)"   # an open document's own


def test_the_dictionary_is_refreshed_when_documents_load(window, qtbot):
    lookup = window.features["concept_lookup"].lookup
    assert lookup.propose("Quuxamine", "Chemical") is None
    _open(window, qtbot, [Document("9", "Quuxamine.", spans=[Span(0, 9, "Chemical", concept_id="C123")])])
    assert lookup.propose("quuxamine", "Chemical") == "C123"


def test_accepting_a_suggestion_fills_the_proposed_id_in_the_same_undo_step(window, qtbot):
    doc = Document("5", "High lithium levels.", spans=[Span(5, 12, "Chemical", Source.MODEL, 0.8)])
    _open(window, qtbot, [doc])
    window.keys.select(doc.spans[0])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_A)
    got = window.workspace.document(0).spans
    assert [(s.source, s.concept_id) for s in got] == [(Source.CURATOR, "D008094")]
    assert "D008094" in window.statusBar().currentMessage()
    window.undo()
    assert window.workspace.document(0).spans == [Span(5, 12, "Chemical", Source.MODEL, 0.8)]


class _HeldBuilds:
    """Builds of the concept dictionary that wait, on their worker thread, until the
    test lets them go: what a dictionary of millions of rows does for seconds."""

    def __init__(self, monkeypatch):
        self.gate = threading.Event()
        build = concept_lookup.build_dictionary_job

        def held(shipped, votes):
            job = build(shipped, votes)

            def wait_then_build(on_event, cancel):
                self.gate.wait(60)   # never reached by a passing test: the test opens the gate
                return job(on_event, cancel)
            return wait_then_build
        monkeypatch.setattr(concept_lookup, "build_dictionary_job", held)


def test_before_the_dictionary_is_built_the_cell_says_so_and_the_window_never_waits(window, qtbot, monkeypatch):
    held = _HeldBuilds(monkeypatch)
    try:
        doc = Document("1", "Cocaine and lithium.", spans=[Span(0, 7, "Chemical", Source.MODEL, 0.8),
                                                            Span(12, 19, "Chemical", Source.MODEL, 0.8)])
        window.workspace.add_documents([doc], origin="test")
        qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
        lookup = window.features["concept_lookup"].lookup
        assert not lookup.ready   # the build waits for the gate: everything below runs meanwhile
        # An accept goes through at once, without an id, and says why.
        window.keys.select(doc.spans[1])
        window.view.setFocus()
        qtbot.keyClick(window.view, Qt.Key.Key_A)
        assert [(s.source, s.concept_id) for s in window.workspace.document(0).spans] == [
            (Source.MODEL, None), (Source.CURATOR, None)]
        assert "still loading" in window.statusBar().currentMessage()
        # Typing in a concept cell offers nothing yet, and says so.
        assert window.entities.edit_concept(window.workspace.document(0).spans[0])
        editor = window.entities.table.findChild(QLineEdit)
        completer = window.features["concept_lookup"].delegate.last_completer
        qtbot.keyClicks(editor, "cocai")
        assert completer.loading() and completer.offered() == []
        assert "still loading" in completer.items.item(0).text()
        held.gate.set()
        # Built: the open list fills in without another key.
        qtbot.waitUntil(lookup.up_to_date, timeout=30000)
        assert not completer.loading() and completer.offered()[0] == "D003042"
    finally:
        held.gate.set()


def test_while_the_dictionary_is_rebuilt_the_one_before_answers(window, qtbot, monkeypatch):
    _open(window, qtbot, [Document("1", "Cocaine.", spans=[Span(0, 7, "Chemical", concept_id="D003042")])])
    lookup = window.features["concept_lookup"].lookup
    held = _HeldBuilds(monkeypatch)
    try:
        window.workspace.add_documents([Document("2", "Zorblamide.", spans=[Span(0, 10, "Chemical",
                                                                                  concept_id="C999999")])],
                                       origin="test")
        assert not lookup.up_to_date()
        assert lookup.propose("cocaine", "Chemical") == "D003042"   # the dictionary built before
        assert lookup.propose("zorblamide", "Chemical") is None      # the new document's, not yet
        held.gate.set()
        qtbot.waitUntil(lookup.up_to_date, timeout=30000)
        assert lookup.propose("zorblamide", "Chemical") == "C999999"
    finally:
        held.gate.set()


def _cdr_doc():
    doc = Document("42", "Cocaine caused seizures and cocaine caused fever.")
    doc.spans = [Span(0, 7, "Chemical", concept_id="D003042"), Span(15, 23, "Disease", concept_id="D012640"),
                 Span(28, 35, "Chemical", concept_id="D003042"), Span(43, 48, "Disease", concept_id="D005334")]
    doc.relations = [("CID", "D003042", "D012640")]
    return doc


def test_relations_panel_adds_and_removes_by_keyboard_each_one_undo_step(window, qtbot, tmp_path):
    _open(window, qtbot, [_cdr_doc()])
    rel = window.features["relations"]
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert rel.dock.isVisible() and rel.panel.tree.hasFocus()
    assert rel.panel.tree.topLevelItem(0).text(1) == "D003042 — Cocaine"
    assert rel.panel.tree.topLevelItem(0).text(2) == "D012640 — seizures"
    doc = window.workspace.document(0)
    # Select the chemical and the fever entities in the table; Ctrl+L preselects them.
    window.keys.select(doc.spans[0])
    window.entities.table.setFocus()
    window.entities.table.selectRow(3)   # rows in text order: fever is the last
    window.entities.table.selectionModel().select(
        window.entities.proxy.index(0, 0), window.entities.table.selectionModel().SelectionFlag.Select
        | window.entities.table.selectionModel().SelectionFlag.Rows)
    dialog = rel.make_dialog()
    assert dialog.relation() == ("CID", "D003042", "D005334")
    steps = window.stack.count()
    assert rel.add_from(dialog)
    assert doc.relations == [("CID", "D003042", "D012640"), ("CID", "D003042", "D005334")]
    assert window.stack.count() == steps + 1 and rel.panel.tree.topLevelItemCount() == 2
    # Remove the first by Ctrl+Delete in the panel.
    rel.panel.tree.setFocus()
    rel.panel.select(("CID", "D003042", "D012640"))
    qtbot.keyClick(rel.panel.tree, Qt.Key.Key_Delete, Qt.KeyboardModifier.ControlModifier)
    assert doc.relations == [("CID", "D003042", "D005334")] and window.stack.count() == steps + 2
    # Saved in the project as they are.
    window.projects.save(tmp_path / "r.fbproj")
    assert load_project(tmp_path / "r.fbproj").entries[0].document.relations == [("CID", "D003042", "D005334")]
    window.stack.undo()
    assert doc.relations == [("CID", "D003042", "D012640"), ("CID", "D003042", "D005334")]
    window.stack.undo()
    assert doc.relations == [("CID", "D003042", "D012640")]
    assert rel.panel.tree.topLevelItemCount() == 1


def test_relations_follow_a_concept_id_edit_in_the_same_undo_step(window, qtbot):
    _open(window, qtbot, [_cdr_doc()])
    doc = window.workspace.document(0)
    # One "cocaine" of two changes: D003042 is still in the document, relations stay.
    window.entities.conceptEdited.emit(doc.spans[0], "D003043")
    assert doc.relations == [("CID", "D003042", "D012640")]
    steps = window.stack.count()
    second = next(s for s in doc.spans if s.start == 28)
    window.entities.conceptEdited.emit(second, "D003043")
    assert doc.relations == [("CID", "D003043", "D012640")]
    assert window.stack.count() == steps + 1
    window.stack.undo()
    assert doc.relations == [("CID", "D003042", "D012640")]
    assert next(s for s in doc.spans if s.start == 28).concept_id == "D003042"


def test_the_new_keys_are_in_the_shortcuts_help_and_clash_with_none(window):
    from fastbioner_gui.dialogs.shortcuts import shortcut_rows

    page = shortcuts_html(window.menuBar())
    for text in ("Annotate all occurrences", "Ctrl+Shift+A", "Add relation", "Ctrl+L", "Relations panel",
                 "Ctrl+Shift+L", "Ctrl+Del"):
        assert text in page
    rows = shortcut_rows(window.menuBar())
    ours = ("Annotate all occurrences…", "Add relation…", "Relations panel")
    new = {keys for _path, title, keys in rows if title in ours}
    others = [k.strip() for _path, title, keys in rows if title not in ours for k in keys.split(",")]
    assert new == {"Ctrl+Shift+A", "Ctrl+L", "Ctrl+Shift+L"} and not new & set(others)


def test_the_keys_open_all_occurrences_and_add_relation_where_the_curator_is(window, qtbot, monkeypatch):
    from fastbioner_gui.occurrences import OccurrencesDialog
    from fastbioner_gui.relations import AddRelationDialog

    doc = _cdr_doc()
    doc.text += " Cocaine again."   # a third "Cocaine", not annotated
    doc.passages = [doc.passages[0].__class__(0, len(doc.text))]
    _open(window, qtbot, [doc])
    shown = []
    # The dialogs are answered as a curator would: Apply (whole project), OK.
    monkeypatch.setattr(OccurrencesDialog, "exec", lambda self: (shown.append(self.current.describe()),
                                                                self.apply(), 1)[-1])
    monkeypatch.setattr(AddRelationDialog, "exec", lambda self: (shown.append(self.relation()), 1)[-1])
    window.keys.select(doc.spans[0])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert shown == ["Adds 1 entity in 1 document"]   # exact case: the third "Cocaine" only
    third = doc.text.rindex("Cocaine")
    assert Span(third, third + 7, "Chemical", Source.CURATOR, concept_id="D003042") in doc.spans
    window.keys.select(next(s for s in doc.spans if s.label == "Disease" and s.concept_id == "D005334"))
    qtbot.keyClick(window.view, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    # Only the disease is selected: the chemical offered first is the document's (cocaine).
    assert shown[-1] == ("CID", "D003042", "D005334")
    assert doc.relations == [("CID", "D003042", "D012640"), ("CID", "D003042", "D005334")]
