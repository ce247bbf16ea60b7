"""The reading view: a document's title and sections with its entities highlighted,
and the mouse gestures of curation (click an entity, context menu; the keys are the
actions of :mod:`fastbioner_gui.keyboard`). It only reports gestures as signals with
document offsets; what they do is decided by the curation controller and the core's
curation rules.

How spans look: the label's colour as background; a model suggestion is pale and
italic, a low-confidence one has a red wavy underline; text covered by two or more
spans is bold and underlined in the colour of the outer span.
"""

from __future__ import annotations

import bisect
from typing import Sequence

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import (QAction, QColor, QContextMenuEvent, QFont, QMouseEvent, QTextBlockFormat,
                           QTextCharFormat, QTextCursor, QTextDocument, QTextFormat)
from PySide6.QtWidgets import QMenu, QTextEdit, QToolTip, QWidget

from fastbioner.curate.curation import LOW_CONFIDENCE, is_low_confidence, spans_at
from fastbioner.io.documents import Document, Source, Span

from ..models.palette import blend, label_color, readable, strong_color, text_on


def _utf16_len(s: str) -> int:
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


class OffsetMap:
    """Document offsets (code points) <-> positions in the view (UTF-16 units, with
    section labels and paragraph breaks that are not part of the document)."""

    def __init__(self, length: int):
        self.view_of = [0] * (length + 1)

    def to_view(self, offset: int) -> int:
        return self.view_of[max(0, min(offset, len(self.view_of) - 1))]

    def to_document(self, position: int) -> int:
        """The document offset shown at view ``position`` (or the next one shown)."""
        return min(bisect.bisect_left(self.view_of, position), len(self.view_of) - 1)


