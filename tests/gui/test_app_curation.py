"""Curation in the window: add by selection and number keys (snapped, or exact with
Alt), the context menu, relabel, delete, accept and reject suggestions, undo and
redo of every edit, the review status (an edit puts a document in review; reviewed
is a deliberate, undoable step) and the keyboard (every curation action without the
mouse, from the reading view and from the entity table)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from fastbioner.io.documents import Source, Span
from fastbioner.curate.project import DocStatus
from fastbioner_gui.curation import tagging_change, tagging_command_of
from fastbioner_gui.models.entity_table import STATE


def tagging_command(workspace, results, model, replace_curated=False):
    """A tagging run's one undoable command, as the app's tagging controller builds it
    (its results merged document by document, then pushed as one command)."""
    changes = [c for row, suggested in sorted(results.items())
               if (c := tagging_change(workspace, row, suggested, model, replace_curated)) is not None]
    return tagging_command_of(workspace, changes, model)


def _menu_action(menu, *path):
    """The action reached by following menu titles (``&`` shortcuts ignored)."""
    for title in path:
        for action in menu.actions():
            if action.text().replace("&", "") == title:
                if action.menu() is not None and title != path[-1]:
                    menu = action.menu()
                    break
                return action
        else:
            raise AssertionError(f"no {title!r} in {[a.text() for a in menu.actions()]}")
    raise AssertionError(path)


def _pos(view, offset):
    cursor = QTextCursor(view.document())
    cursor.setPosition(view._map.to_view(offset) + 1)
    return view.cursorRect(cursor).center()


def test_number_key_adds_a_snapped_span_and_undo_redo_restore(loaded, qtbot):
    view, doc, ws = loaded.view, loaded.workspace.document(0), loaded.workspace
    before = list(doc.spans)
    start = doc.text.index("serum")
    view.select_offsets(start + 2, start + 4)  # "ru", inside "serum"
    qtbot.keyClick(view, Qt.Key.Key_1)
    added = Span(start, start + 5, "Disease", Source.CURATOR)
    assert added in doc.spans and ws.entry(0).status is DocStatus.IN_REVIEW
    assert view.selected_span == added and loaded.entities.selected_spans() == [added]
    loaded.stack.undo()
    assert doc.spans == before and ws.entry(0).status is DocStatus.TAGGED
    loaded.stack.redo()
    assert added in doc.spans and ws.entry(0).status is DocStatus.IN_REVIEW


def test_alt_number_keeps_the_exact_selection(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    start = doc.text.index("newborn with")
    view.select_offsets(start + 3, start + 7)  # "born"
    qtbot.keyClick(view, Qt.Key.Key_2, Qt.KeyboardModifier.AltModifier)
    assert Span(start + 3, start + 7, "Chemical", Source.CURATOR) in doc.spans


def test_click_then_keys_relabel_and_delete(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    gold = doc.spans[0]  # Lithium carbonate, Chemical
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_pos(view, 3))
    assert view.selected_span == gold
    qtbot.keyClick(view, Qt.Key.Key_1)
    relabelled = Span(0, 17, "Disease", Source.CURATOR, concept_id=gold.concept_id)  # the id stays
    assert relabelled in doc.spans and gold not in doc.spans
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_pos(view, 3))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert not any(s.start == 0 and s.end == 17 for s in doc.spans)
    loaded.stack.undo()
    loaded.stack.undo()
    assert gold in doc.spans and relabelled not in doc.spans


def test_context_menu_adds_relabels_accepts_rejects(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    start = doc.text.index("newborn infant")
    view.select_offsets(start, start + 14)
    _menu_action(view.build_context_menu(_pos(view, start)), "Add entity as", "1 Disease").trigger()
    assert Span(start, start + 14, "Disease", Source.CURATOR) in doc.spans
    heart = next(s for s in doc.spans if doc.span_text(s) == "heart failure")
    view.select_offsets(0, 0)
    _menu_action(view.build_context_menu(_pos(view, heart.start + 1)), "Accept suggestion").trigger()
    # Accepted, with the id the shipped concept dictionary proposes (issue 53).
    assert heart.with_(source=Source.CURATOR, concept_id="D006333") in doc.spans
    doubtful = next(s for s in doc.spans if s.source is Source.MODEL)
    menu = view.build_context_menu(_pos(view, doubtful.start + 1))
    _menu_action(menu, "Relabel as", "1 Disease").trigger()
    assert Span(doubtful.start, doubtful.end, "Disease", Source.CURATOR) in doc.spans
    assert loaded.stack.count() == 3


def test_accept_and_reject_all_and_table_delete(loaded, qtbot):
    doc = loaded.workspace.document(0)
    loaded.commands["curate.reject_all"].trigger()
    assert not doc.spans_by(Source.MODEL) and len(doc.spans) == 2
    loaded.stack.undo()
    loaded.commands["curate.accept_all"].trigger()
    assert not doc.spans_by(Source.MODEL) and len(doc.spans_by(Source.CURATOR)) == 2
    panel = loaded.entities
    panel.table.setFocus()
    panel.table.selectAll()
    qtbot.keyClick(panel.table, Qt.Key.Key_Delete)
    assert doc.spans == []
    loaded.stack.undo()
    assert len(doc.spans) == 4


def test_retagging_keeps_curated_spans_and_is_one_undoable_command(loaded):
    ws, doc = loaded.workspace, loaded.workspace.document(0)
    start = doc.text.index("serum")
    loaded.curation.add(start, start + 5, "Chemical")
    curated_before = doc.spans_by(Source.CURATOR)
    suggestions = {0: [Span(start, start + 13, "Disease", Source.MODEL, 0.8),   # overlaps the curated span
                       Span(doc.text.index("infant"), doc.text.index("infant") + 6, "Disease", Source.MODEL, 0.7)],
                   1: [Span(0, 7, "Chemical", Source.MODEL, 0.9)]}               # same as gold
    loaded.stack.push(tagging_command(ws, suggestions, "tiny"))
    assert doc.spans_by(Source.CURATOR) == curated_before
    assert [doc.span_text(s) for s in doc.spans_by(Source.MODEL)] == ["infant"]
    assert ws.entry(0).status is DocStatus.IN_REVIEW and ws.entry(0).tagged_by == "tiny"
    assert ws.entry(1).status is DocStatus.TAGGED
    loaded.stack.undo()
    assert ws.entry(1).status is DocStatus.NEW and ws.entry(0).tagged_by is None
    assert [doc.span_text(s) for s in doc.spans_by(Source.MODEL)] == ["heart failure", "lithium"]


def test_reviewed_is_a_deliberate_undoable_step_and_edits_never_set_it(loaded, qtbot):
    ws, doc = loaded.workspace, loaded.workspace.document(0)
    loaded.commands["curate.accept_all"].trigger()
    assert ws.entry(0).status is DocStatus.IN_REVIEW  # touched, not done
    qtbot.keyClick(loaded.view, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier)
    assert ws.entry(0).status is DocStatus.REVIEWED and "reviewed" in loaded.statusBar().currentMessage()
    assert loaded.commands["curate.mark_reviewed"].text() == "Reopen document for review"
    start = doc.text.index("serum")
    loaded.curation.add(start, start + 5, "Chemical")  # a later fix keeps it reviewed
    assert ws.entry(0).status is DocStatus.REVIEWED
    loaded.commands["curate.mark_reviewed"].trigger()  # again: reopened
    assert ws.entry(0).status is DocStatus.IN_REVIEW
    loaded.stack.undo()
    loaded.stack.undo()
    assert ws.entry(0).status is DocStatus.REVIEWED
    loaded.stack.undo()
    assert ws.entry(0).status is DocStatus.IN_REVIEW and loaded.stack.undoText() == "Accept all suggestions"
    # the documents panel shows what still needs review
    panel = loaded.documents
    panel.status.setCurrentIndex(panel.status.findText("Needs review"))
    assert panel.proxy.rowCount() == 3
    loaded.commands["curate.mark_reviewed"].trigger()
    assert panel.proxy.rowCount() == 2
    panel.status.setCurrentIndex(panel.status.findText("reviewed"))
    assert panel.proxy.rowCount() == 1


def test_a_boundary_fix_over_a_suggestion_replaces_it(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    lithium = next(s for s in doc.spans if s.source is Source.MODEL and doc.span_text(s) == "lithium")
    view.select_offsets(lithium.start, lithium.end + 6)  # "lithium level"
    qtbot.keyClick(view, Qt.Key.Key_2)
    assert lithium not in doc.spans
    assert Span(lithium.start, lithium.end + 6, "Chemical", Source.CURATOR) in doc.spans


def test_a_document_reviewed_entirely_with_the_keyboard(loaded, qtbot):
    """Next entity, accept, reject, relabel, boundary keys, mark reviewed, next document
    needing review: no mouse, in the reading view."""
    ws, view, doc = loaded.workspace, loaded.view, loaded.workspace.document(0)
    view.setFocus()
    key = lambda k, mod=Qt.KeyboardModifier.NoModifier: qtbot.keyClick(view, k, mod)  # noqa: E731
    key(Qt.Key.Key_N)
    assert doc.span_text(view.selected_span) == "Lithium carbonate"
    key(Qt.Key.Key_N)
    key(Qt.Key.Key_N)
    assert doc.span_text(view.selected_span) == "heart failure"
    assert loaded.entities.selected_spans() == [view.selected_span]  # the table follows
    key(Qt.Key.Key_A)  # accept, and move on to the next entity
    assert any(doc.span_text(s) == "heart failure" and s.source is Source.CURATOR for s in doc.spans)
    assert doc.span_text(view.selected_span) == "lithium" and view.selected_span.source is Source.MODEL
    key(Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)  # extend the end by a token
    assert doc.span_text(view.selected_span) == "lithium level"
    assert view.selected_span.source is Source.CURATOR
    key(Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)  # and shrink it back
    assert doc.span_text(view.selected_span) == "lithium"
    key(Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.ShiftModifier)  # start a token left
    assert doc.span_text(view.selected_span) == "serum lithium"
    key(Qt.Key.Key_1)  # relabel
    assert view.selected_span.label == "Disease" and doc.span_text(view.selected_span) == "serum lithium"
    key(Qt.Key.Key_P)
    assert doc.span_text(view.selected_span) == "heart failure"
    key(Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier)
    assert ws.entry(0).status is DocStatus.REVIEWED
    key(Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)  # next document needing review
    assert loaded.row == 1
    loaded.view.setFocus()
    key(Qt.Key.Key_N)
    key(Qt.Key.Key_X)  # a gold entity is no suggestion: reject leaves it
    assert len(ws.document(1).spans) == 2
    # Ctrl+Shift+Z redoes; the undo stack took every step
    before = list(ws.document(0).spans)
    loaded.documents.set_current_row(0)
    view.setFocus()
    key(Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert ws.entry(0).status is DocStatus.IN_REVIEW
    key(Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert ws.entry(0).status is DocStatus.REVIEWED and ws.document(0).spans == before


def test_the_entity_table_takes_number_keys_enter_and_lets_tab_go(loaded, qtbot):
    panel, doc = loaded.entities, loaded.workspace.document(0)
    table = panel.table
    table.setFocus()
    heart = next(s for s in doc.spans if doc.span_text(s) == "heart failure")
    panel.select_span(heart, notify=True)
    qtbot.keyClick(table, Qt.Key.Key_Return)  # accept (with the proposed concept id)
    assert heart.with_(source=Source.CURATOR, concept_id="D006333") in doc.spans
    lithium = next(s for s in doc.spans if doc.span_text(s) == "lithium")
    panel.select_span(lithium, notify=True)
    qtbot.keyClick(table, Qt.Key.Key_1)  # relabel as Disease
    assert Span(lithium.start, lithium.end, "Disease", Source.CURATOR) in doc.spans
    assert panel.selected_spans() == [Span(lithium.start, lithium.end, "Disease", Source.CURATOR)]
    qtbot.keyClick(table, Qt.Key.Key_P)  # previous entity, in the table too
    assert [doc.span_text(s) for s in panel.selected_spans()] == ["heart failure"]
    loaded.activateWindow()
    table.setFocus()
    qtbot.waitUntil(table.hasFocus, timeout=30000)
    qtbot.keyClick(table, Qt.Key.Key_Tab)
    assert not table.hasFocus()  # Tab leaves the table, it does not step through its cells


def test_redo_keys_are_unambiguous_and_the_shortcuts_page_lists_the_bindings(loaded):
    from fastbioner_gui.dialogs.shortcuts import shortcut_rows, shortcuts_html

    keys = [k.toString() for k in loaded.commands["edit.redo"].shortcuts()]
    assert "Ctrl+Shift+Z" in keys and len(keys) == len(set(keys))
    bound: dict[str, list[str]] = {}
    for _, title, shortcut in shortcut_rows(loaded.menuBar()):
        for k in shortcut.split(", "):
            bound.setdefault(k, []).append(title)
    clashes = {k: v for k, v in bound.items() if len(v) > 1}
    assert not clashes, clashes
    rows = {title: shortcut for _path, title, shortcut in shortcut_rows(loaded.menuBar())}
    assert rows["Next entity"] == "N" and rows["Accept entity"].startswith("A")
    assert rows["Label as Disease"] == "1" and rows["Label as Chemical"] == "2"
    assert rows["Mark document reviewed"] == "Ctrl+M" and rows["Next document needing review"] == "Ctrl+R"
    assert rows["Extend end by a token"] == "Alt+Right"
    # rebinding an action changes the page: it is read from the actions
    loaded.keys.reject.setShortcut("Shift+X")
    assert "Shift+X" in shortcuts_html(loaded.menuBar())


def test_a_rejected_suggestion_stays_rejected_through_retagging_and_can_come_back(loaded, qtbot):
    ws, doc, view, panel = loaded.workspace, loaded.workspace.document(0), loaded.view, loaded.entities
    lithium = next(s for s in doc.spans if doc.span_text(s) == "lithium")
    view.select_span(lithium)
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_X)
    assert lithium not in doc.spans and ws.entry(0).rejected == [lithium]
    assert panel.proxy.rowCount() == 3  # the table shows the document's entities ...
    panel.sources.setCurrentIndex(panel.sources.findText("Rejected"))
    assert panel.proxy.rowCount() == 1  # ... and, when asked, what was rejected
    assert panel.proxy.index(0, STATE).data() == "rejected"
    # re-tagging offers the same mention again: it stays rejected
    loaded.stack.push(tagging_command(ws, {0: [lithium.with_(score=0.6)]}, "tiny"))
    assert not any(s.start == lithium.start and s.label == "Chemical" for s in doc.spans)
    # accepted after all, from the table
    panel.table.setFocus()
    panel.select_span(lithium, notify=True)
    qtbot.keyClick(panel.table, Qt.Key.Key_A)
    assert lithium.with_(source=Source.CURATOR) in doc.spans and ws.entry(0).rejected == []
    for _ in range(3):
        loaded.stack.undo()
    assert lithium in doc.spans and ws.entry(0).rejected == []


def test_the_concept_id_is_a_column_edited_in_the_table_and_undone(loaded, qtbot):
    from PySide6.QtWidgets import QLineEdit

    from fastbioner_gui.models.entity_table import CONCEPT

    panel, doc, ws = loaded.entities, loaded.workspace.document(0), loaded.workspace
    gold = doc.spans[0]  # Lithium carbonate, D016651
    lithium = next(s for s in doc.spans if doc.span_text(s) == "lithium")  # a suggestion, no id
    model = panel.model
    assert model.index(model.row_of(gold), CONCEPT).data() == "D016651"
    assert not panel.table.isColumnHidden(CONCEPT)
    # Type an id into the lithium row's Concept cell, as a curator does (F2, type, Enter).
    panel.select_span(lithium, notify=True)
    index = panel.proxy.mapFromSource(model.index(model.row_of(lithium), CONCEPT))
    panel.table.setCurrentIndex(index)
    panel.table.setFocus()
    qtbot.keyClick(panel.table, Qt.Key.Key_F2)
    editor = panel.table.focusWidget()
    assert isinstance(editor, QLineEdit)
    qtbot.keyClicks(editor, "D008094 x")  # the space is refused as typed
    with qtbot.waitSignal(panel.conceptEdited, timeout=30000):  # the delegate commits on its next event
        qtbot.keyClick(editor, Qt.Key.Key_Return)
    edited = lithium.with_(concept_id="D008094x", source=Source.CURATOR)
    assert edited in doc.spans and lithium not in doc.spans
    assert ws.entry(0).status is DocStatus.IN_REVIEW
    assert model.index(model.row_of(edited), CONCEPT).data() == "D008094x"
    assert panel.selected_spans() == [edited]  # the edited entity stays selected
    loaded.stack.undo()
    assert lithium in doc.spans and edited not in doc.spans
    loaded.stack.redo()
    assert edited in doc.spans
    # Clearing the cell clears the id (one more undoable edit); a relabel keeps an id.
    with qtbot.waitSignal(panel.conceptEdited, timeout=30000):
        assert model.setData(model.index(model.row_of(edited), CONCEPT), "")
    cleared = edited.with_(concept_id=None)
    assert cleared in doc.spans
    loaded.curation.relabel(gold, "Disease")
    assert gold.with_(label="Disease", source=Source.CURATOR) in doc.spans
    # A rejected suggestion's row is not editable.
    loaded.curation.reject([s for s in doc.spans if s.source is Source.MODEL])
    panel.sources.setCurrentIndex(panel.sources.findText("Rejected"))
    rejected_row = next(r for r in range(model.rowCount()) if model.is_rejected(r))
    assert not (model.flags(model.index(rejected_row, CONCEPT)) & Qt.ItemFlag.ItemIsEditable)
