"""Reading: the view shows title and sections with entities highlighted, the legend
and tooltips explain them, the entity table and the view follow each other, and the
documents panel filters."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QHelpEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QApplication, QToolTip

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.project import DocStatus
from fastbioner_gui.models.palette import label_color

from gui_documents import make_document


def _format_at(view, offset: int) -> QTextCharFormat:
    cursor = QTextCursor(view.document())
    cursor.setPosition(view._map.to_view(offset) + 1)  # the format of the char before the cursor
    return cursor.charFormat()


def _point_of(view, offset: int) -> QPoint:
    cursor = QTextCursor(view.document())
    cursor.setPosition(view._map.to_view(offset) + 1)
    return view.cursorRect(cursor).center()


def test_view_shows_title_sections_and_maps_offsets_both_ways(loaded):
    view, doc = loaded.view, loaded.workspace.document(0)
    shown = view.toPlainText()
    assert shown.startswith(doc.title) and "BACKGROUND: A newborn" in shown
    start = doc.text.index("heart failure")
    view.select_offsets(start, start + 13)
    assert view.textCursor().selectedText() == "heart failure"
    assert view.selection_offsets() == (start, start + 13)
    # A selection across the section label maps to the document text around it.
    view.select_offsets(18, doc.text.index("newborn with") + 7)
    assert doc.text[slice(*view.selection_offsets())] == "toxicity in a newborn infant. A newborn"


def test_offsets_stay_exact_after_characters_outside_the_basic_plane(window, qtbot):
    doc = Document.from_parts("7", "𝛼-Synuclein and 𝛽 in Parkinson disease.", [(None, "Levodopa 𝛾 helps.")])
    start = doc.text.index("Parkinson disease")
    doc.spans = [Span(start, start + 17, "Disease"), Span(doc.text.index("Levodopa"), doc.text.index("Levodopa") + 8,
                                                          "Chemical")]
    window.workspace.add_documents([doc])
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    for span in doc.spans:
        window.view.select_offsets(span.start, span.end)
        assert window.view.textCursor().selectedText() == doc.span_text(span)
        assert window.view.selection_offsets() == (span.start, span.end)
        assert _format_at(window.view, span.start).background().color().rgb() == label_color(span.label).rgb()


def test_highlighting_tells_labels_sources_confidence_and_overlap(loaded):
    view, doc = loaded.view, loaded.workspace.document(0)
    gold_chem = _format_at(view, 3)
    assert gold_chem.background().color().rgb() == label_color("Chemical").rgb()
    assert not gold_chem.fontItalic()
    heart = _format_at(view, doc.text.index("heart"))
    assert heart.background().color().rgb() == label_color("Disease").rgb() and heart.fontItalic()
    doubtful = _format_at(view, doc.text.index("lithium level"))
    assert doubtful.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline
    plain = _format_at(view, doc.text.index("newborn infant"))
    assert plain.background().style() == Qt.BrushStyle.NoBrush
    # Overlapping spans are shown (bold) where two spans cover the same text.
    loaded.curation.add(0, 26, "Disease", exact=True)
    assert _format_at(view, 3).fontWeight() > 500 and _format_at(view, 20).fontWeight() <= 500 + 200


def test_legend_lists_labels_with_their_keys(loaded):
    texts = [chip.text() for chip in loaded.legend.chips]
    assert texts[0].endswith("Disease") and "1" in texts[0]
    assert texts[1].endswith("Chemical") and "2" in texts[1]


def test_tooltip_gives_label_source_score_and_concept(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    pos = _point_of(view, doc.text.index("lithium level"))
    QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.Type.ToolTip, pos, view.viewport().mapToGlobal(pos)))
    assert "Chemical · model · score 0.30 · low confidence" in QToolTip.text()
    assert "D016651" in view.describe(doc.spans[0])


def test_click_in_view_selects_table_row_and_table_selects_in_view(loaded, qtbot):
    view, table, doc = loaded.view, loaded.entities, loaded.workspace.document(0)
    heart = doc.spans[2]
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_point_of(view, heart.start + 2))
    assert view.selected_span == heart
    assert table.selected_spans() == [heart]
    # And back: choosing a row in the table outlines that span in the view.
    table.table.selectRow(table.proxy.mapFromSource(table.model.index(table.model.row_of(doc.spans[0]), 0)).row())
    assert view.selected_span == doc.spans[0]
    selections = view.extraSelections()
    cursor = selections[0].cursor
    assert (cursor.selectionStart(), cursor.selectionEnd()) == (view._map.to_view(0), view._map.to_view(17))


def test_entity_table_filters_by_text_and_source(loaded):
    panel = loaded.entities
    assert panel.proxy.rowCount() == 4
    panel.search.setText("lith")
    assert panel.proxy.rowCount() == 2
    panel.search.clear()
    panel.sources.setCurrentIndex(1)  # model suggestions
    assert {panel.model.span(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row()).source
            for r in range(panel.proxy.rowCount())} == {Source.MODEL}


def test_documents_panel_counts_filters_and_switches(loaded, qtbot):
    panel = loaded.documents
    model = panel.model
    disease_col = 2 + loaded.workspace.labels().index("Disease")
    assert model.index(0, disease_col).data() == "2"
    panel.search.setText("seizures")
    assert panel.proxy.rowCount() == 1
    panel.search.clear()
    panel.status.setCurrentIndex(panel.status.findData(DocStatus.TAGGED))
    assert panel.proxy.rowCount() == 1  # only the document with model spans
    panel.status.setCurrentIndex(0)
    panel.set_current_row(1)
    assert loaded.row == 1 and loaded.view.toPlainText().startswith("Cocaine")
    assert loaded.entities.model.rowCount() == 2


def test_a_new_label_from_a_file_gets_a_colour_and_a_key(window, qtbot):
    doc = make_document()
    doc.spans.append(Span(doc.text.index("serum"), doc.text.index("serum") + 5, "Species"))
    window.workspace.add_documents([doc])
    assert window.workspace.labels()[:3] == ["Disease", "Chemical", "Species"]
    assert window.legend.chips[2].text().endswith("Species")
    assert window.view.labels[2] == "Species"


def test_a_dark_palette_keeps_the_legend_and_the_entities_readable(qtbot):
    from PySide6.QtGui import QColor, QPalette

    from fastbioner_gui.main_window import MainWindow
    from fastbioner_gui.models.palette import blend, contrast_ratio
    from gui_documents import make_documents

    app = QApplication.instance()
    original = app.palette()
    dark = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, "#202124"), (QPalette.ColorRole.WindowText, "#e8eaed"),
                         (QPalette.ColorRole.Base, "#171717"), (QPalette.ColorRole.Text, "#e8eaed")):
        dark.setColor(role, QColor(colour))
    app.setPalette(dark)
    window = MainWindow()
    window.show()
    try:
        window.workspace.add_documents(make_documents())
        qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
        legend, background = window.legend, QColor("#202124")
        for name, colour in legend.key_colors.items():
            assert contrast_ratio(colour, background) >= 4.5, name
        for chip, label in zip(legend.chips, ("Disease", "Chemical")):
            assert "color:#000000" in chip.styleSheet()
            assert contrast_ratio(QColor("black"), label_color(label)) >= 4.5
        view, doc = window.view, window.workspace.document(0)
        for offset in (3, doc.text.index("heart failure")):  # a gold span and a pale suggestion
            fmt = _format_at(view, offset)
            shown = blend(fmt.background().color(), QColor("#171717"))
            assert contrast_ratio(fmt.foreground().color(), shown) >= 4.5
    finally:
        app.setPalette(original)
        window.projects.mark_clean()
        window.close()


def test_the_documents_search_marks_its_hits_in_the_text(loaded, qtbot):
    view, doc = loaded.view, loaded.workspace.document(0)
    loaded.documents.search.setText("NEWBORN")
    hits = [(s, e) for s, e in view.highlight_offsets()]
    assert [doc.text[s:e] for s, e in hits] == ["newborn", "newborn"]
    marked = [(sel.cursor.selectionStart(), sel.cursor.selectionEnd()) for sel in view.extraSelections()]
    assert all((view._map.to_view(s), view._map.to_view(e)) in marked for s, e in hits)
    loaded.documents.search.clear()
    assert view.extraSelections() == [] or all(
        sel.format.background().color().name() != "#ffe600" for sel in view.extraSelections())


def test_the_entity_table_gives_its_width_to_the_entity_text(qtbot):
    from fastbioner_gui.models.entity_table import SCORE, START, STATE, TEXT
    from fastbioner_gui.models.workspace import Workspace
    from fastbioner_gui.widgets.entity_panel import EntityPanel

    workspace = Workspace()
    workspace.add_documents([make_document()])
    panel = EntityPanel(workspace)
    qtbot.addWidget(panel)
    panel.show_document(0)
    panel.resize(panel.minimumWidth(), 300)
    panel.show()
    qtbot.waitUntil(panel.isVisible, timeout=30000)
    header, metrics = panel.table.horizontalHeader(), panel.table.fontMetrics()
    assert header.sectionSize(TEXT) >= metrics.horizontalAdvance("Tricuspid valve")
    assert header.sectionSize(TEXT) > max(header.sectionSize(STATE), header.sectionSize(SCORE))
    assert panel.table.isColumnHidden(START)  # offsets on request (header menu), not by default