class DocumentView(QTextEdit):
    spanClicked = Signal(object)                    # Span or None
    addRequested = Signal(int, int, str, bool)      # start, end, label, exact selection
    relabelRequested = Signal(object, str)          # Span, new label
    deleteRequested = Signal(object)                # list[Span]
    acceptRequested = Signal(object)                # list[Span], or None for all
    rejectRequested = Signal(object)                # list[Span], or None for all

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setMouseTracking(True)
        self.viewport().installEventFilter(self)
        self.document_: Document | None = None
        self.labels: list[str] = []
        self.low_confidence = LOW_CONFIDENCE
        self.selected_span: Span | None = None
        self.highlight = ""  # the documents search: its hits are marked in the text
        self._map = OffsetMap(0)
        self._press = QPoint()
        font = self.font()
        font.setPointSizeF(max(font.pointSizeF(), 11.0))
        self.setFont(font)
        self.setPlaceholderText("Open PubMed abstracts (File > Open) or drop files here.")

    # Showing -----------------------------------------------------------------
    def set_labels(self, labels: Sequence[str]) -> None:
        self.labels = list(labels)

    def show_document(self, doc: Document | None) -> None:
        keep = self.selected_span if doc is self.document_ else None
        scroll = self.verticalScrollBar().value() if doc is self.document_ else 0
        self.document_ = doc
        self.selected_span = keep if doc is not None and keep in doc.spans else None
        self._render()
        self.verticalScrollBar().setValue(scroll)
        self._mark_selected()

    def select_span(self, span: Span | None) -> None:
        """Outline ``span`` (from the entity table) and scroll it into view."""
        self.selected_span = span
        self._mark_selected()
        if span is not None:
            cursor = self.textCursor()
            cursor.setPosition(self._map.to_view(span.start))
            self.setTextCursor(cursor)
            self.ensureCursorVisible()

    def selection_offsets(self) -> tuple[int, int] | None:
        """The selected text as document offsets, or None when nothing is selected."""
        cursor = self.textCursor()
        if not cursor.hasSelection() or self.document_ is None:
            return None
        start = self._map.to_document(cursor.selectionStart())
        end = self._map.to_document(cursor.selectionEnd())
        return (start, end) if end > start else None

    def select_offsets(self, start: int, end: int) -> None:
        """Select document text ``start..end`` as a user's drag would."""
        cursor = self.textCursor()
        cursor.setPosition(self._map.to_view(start))
        cursor.setPosition(self._map.to_view(end), QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)

    def offset_at(self, pos: QPoint) -> int | None:
        if self.document_ is None:
            return None
        return self._map.to_document(self.cursorForPosition(pos).position())

    def _render(self) -> None:
        qdoc = QTextDocument(self)
        qdoc.setDefaultFont(self.font())
        doc = self.document_
        if doc is None:
            self.setDocument(qdoc)
            self._map = OffsetMap(0)
            return
        self._map = OffsetMap(len(doc.text))
        cursor = QTextCursor(qdoc)
        passages = doc.passages or []
        spans = doc.spans
        bounds = sorted({0, len(doc.text), *(s.start for s in spans), *(s.end for s in spans)})
        shown_upto = 0
        for i, passage in enumerate(passages):
            if i:
                block = QTextBlockFormat()
                block.setTopMargin(8 if passage.kind != "title" else 0)
                cursor.insertBlock(block)
            if passage.label:
                cursor.insertText(f"{passage.label}: ", self._section_format())
            base = self._title_format() if passage.kind == "title" else QTextCharFormat()
            # Characters between passages (the joining space) are not shown: they map
            # to where the next passage starts.
            start_view = cursor.position()
            for k in range(shown_upto + 1 if i else 0, passage.start + 1):
                self._map.view_of[k] = start_view
            self._insert_passage(cursor, doc, passage.start, passage.end, base, spans, bounds)
            shown_upto = passage.end
        end_view = cursor.position()
        for k in range(shown_upto + 1 if passages else 0, len(doc.text) + 1):
            self._map.view_of[k] = end_view
        self.setDocument(qdoc)

    def _insert_passage(self, cursor: QTextCursor, doc: Document, start: int, end: int,
                        base: QTextCharFormat, spans: Sequence[Span], bounds: list[int]) -> None:
        cuts = [start] + [b for b in bounds if start < b < end] + [end]
        for a, b in zip(cuts, cuts[1:]):
            piece = doc.text[a:b]
            pos = cursor.position()
            if len(piece) == _utf16_len(piece):
                self._map.view_of[a:b + 1] = range(pos, pos + (b - a) + 1)
            else:
                for k, ch in enumerate(piece):
                    self._map.view_of[a + k] = pos
                    pos += _utf16_len(ch)
                self._map.view_of[b] = pos
            covering = [s for s in spans if s.start <= a and b <= s.end]
            cursor.insertText(piece, self._span_format(base, covering))

    def _span_format(self, base: QTextCharFormat, covering: list[Span]) -> QTextCharFormat:
        fmt = QTextCharFormat(base)
        if not covering:
            return fmt
        inner = min(covering, key=lambda s: (s.end - s.start, s.label))
        fill = QColor(label_color(inner.label))
        if inner.source is Source.MODEL:
            fill.setAlpha(130)
            fmt.setFontItalic(True)
        fmt.setBackground(fill)
        # Text on a label's fill is dark or light by the fill as shown, never the
        # palette's text colour (white on a pale fill under a dark desktop theme).
        fmt.setForeground(text_on(blend(fill, self.palette().color(self.palette().ColorRole.Base))))
        if len(covering) > 1:
            outer = max(covering, key=lambda s: (s.end - s.start, s.label))
            fmt.setFontWeight(QFont.Weight.Bold)
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.SingleUnderline)
            fmt.setUnderlineColor(strong_color(outer.label))
        if any(is_low_confidence(s, self.low_confidence) for s in covering):
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setUnderlineColor(QColor("#d01010"))
        return fmt

    def _title_format(self) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setFontWeight(QFont.Weight.Bold)
        fmt.setFontPointSize(self.font().pointSizeF() * 1.2)
        return fmt

    def _section_format(self) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setFontWeight(QFont.Weight.DemiBold)
        fmt.setFontCapitalization(QFont.Capitalization.SmallCaps)
        base = self.palette().color(self.palette().ColorRole.Base)
        fmt.setForeground(readable(QColor("#555555"), base))
        return fmt

    def set_highlight(self, text: str) -> None:
        """Mark every occurrence of ``text`` (case-insensitive) in the document."""
        self.highlight = text.strip()
        self._mark_selected()

    def highlight_offsets(self) -> list[tuple[int, int]]:
        """Document offsets of the search hits shown."""
        if not self.highlight or self.document_ is None:
            return []
        text, needle = self.document_.text.casefold(), self.highlight.casefold()
        hits, at = [], text.find(needle)
        while at >= 0 and len(hits) < 1000:
            hits.append((at, at + len(needle)))
            at = text.find(needle, at + len(needle))
        return hits

    def _mark_selected(self) -> None:
        marks = []
        for start, end in self.highlight_offsets():
            hit = QTextEdit.ExtraSelection()
            cursor = QTextCursor(self.document())
            cursor.setPosition(self._map.to_view(start))
            cursor.setPosition(self._map.to_view(end), QTextCursor.MoveMode.KeepAnchor)
            hit.cursor = cursor
            hit.format.setBackground(QColor("#ffe600"))
            hit.format.setForeground(QColor("black"))
            hit.format.setFontUnderline(True)
            marks.append(hit)
        span = self.selected_span
        if span is None or self.document_ is None:
            self.setExtraSelections(marks)
            return
        sel = QTextEdit.ExtraSelection()
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._map.to_view(span.start))
        cursor.setPosition(self._map.to_view(span.end), QTextCursor.MoveMode.KeepAnchor)
        sel.cursor = cursor
        sel.format.setBackground(strong_color(span.label))
        sel.format.setForeground(QColor("white"))
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, False)
        self.setExtraSelections(marks + [sel])

    # Gestures ----------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._press = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        if event.button() != Qt.MouseButton.LeftButton or self.textCursor().hasSelection():
            return
        if (event.position().toPoint() - self._press).manhattanLength() > 3:
            return
        offset = self.offset_at(event.position().toPoint())
        hits = spans_at(self.document_.spans, offset) if offset is not None else []
        self.selected_span = hits[0] if hits else None
        self._mark_selected()
        self.spanClicked.emit(self.selected_span)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.viewport() and event.type() == QEvent.Type.ToolTip:
            offset = self.offset_at(event.pos())
            hits = spans_at(self.document_.spans, offset) if offset is not None else []
            if hits:
                QToolTip.showText(event.globalPos(), "\n".join(self.describe(s) for s in hits), self)
            else:
                QToolTip.hideText()
            return True
        return super().eventFilter(watched, event)

    def describe(self, span: Span) -> str:
        parts = [span.label, span.source.value]
        if span.score is not None:
            parts.append(f"score {span.score:.2f}")
        if is_low_confidence(span, self.low_confidence):
            parts.append("low confidence")
        if span.concept_id:
            parts.append(span.concept_id)
        return f"{self.document_.span_text(span)!r}: " + " · ".join(parts)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        self.build_context_menu(event.pos()).exec(event.globalPos())

    def build_context_menu(self, pos: QPoint) -> QMenu:
        menu = QMenu(self)
        selection = self.selection_offsets()
        if selection is not None and self.labels:
            for title, exact in (("Add entity as", False), ("Add exact selection as", True)):
                sub = menu.addMenu(title)
                for i, label in enumerate(self.labels):
                    act = sub.addAction(self._label_text(i, label))
                    act.triggered.connect(lambda _=False, l=label, x=exact: self.addRequested.emit(
                        selection[0], selection[1], l, x))
        offset = self.offset_at(pos)
        hits = spans_at(self.document_.spans, offset) if offset is not None else []
        for span in hits:
            menu.addSection(self.describe(span))
            relabel = menu.addMenu("Relabel as")
            for i, label in enumerate(self.labels):
                act = relabel.addAction(self._label_text(i, label))
                act.setEnabled(label != span.label)
                act.triggered.connect(lambda _=False, s=span, l=label: self.relabelRequested.emit(s, l))
            if span.source is Source.MODEL:
                menu.addAction("Accept suggestion").triggered.connect(
                    lambda _=False, s=span: self.acceptRequested.emit([s]))
                menu.addAction("Reject suggestion").triggered.connect(
                    lambda _=False, s=span: self.rejectRequested.emit([s]))
            menu.addAction("Delete").triggered.connect(lambda _=False, s=span: self.deleteRequested.emit([s]))
        if self.document_ is not None and any(s.source is Source.MODEL for s in self.document_.spans):
            menu.addSeparator()
            menu.addAction("Accept all suggestions").triggered.connect(lambda: self.acceptRequested.emit(None))
            menu.addAction("Reject all suggestions").triggered.connect(lambda: self.rejectRequested.emit(None))
        menu.addSeparator()
        copy = QAction("Copy", menu)
        copy.setEnabled(selection is not None)
        copy.triggered.connect(self.copy)
        menu.addAction(copy)
        return menu

    @staticmethod
    def _label_text(i: int, label: str) -> str:
        return f"&{i + 1} {label}" if i < 9 else label
