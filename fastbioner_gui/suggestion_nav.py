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

from fastbioner.io.documents import Source, Span

from .window_api import CURATION

if TYPE_CHECKING:  # pragma: no cover
    from .window_api import WindowServices

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
    def __init__(self, services: WindowServices):
        super().__init__(services)
        self.services = services
        # U and L as N and P: only where curation happens.
        self.next_undecided = services.add_action(
            "curate.next_undecided", "Next undecided suggestion", lambda: self.go(undecided, "undecided"),
            NEXT_UNDECIDED_KEY, scope=CURATION, menu="curate", section=True)
        self.next_low_confidence = services.add_action(
            "curate.next_low_confidence", "Next low-confidence suggestion",
            lambda: self.go(low_confidence(services.settings.low_confidence), "low-confidence"),
            NEXT_LOW_CONFIDENCE_KEY, scope=CURATION, menu="curate")
        self.sort_action = services.add_action(
            "curate.sort_by_uncertainty", "Sort documents by uncertainty", self.sort_documents, SORT_KEY,
            tip="Most unsure first: the documents the model needs you for most", menu="curate")

    def sort_documents(self) -> None:
        panel = self.services.documents
        self.services.dock("documents").show()
        panel.table.sortByColumn(panel.model.uncertainty_column(), Qt.SortOrder.DescendingOrder)

    # Where to go ---------------------------------------------------------------------
    def _rows_in_panel_order(self) -> Iterator[int]:
        """Workspace rows after the one being read, in the panel's shown order, going
        round (the one being read last)."""
        panel = self.services.documents
        proxy = panel.proxy
        count = proxy.rowCount()
        here = panel.table.currentIndex().row() if panel.table.currentIndex().isValid() else -1
        for k in range(1, count + 1):
            yield proxy.mapToSource(proxy.index((here + k) % count, 0)).row()

    def find_next(self, wanted: Callable[[Span], bool]) -> tuple[int, Span] | None:
        w = self.services
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
        w = self.services
        found = self.find_next(wanted)
        if found is None:
            w.show_status(f"No {what} suggestion left in the documents shown", 8000)
            return None
        row, span = found
        focus = w.entities.table if w.entities.table.hasFocus() else w.view
        if row != w.row:
            w.documents.set_current_row(row)
        w.keys.select(span)
        focus.setFocus()
        return span


def install(services: WindowServices) -> SuggestionNavigation:
    return SuggestionNavigation(services)
