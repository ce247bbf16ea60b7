"""Text that fits (issue 67, item 7): at 1600x1000 the documents panel's columns and the
entity table's text and label are on screen without scrolling; at 1024x700 what does
not fit scrolls and nothing is cut mid-word; the toolbar keeps Distil a student; the
export dialog is laid out again after each format change."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolBar, QToolButton

from fastbioner.io.documents import Document, Span

REPO = Path(__file__).resolve().parents[2]


def _hidden_columns(table, names) -> list[str]:
    """The named columns not wholly inside the table's viewport, unscrolled."""
    header, model = table.horizontalHeader(), table.model()
    table.horizontalScrollBar().setValue(0)
    out = []
    for column in range(header.count()):
        name = model.headerData(column, Qt.Orientation.Horizontal)
        if name in names and (header.isSectionHidden(column)
                              or header.sectionViewportPosition(column) + header.sectionSize(column)
                              > table.viewport().width()):
            out.append(name)
    return out


def _compare(window) -> None:
    """An agreement column, as a comparison adds (fastbioner_gui.adjudication)."""
    window.documents.model.set_agreement(lambda row: ("0.93 (12)", 0.93, ""))


def _settle(window, qtbot, width: int, height: int) -> None:
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width, timeout=10000)
    qtbot.wait(200)  # the panels' fitting runs on the next turns of the event loop


def test_at_1600x1000_every_documents_column_and_the_entity_text_and_label_show(loaded, qtbot):
    window = loaded
    _compare(window)
    _settle(window, qtbot, 1600, 1000)
    wanted = ("PMID", "Title", "Dis.", "Che.", "Unsure", "Agree", "Status")
    assert _hidden_columns(window.documents.table, wanted) == []
    assert _hidden_columns(window.entities.table, ("Text", "Label")) == []
    assert window.splitter.widget(0).width() >= 800  # the reading view keeps half the width


def test_a_window_maximised_from_its_first_size_gives_the_documents_their_columns(loaded, qtbot):
    # The window opens at 1400x860, where the panels give way; maximised to 1600 px,
    # the documents panel gets its columns back from the reading view's surplus.
    window = loaded
    _settle(window, qtbot, 1400, 860)
    _compare(window)
    _settle(window, qtbot, 1600, 1000)
    assert _hidden_columns(window.documents.table, ("Unsure", "Agree", "Status")) == []


def test_at_1024x700_what_does_not_fit_scrolls_and_no_word_is_cut(loaded, qtbot):
    window = loaded
    _compare(window)
    _settle(window, qtbot, 1024, 700)
    table = window.documents.table
    assert _hidden_columns(table, ("Status",)) == ["Status"]  # too narrow for all of them ...
    assert table.horizontalScrollBar().maximum() > 0          # ... so the table scrolls to them
    header = table.horizontalHeader()
    for column in range(header.count()):  # every header whole once scrolled to
        if not header.isSectionHidden(column):
            assert header.sectionSize(column) >= min(header.sectionSizeHint(column), 98), column
    assert _hidden_columns(window.entities.table, ("Text", "Label")) == []
    # The search fields say what they search in words that fit, the whole in a tooltip.
    for edit, full in ((window.documents.search, "Search PMID, title or text"),
                       (window.entities.search, "Filter entities")):
        text = edit.placeholderText()
        assert edit.fontMetrics().horizontalAdvance(text) <= edit.width() - 16 - edit.height(), text
        assert full.startswith(text.split(" ")[0]) and edit.toolTip() == full


def _shipped_card() -> dict:
    return json.loads((REPO / "assets" / "default-model" / "fastbioner.json").read_text(encoding="utf-8"))


