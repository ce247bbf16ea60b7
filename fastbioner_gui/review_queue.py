"""Curate > Review queue: the model's suggestions one at a time, to accept, reject or
relabel from the keyboard (Prodigy's binary stream), the ones the model is least
sure of first (issue 47).

Order: documents by how unsure the model was of them (fastbioner.infer.uncertainty's
figure, the documents panel's Unsure column), most unsure first, documents not yet
tagged with the figure last; within a document, the least confident suggestion
first. Reviewed documents are left out (their curator has finished them).

Each decision goes through the window's curation controller on the document it
belongs to (the reading view follows), so it is one undo step like any other;
Backspace (or Ctrl+Z) undoes the last one and the queue goes back to it. S skips
a suggestion for this session of the queue."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QFrame, QGridLayout, QLabel, QPushButton, QScrollArea, QSizePolicy, QVBoxLayout,
                               QWidget)

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.project import DocStatus
from fastbioner.infer.uncertainty import stored_uncertainty

from .models.palette import MUTED_STYLE, label_color, muted_color

if TYPE_CHECKING:  # pragma: no cover
    from .window_api import WindowServices

OPEN_KEY = "Ctrl+Shift+R"
WIDE = 1400  # window width from which the queue opens as a column of its own
CONTEXT_CHARS = 220  # text shown on each side of a suggestion, at most (cut at a sentence)


def _key(row: int, span: Span) -> tuple:
    return (row, span.start, span.end, span.label)


def queue_order(workspace) -> list[tuple[int, Span]]:
    """Every undecided suggestion of the documents not reviewed, most unsure
    document first, least confident suggestion first within it."""
    items = []
    for row in range(len(workspace)):
        entry = workspace.entry(row)
        if entry.status is DocStatus.REVIEWED:
            continue
        doc = entry.document
        figure = stored_uncertainty(doc.metadata)
        doc_key = (0, -figure) if figure is not None else (1, 0.0)
        for span in doc.spans:
            if span.source is Source.MODEL:
                score = span.score if span.score is not None else 1.0
                items.append(((doc_key, row, score, span.start, span.end, span.label), row, span))
    items.sort(key=lambda item: item[0])
    return [(row, span) for _, row, span in items]


def context_html(doc: Document, span: Span) -> str:
    """The sentence around ``span`` with the suggestion marked in its label's colour."""
    text = doc.text
    start = max(0, span.start - CONTEXT_CHARS)
    cut_start = text.rfind(". ", start, span.start)
    start = cut_start + 2 if cut_start >= 0 else start
    end = min(len(text), span.end + CONTEXT_CHARS)
    cut = text.find(". ", span.end, end)
    end = cut + 1 if cut >= 0 else end
    colour = label_color(span.label).name()
    sentence_start, sentence_end = start == 0 or cut_start >= 0, end == len(text) or cut >= 0
    before = ("" if sentence_start else "…") + html.escape(text[start:span.start])
    after = html.escape(text[span.end:end]) + ("" if sentence_end else "…")
    mark = f"<span style='background:{colour}; font-weight:bold'>{html.escape(text[span.start:span.end])}</span>"
    return f"<p style='font-size:13pt; line-height:140%'>{before}{mark}{after}</p>"


