"""Curation in the window: add by selection and number keys (snapped, or exact with
Alt), the context menu, relabel, delete, accept and reject suggestions, undo and
redo of every edit, and the curated status."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from fastbioner.documents import Source, Span
from fastbioner.project import DocStatus
from fastbioner_gui.curation import tagging_command


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
    assert added in doc.spans and ws.entry(0).status is DocStatus.CURATED
    assert view.selected_span == added and loaded.entities.selected_spans() == [added]
    loaded.stack.undo()
    assert doc.spans == before and ws.entry(0).status is DocStatus.TAGGED
    loaded.stack.redo()
    assert added in doc.spans and ws.entry(0).status is DocStatus.CURATED


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
    relabelled = Span(0, 17, "Disease", Source.CURATOR)
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
    assert heart.with_(source=Source.CURATOR) in doc.spans
    doubtful = next(s for s in doc.spans if s.source is Source.MODEL)
    menu = view.build_context_menu(_pos(view, doubtful.start + 1))
    _menu_action(menu, "Relabel as", "1 Disease").trigger()
    assert Span(doubtful.start, doubtful.end, "Disease", Source.CURATOR) in doc.spans
    assert loaded.stack.count() == 3


def test_accept_and_reject_all_and_table_delete(loaded):
    doc = loaded.workspace.document(0)
    loaded.reject_all_action.trigger()
    assert not doc.spans_by(Source.MODEL) and len(doc.spans) == 2
    loaded.stack.undo()
    loaded.accept_all_action.trigger()
    assert not doc.spans_by(Source.MODEL) and len(doc.spans_by(Source.CURATOR)) == 2
    panel = loaded.entities
    panel.table.selectAll()
    panel.deletePressed.emit(panel.selected_spans())
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
    assert ws.entry(0).status is DocStatus.CURATED and ws.entry(0).tagged_by == "tiny"
    assert ws.entry(1).status is DocStatus.TAGGED
    loaded.stack.undo()
    assert ws.entry(1).status is DocStatus.NEW and ws.entry(0).tagged_by is None
    assert [doc.span_text(s) for s in doc.spans_by(Source.MODEL)] == ["heart failure", "lithium"]


def test_mark_curated_without_changing_spans(loaded):
    loaded.documents.set_current_row(2)
    loaded.mark_curated_action.trigger()
    assert loaded.workspace.entry(2).status is DocStatus.CURATED
    loaded.stack.undo()
    assert loaded.workspace.entry(2).status is DocStatus.NEW