def test_distil_stays_on_the_toolbar_at_1024_and_the_picker_drops_whole_parts(window, qtbot):
    from fastbioner_gui.widgets.model_picker import FoundModel

    card = _shipped_card()
    name = card.get("name") or "bc5cdr-minilm-pkd-v4"
    window.picker.set_entries([FoundModel(name, card), FoundModel("a-second-model-with-a-long-name", {})], name)
    _settle(window, qtbot, 1024, 700)
    toolbar = window.findChild(QToolBar, "main-toolbar")
    button = toolbar.widgetForAction(window.commands["model.distill"])
    assert button is not None and button.isVisible()
    assert button.geometry().right() <= toolbar.width()
    extension = [b for b in toolbar.findChildren(QToolButton) if b.objectName() == "qt_toolbar_ext_button"]
    assert not any(b.isVisible() for b in extension)
    # Wider: the picker grows to show the chosen model's figures whole.
    _settle(window, qtbot, 1600, 1000)
    picker = window.picker
    assert picker.width() >= picker.fontMetrics().horizontalAdvance(picker.currentText())


def test_the_picker_shortens_its_text_by_whole_parts():
    from fastbioner_gui.widgets.model_picker import fitted_picker_text

    text = "bc5cdr-minilm — accurate · devel F1 86.5 (its twin's) · speed 2.9×"
    assert fitted_picker_text(text, lambda t: True) == text
    assert fitted_picker_text(text, lambda t: len(t) <= 55) == "bc5cdr-minilm — accurate · devel F1 86.5 (its twin's) …"
    assert fitted_picker_text(text, lambda t: len(t) <= 30) == "bc5cdr-minilm — accurate …"
    assert fitted_picker_text(text, lambda t: len(t) <= 16) == "bc5cdr-minilm …"
    assert fitted_picker_text(text, lambda t: len(t) <= 5) == ""  # the caller elides the name itself


def test_the_export_dialog_is_laid_out_again_after_a_bio_save_and_a_format_change(window, qtbot, tmp_path):
    from fastbioner_gui.dialogs.export_dialog import ALL, ExportDialog

    # "5-HT" inside "5-HT6": off the token boundaries, so BIO cannot hold it.
    doc = Document("1", "5-HT6 receptors and serotonin.", spans=[Span(0, 4, "Chemical"), Span(20, 29, "Chemical")])
    window.workspace.add_documents([doc], origin="test")
    dialog = ExportDialog(window.workspace, [], window.settings, window, window.jobs)
    qtbot.addWidget(dialog)
    dialog.which_buttons[ALL].setChecked(True)
    dialog.show()
    before = dialog.height()
    dialog.path.setText(str(tmp_path / "out.conll"))
    job = dialog.export()
    qtbot.waitUntil(lambda: job.ended and dialog.dropped.isVisible(), timeout=30000)
    layout = dialog.layout()
    # Every row at least at its wanted height: the format box and check boxes are not squeezed.
    assert dialog.height() >= layout.totalHeightForWidth(dialog.width()) > before
    for widget in (dialog.format, dialog.per_document, *dialog.sources.values()):
        assert widget.height() >= widget.sizeHint().height(), widget
    dialog.format.setCurrentText("JSONL (lossless)")
    assert not dialog.dropped.isVisible()
    assert dialog.height() == before  # the list's room gone with it


def test_relation_names_are_shown_whole(window, qtbot):
    relations = window.features["relations"]
    doc = Document("1", "Indomethacin induced hypotension in a patient with heart failure.",
                   spans=[Span(0, 12, "Chemical", concept_id="D007213"), Span(21, 32, "Disease", concept_id="D007022")])
    doc.relations = [("CID", "D007213", "D007022")]
    window.workspace.add_documents([doc], origin="test")
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    qtbot.waitUntil(window.features["concept_lookup"].lookup.up_to_date, timeout=30000)  # built in the background
    relations.focus_panel()
    relations.dock.setFloating(True)  # a narrow panel: the names are not cut, the list scrolls
    relations.dock.resize(320, 200)
    tree = relations.panel.tree
    qtbot.waitUntil(lambda: tree.topLevelItemCount() == 1, timeout=10000)
    item, header = tree.topLevelItem(0), tree.header()
    for column in range(tree.columnCount()):
        assert header.sectionSize(column) >= tree.fontMetrics().horizontalAdvance(item.text(column)), item.text(column)
    qtbot.waitUntil(lambda: tree.horizontalScrollBar().maximum() > 0, timeout=10000)