class ReviewQueue(QWidget):
    def __init__(self, services: WindowServices):
        super().__init__(services.host)
        self.services = services
        self.skipped: set[tuple] = set()
        self.current: tuple[int, Span] | None = None
        self.remaining = 0
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.progress = QLabel()
        self.progress.setStyleSheet(MUTED_STYLE)
        self.where = QLabel()
        self.where.setWordWrap(True)
        self.context = QLabel()
        self.context.setWordWrap(True)
        self.context.setTextFormat(Qt.TextFormat.RichText)
        self.context.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.context.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.question = QLabel()
        self.question.setWordWrap(True)
        self.question.setTextFormat(Qt.TextFormat.RichText)
        self.keys_help = QLabel()
        self.keys_help.setWordWrap(True)
        self.keys_help.setStyleSheet(MUTED_STYLE)
        self.accept_action = self._action("Accept", self.accept_current, ["A", "Return", "Enter"])
        self.reject_action = self._action("Reject", self.reject_current, ["X"])
        self.skip_action = self._action("Skip", self.skip_current, ["S", "Right"])
        self.undo_action = self._action("Undo", self.undo_last, ["Backspace"])
        self.label_actions = [self._action(f"Label {i + 1}", lambda _=False, i=i: self.relabel_current(i),
                                           [str(i + 1)]) for i in range(9)]
        buttons = QGridLayout()  # two by two: the dock stays narrow beside the reading view
        for i, (action, key) in enumerate(((self.accept_action, "A"), (self.reject_action, "X"),
                                           (self.skip_action, "S"), (self.undo_action, "Backspace"))):
            button = QPushButton(f"{action.text()} ({key})")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys keep working after a click
            button.clicked.connect(action.trigger)
            buttons.addWidget(button, i // 2, i % 2)
        self.buttons = buttons
        layout = QVBoxLayout(self)
        layout.addWidget(self.progress)
        layout.addWidget(self.where)
        layout.addWidget(self.context)
        layout.addWidget(self.question)
        layout.addLayout(buttons)
        layout.addWidget(self.keys_help)
        layout.addStretch(1)
        services.workspace.documentsChanged.connect(lambda *_: self.refresh() if self.isVisible() else None)
        services.workspace.projectReset.connect(self._reset)

    def _action(self, text: str, slot: Callable, keys: list[str]) -> QAction:
        action = QAction(text, self)
        action.setShortcuts([QKeySequence(k) for k in keys])
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh()

    def _reset(self) -> None:
        self.skipped.clear()
        self.current = None
        self.refresh()

    # The queue ----------------------------------------------------------------------
    def items(self) -> list[tuple[int, Span]]:
        return [(row, span) for row, span in queue_order(self.services.workspace)
                if _key(row, span) not in self.skipped]

    def refresh(self) -> None:
        items = self.items()
        # Skipping decides nothing: a skipped suggestion still counts as undecided.
        self.remaining = len(queue_order(self.services.workspace))
        self.current = items[0] if items else None
        self._render()

    def _render(self) -> None:
        w = self.services
        labels = w.workspace.labels()
        self.keys_help.setText("A or Return accept · X reject · " + " · ".join(
            f"{i + 1} {label}" for i, label in enumerate(labels[:9])) + " · S skip · Backspace undo")
        if self.current is None:
            self.progress.setText(f"{self.remaining} skipped suggestion{'s' if self.remaining != 1 else ''} "
                                  "left undecided" if self.remaining else "No undecided suggestion left")
            self.where.clear()
            self.context.setText("<p>Every suggestion of the documents not yet reviewed is decided. "
                                 "Mark documents reviewed (Ctrl+M), then Model › Improve the model from my "
                                 "reviews.</p>")
            self.question.clear()
            return
        row, span = self.current
        doc = w.workspace.document(row)
        figure = stored_uncertainty(doc.metadata)
        unsure = f"the model expects about {figure:.1f} wrongly tagged words in it" if figure is not None else ""
        skipped = self.remaining - len(self.items())
        muted = muted_color(self.palette())
        self.progress.setText(f"{self.remaining} undecided suggestion{'s' if self.remaining != 1 else ''} left"
                              + (f" ({skipped} skipped)" if skipped else "") + ", least sure first")
        self.where.setText(f"<b>{html.escape(doc.id)}</b> {html.escape(doc.title or '')}"
                           f"<br><span style='color:{muted}'>{html.escape(unsure)}</span>")
        self.context.setText(context_html(doc, span))
        score = f"{span.score:.2f}" if span.score is not None else "?"
        self.question.setText(f"Is <b>{html.escape(doc.span_text(span))}</b> a <b>{html.escape(span.label)}</b>? "
                              f"<span style='color:{muted}'>(model's confidence {score})</span>")

    def show_in_window(self) -> bool:
        """The reading view shows the current suggestion, selected; True when it does
        (the documents panel's search or filter may hide its document: they are
        cleared then)."""
        if self.current is None:
            return False
        w = self.services
        row, span = self.current
        if w.row != row:
            w.documents.set_current_row(row)
        if w.row != row:  # hidden by the panel's search or status filter
            w.documents.search.clear()
            w.documents.status.setCurrentIndex(0)
            w.documents.set_current_row(row)
        if w.row != row:
            return False
        w.keys.select(span)
        return True

    # Decisions ------------------------------------------------------------------------
    def _decide(self, act: Callable[[Span], None]) -> None:
        if self.current is None or not self.show_in_window():
            return
        _row, span = self.current
        act(span)
        self.refresh()
        self.show_in_window()
        self.setFocus()

    def accept_current(self) -> None:
        self._decide(lambda span: self.services.curation.accept([span]))

    def reject_current(self) -> None:
        self._decide(lambda span: self.services.curation.reject([span]))

    def relabel_current(self, index: int) -> None:
        """Relabelling a suggestion accepts it under the new label."""
        labels = self.services.workspace.labels()
        if index >= len(labels):
            return
        self._decide(lambda span: self.services.curation.relabel_many([span], labels[index]))

    def skip_current(self) -> None:
        if self.current is not None:
            self.skipped.add(_key(*self.current))
            self.refresh()
            self.show_in_window()

    def undo_last(self) -> None:
        """Undo the last step (the queue's or any other) and come back to what it
        changed: an undone decision is undecided again, so it is first in the queue."""
        self.services.undo()
        self.refresh()
        self.show_in_window()
        self.setFocus()

    def start(self) -> None:
        self.refresh()
        self.show_in_window()
        self.setFocus()


class ReviewQueueHookup:
    def __init__(self, services: WindowServices):
        self.services = services
        self.queue = ReviewQueue(services)
        # A long sentence in a short dock (a 1024x700 window, a bottom dock open) scrolls
        # instead of being cut off below; the width follows the dock, the text wraps.
        scroll = QScrollArea()
        scroll.setWidget(self.queue)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the queue keeps the focus, and its keys
        self.dock = services.add_dock("review-queue", "Review queue", scroll, Qt.DockWidgetArea.RightDockWidgetArea)
        self.action = services.add_action("curate.review_queue", "Review queue: suggestions one by one, least sure "
                                          "first", self.open, OPEN_KEY, menu="curate", section=True)

    def open(self) -> None:
        host = self.services.host
        if not self.dock.isVisible() and not self.dock.isFloating():
            if host.width() < WIDE:  # a narrow window: in the documents panel's place (a tab), not a fourth column
                host.tabifyDockWidget(self.services.dock("documents"), self.dock)
            else:  # beside the entity table; the reading view keeps the most room
                host.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
                host.resizeDocks([self.dock], [min(380, host.width() // 4)], Qt.Orientation.Horizontal)
        self.dock.show()
        self.dock.raise_()
        self.queue.start()


def install(services: WindowServices) -> ReviewQueueHookup:
    return ReviewQueueHookup(services)
