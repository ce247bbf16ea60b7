"""Keys that go where the model needs the curator (issue 47): the next undecided
suggestion (U) and the next low-confidence suggestion (L, below the threshold of
Preferences), in this document after the entity the curator is on, then in the
following documents in the order the documents panel shows them (sorted by how
unsure the model was, that is the review queue's order), going round. And Curate >
Sort documents by uncertainty, which sorts the panel so, most unsure first.

N and P walk every entity, gold ones included; these skip what is decided. Like the
other curation keys they work in the reading view and the entity table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence

from fastbioner.io.documents import Source, Span

if TYPE_CHECKING:  # pragma: no cover
    from .main_window import MainWindow

NEXT_UNDECIDED_KEY = "U"
NEXT_LOW_CONFIDENCE_KEY = "L"
SORT_KEY = "Ctrl+Shift+U"


def undecided(span: Span) -> bool:
    return span.source is Source.MODEL


def low_confidence(threshold: float) -> Callable[[Span], bool]:
    def test(span: Span) -> bool:
        return span.source is Source.MODEL and span.score is not None and span.score < threshold
    return test


class SuggestionNavigation(QObject):
    def __init__(self, window: "MainWindow"):
        super().__init__(window)
        self.window = window
        self.next_undecided = self._action("Next undecided suggestion", lambda: self.go(undecided, "undecided"),
                                           NEXT_UNDECIDED_KEY, widget_only=True)
        self.next_low_confidence = self._action(
            "Next low-confidence suggestion",
            lambda: self.go(low_confidence(self.window.settings.low_confidence), "low-confidence"),
            NEXT_LOW_CONFIDENCE_KEY, widget_only=True)
        self.sort_action = self._action("Sort documents by uncertainty", self.sort_documents, SORT_KEY,
                                        widget_only=False)
        self.sort_action.setStatusTip("Most unsure first: the documents the model needs you for most")
        _add_to_menu(window, "Curate", [self.next_undecided, self.next_low_confidence, self.sort_action])

    def _action(self, text: str, slot, key: str, widget_only: bool) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(key))
        action.triggered.connect(slot)
        if widget_only:  # as N and P: only where curation happens
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            for widget in (self.window.view, self.window.entities.table):
                widget.addAction(action)
        else:
            self.window.addAction(action)
        return action

    def sort_documents(self) -> None:
        panel = self.window.documents
        self.window.documents_dock.show()
        panel.table.sortByColumn(panel.model.uncertainty_column(), Qt.SortOrder.DescendingOrder)

    # Where to go ---------------------------------------------------------------------
    def _rows_in_panel_order(self) -> Iterator[int]:
        """Workspace rows after the one being read, in the panel's shown order, going
        round (the one being read last)."""
        panel = self.window.documents
        proxy = panel.proxy
        count = proxy.rowCount()
        here = panel.table.currentIndex().row() if panel.table.currentIndex().isValid() else -1
        for k in range(1, count + 1):
            yield proxy.mapToSource(proxy.index((here + k) % count, 0)).row()

    def find_next(self, wanted: Callable[[Span], bool]) -> tuple[int, Span] | None:
        w = self.window
        if w.row >= 0:
            spans = w.workspace.document(w.row).sorted_spans()
            current = w.keys.targets()
            # After the entity the curator is on (in text order), else from the start.
            first = spans.index(current[0]) + 1 if current and current[0] in spans else 0
            after = [s for s in spans[first:] if wanted(s)]
            if after:
                return w.row, after[0]
        for row in self._rows_in_panel_order():
            found = [s for s in w.workspace.document(row).sorted_spans() if wanted(s)]
            if found:
                return row, found[0]
        return None

    def go(self, wanted: Callable[[Span], bool], what: str) -> Span | None:
        w = self.window
        found = self.find_next(wanted)
        if found is None:
            w.statusBar().showMessage(f"No {what} suggestion left in the documents shown", 8000)
            return None
        row, span = found
        focus = w.entities.table if w.entities.table.hasFocus() else w.view
        if row != w.row:
            w.documents.set_current_row(row)
        w.keys.select(span)
        focus.setFocus()
        return span


def _add_to_menu(window: "MainWindow", title: str, actions: list[QAction]) -> None:
    for top in window.menuBar().actions():
        if top.menu() is not None and top.text().replace("&", "") == title:
            top.menu().addSeparator()
            top.menu().addActions(actions)
            return


def install(window: "MainWindow") -> SuggestionNavigation:
    return SuggestionNavigation(window)
