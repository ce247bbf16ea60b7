"""Keyboard-first curation: every curation gesture as a ``QAction`` with its key, live
in the reading view and in the entity table (and nowhere else, so typing in a search
field or a dialog is never taken for a command). The actions go into the Curate menu,
so the menus, and the shortcuts page generated from them, show the real bindings.

What a key acts on: the entities selected in the entity table when it has the focus,
else the entity selected in the reading view (the two follow each other); number keys
with text selected in the view add an entity instead. A number key with several
entities selected asks first (Ctrl+A then a stray digit must not relabel a whole
document), and the relabel is one undo step.

Undo and redo go through :meth:`CurationKeys.history` so the curator stays on the
entity the step changed: the table keeps a current row (F2, N and Tab carry on from it)
and the focus stays where it was.
"""

from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMessageBox, QWidget

from fastbioner.io.documents import Source, Span

from .curation import CurationController, relabel_targets
from .widgets.document_view import DocumentView
from .widgets.entity_panel import EntityPanel

LABEL_KEYS = 9


class CurationKeys(QObject):
    """Builds the curation actions and carries them out on the current entity."""

    def __init__(self, view: DocumentView, entities: EntityPanel, curation: CurationController,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.view = view
        self.entities = entities
        self.curation = curation
        self.widgets: tuple[QWidget, ...] = (view, entities.table)
        self.next_entity = self._action("Next entity", lambda: self.step(1), ["N"])
        self.previous_entity = self._action("Previous entity", lambda: self.step(-1), ["P"])
        self.accept = self._action("Accept entity", self.accept_current, ["A", "Return", "Enter"])
        self.reject = self._action("Reject suggestion", self.reject_current, ["X"])
        self.delete = self._action("Delete entity", self.delete_current, ["Delete", "Backspace"])
        self.edit_concept = self._action("Edit concept id", self.edit_concept_id, ["F2"])
        self.extend_end = self._action("Extend end by a token", lambda: self.resize("end", 1), ["Alt+Right"])
        self.shrink_end = self._action("Shrink end by a token", lambda: self.resize("end", -1), ["Alt+Left"])
        self.extend_start = self._action("Extend start by a token", lambda: self.resize("start", -1),
                                         ["Alt+Shift+Left"])
        self.shrink_start = self._action("Shrink start by a token", lambda: self.resize("start", 1),
                                         ["Alt+Shift+Right"])
        self.label_actions = [self._action(f"Label {i + 1}", lambda _=False, i=i: self.label(i, exact=False),
                                           [str(i + 1)]) for i in range(LABEL_KEYS)]
        self.exact_label_actions = [self._action(f"Exact selection as label {i + 1}",
                                                 lambda _=False, i=i: self.label(i, exact=True), [f"Alt+{i + 1}"])
                                    for i in range(LABEL_KEYS)]
        self.set_labels(view.labels)
        # Tab from the reading view goes to the entity table (not to its filter field,
        # where the next keys would be typed instead of acting on the entity).
        QWidget.setTabOrder(view, entities.table)

    def _action(self, text: str, slot: Callable, keys: Sequence[str]) -> QAction:
        action = QAction(text, self)
        action.setShortcuts([QKeySequence(k) for k in keys])
        # Only where curation happens: the reading view and the entity table.
        action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        action.triggered.connect(slot)
        for widget in self.widgets:
            widget.addAction(action)
        return action

    def actions(self) -> list[QAction]:
        return [self.next_entity, self.previous_entity, self.accept, self.reject, self.delete, self.edit_concept,
                self.extend_end, self.shrink_end, self.extend_start, self.shrink_start]

    def set_labels(self, labels: Sequence[str]) -> None:
        for i, (plain, exact) in enumerate(zip(self.label_actions, self.exact_label_actions)):
            known = i < len(labels)
            plain.setText(f"Label as {labels[i]}" if known else f"Label {i + 1}")
            exact.setText(f"Exact selection as {labels[i]}" if known else f"Exact selection as label {i + 1}")
            plain.setVisible(known)
            exact.setVisible(known)

    # What the keys act on ------------------------------------------------------
    def targets(self) -> list[Span]:
        if self.entities.table.hasFocus():
            chosen = self.entities.selected_spans()
            if chosen:
                return chosen
        return [self.view.selected_span] if self.view.selected_span is not None else []

    def _doc_spans(self) -> list[Span]:
        doc = self.view.document_
        return doc.sorted_spans() if doc is not None else []

    def select(self, span: Span | None) -> None:
        self.view.select_span(span)
        self.entities.select_span(span)

    def step(self, delta: int) -> Span | None:
        """Select the next (+1) or previous (-1) entity in text order."""
        spans = self._doc_spans()
        if not spans:
            return None
        current = self.targets()
        if not current or current[0] not in spans:
            target = spans[0] if delta > 0 else spans[-1]
        else:
            i = spans.index(current[0]) + delta
            target = spans[max(0, min(i, len(spans) - 1))]
        self.select(target)
        return target

    def _after(self, spans: Sequence[Span], act: Callable[[], None]) -> None:
        """Do ``act`` and then select the entity that followed ``spans`` (so a curator
        can go through a document pressing A and X)."""
        order = self._doc_spans()
        following = [s for s in order if s not in spans and s.start >= max(x.start for x in spans)]
        act()
        now = self._doc_spans()
        nxt = next((s for s in following if s in now), None)
        self.select(nxt if nxt is not None else (now[-1] if now else None))

    def accept_current(self) -> None:
        doc_spans = self._doc_spans()
        rejected = [s for s in self.targets() if s not in doc_spans]
        if rejected:  # picked from the table's Rejected list: accepted after all
            self.curation.accept_rejected(rejected)
            return
        spans = [s for s in self.targets() if s.source is Source.MODEL]
        if spans:
            self._after(spans, lambda: self.curation.accept(spans))
        elif self.targets():  # gold or curated already: accepting moves on
            self.step(1)

    def reject_current(self) -> None:
        spans = [s for s in self.targets() if s.source is Source.MODEL]
        if spans:
            self._after(spans, lambda: self.curation.reject(spans))

    def delete_current(self) -> None:
        spans = self.targets()
        if spans:
            self._after(spans, lambda: self.curation.delete(spans))

    def edit_concept_id(self) -> None:
        """F2: type the concept id of the current entity, in the entity table (from the
        reading view too: the table takes the focus for the edit)."""
        spans = self.targets()
        if len(spans) == 1:
            self.entities.edit_concept(spans[0])

    def history(self, step: Callable[[], None]) -> Span | None:
        """Undo or redo (``step``), then stay on the entity it changed in the document
        being read (one that came back or changed), else on the entity selected before,
        else on the one nearest to it: the table keeps a current row, the focus stays.
        Returns the entity selected."""
        before = set(self._doc_spans())
        current = self.targets()
        focus = next((w for w in self.widgets if w.hasFocus()), None)
        step()
        now = self._doc_spans()
        changed = [s for s in now if s not in before]
        if changed:
            target = changed[0]
        elif current and current[0] in now:
            target = current[0]
        elif current and now:
            target = min(now, key=lambda s: (abs(s.start - current[0].start), s.start))
        else:
            target = None
        if target is not None:
            self.select(target)
        if focus is not None:
            focus.setFocus()
        return target

    def resize(self, edge: str, tokens: int) -> None:
        spans = self.targets()
        if len(spans) == 1:
            new = self.curation.resize(spans[0], edge, tokens)
            if new is not None:
                self.select(new)

    def label(self, index: int, exact: bool) -> None:
        labels = self.view.labels
        if index >= len(labels):
            return
        label = labels[index]
        selection = self.view.selection_offsets() if not self.entities.table.hasFocus() else None
        if selection is not None:
            self.curation.add(selection[0], selection[1], label, exact)
            return
        spans = self.targets()
        if len(spans) > 1 and not self.confirm_relabel(spans, label):
            return
        self.curation.relabel_many(spans, label)
        if len(spans) == 1:
            relabelled = next((s for s in self._doc_spans() if (s.start, s.end, s.label) ==
                               (spans[0].start, spans[0].end, label)), None)
            self.select(relabelled)

    def confirm_relabel(self, spans: Sequence[Span], label: str) -> bool:
        """Several entities and one key: say what it would do and ask (No is the
        default, so a second stray key changes nothing)."""
        changing = relabel_targets(spans, label)
        if not changing:
            return False
        gold = sum(1 for s in changing if s.source is Source.GOLD)
        n = len(changing)
        text = f"Relabel {n} entit{'y' if n == 1 else 'ies'} as {label}?"
        if gold:
            text += f" {gold} of them {'is' if gold == 1 else 'are'} gold and would become accepted (curated)."
        if n < len(spans):
            text += f" ({len(spans) - n} already {label} stay as they are.)"
        text += " One undo step undoes it all."
        B = QMessageBox.StandardButton
        return QMessageBox.question(self.entities.window(), "Relabel several entities?", text,
                                    B.Yes | B.No, B.No) == B.Yes
