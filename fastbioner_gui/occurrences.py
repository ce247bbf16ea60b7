"""Annotate all occurrences: Curate > Annotate all occurrences… (Ctrl+Shift+A in the reading
view or the entity table) takes the current entity, or the text selected in the
reading view, and applies one decision (accept, add, relabel, reject) to every
identical string of the document or of the whole project.

The dialog shows the case rule (exact or ignore case) and whole tokens, both
selectable, and a preview count that is recomputed as they change; applying is one
undo step however many documents it touches. The rules are the core's
(:mod:`fastbioner.curate.occurrences`); this is the acting many entities at once takes,
where Ctrl+A then a number key only relabels the entities of one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout,
                               QHBoxLayout, QLabel, QRadioButton, QVBoxLayout, QWidget)

from fastbioner.curate import occurrences as rules
from fastbioner.io.documents import Source, Span

from .models.workspace import Workspace
from .undo import DocState, SpanChange, SpansCommand, state_of, status_after_edit
from .window_api import CURATION

if TYPE_CHECKING:
    from .window_api import WindowServices

THIS_DOCUMENT, WHOLE_PROJECT = "document", "project"
ACTION_NAMES = {rules.ACCEPT: "Accept the suggestions", rules.ADD: "Add (or accept) as",
                rules.RELABEL: "Relabel as", rules.REJECT: "Reject the suggestions"}
KEY = "Ctrl+Shift+A"


class Occurrences(QObject):
    """Previews and applies a :class:`fastbioner.curate.occurrences.Rule` over the workspace."""

    def __init__(self, workspace: Workspace, stack, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.stack = stack

    def rows(self, row: int, scope: str) -> list[int]:
        return list(range(len(self.workspace))) if scope == WHOLE_PROJECT else ([row] if row >= 0 else [])

    def preview(self, rule: rules.Rule, row: int, scope: str) -> tuple[list[int], rules.Preview]:
        rows = self.rows(row, scope)
        entries = [self.workspace.entry(r) for r in rows]
        return rows, rules.preview([(e.document, e.rejected) for e in entries], rule)

    def apply(self, rule: rules.Rule, row: int, scope: str) -> rules.Preview:
        """Apply ``rule``: one command on the undo stack for every document it changes.
        Returns the preview it carried out (what the dialog showed)."""
        rows, got = self.preview(rule, row, scope)
        changes = []
        for i, outcome in got.outcomes.items():
            if not outcome.changes:
                continue
            before = state_of(self.workspace, rows[i])
            after = DocState(tuple(outcome.spans), status_after_edit(before.status), before.tagged_by,
                             tuple(outcome.rejected))
            if after != before:
                changes.append(SpanChange(rows[i], before, after))
        if changes:
            self.stack.push(SpansCommand(self.workspace, changes, command_text(rule, got)))
        return got


def command_text(rule: rules.Rule, got: rules.Preview) -> str:
    """The undo step's name: the decision, the text, how many, where."""
    verb = {rules.ACCEPT: "Accept", rules.ADD: "Add", rules.RELABEL: "Relabel", rules.REJECT: "Reject"}[rule.action]
    target = f" as {rule.new_label}" if rule.action == rules.RELABEL else ""
    docs = got.documents
    return f"{verb} all '{rule.text}'{target} ({got.changes} in {docs} document{'s' if docs != 1 else ''})"


class OccurrencesDialog(QDialog):
    """The decision, the case rule, whole tokens, the scope and the preview count."""

    def __init__(self, controller: Occurrences, row: int, text: str, label: str, labels: list[str],
                 span: Span | None, concept_id: str | None, parent: QWidget | None = None,
                 propose: Callable[[str, str], str | None] | None = None):
        super().__init__(parent)
        self.setWindowTitle("Annotate all occurrences")
        self.controller, self.row, self.text, self.label, self.concept_id = controller, row, text, label, concept_id
        self.propose = propose
        self.applied: rules.Preview | None = None
        head = QLabel(f"<b>{_html(text)}</b> &nbsp;[{_html(label)}]"
                      + (f" &nbsp;· concept {_html(concept_id)}" if concept_id and span is not None else ""))
        self.actions = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        choices = QVBoxLayout()
        self.add_label = QComboBox()
        self.new_label = QComboBox()
        for combo in (self.add_label, self.new_label):
            combo.addItems(labels)
        self.add_label.setCurrentText(label)
        self.new_label.setCurrentText(next((lab for lab in labels if lab != label), label))
        for action in rules.ACTIONS:
            button = QRadioButton(ACTION_NAMES[action])
            self.actions.addButton(button)
            self.buttons[action] = button
            line = QHBoxLayout()
            line.addWidget(button)
            if action == rules.ADD:
                line.addWidget(self.add_label)
            elif action == rules.RELABEL:
                line.addWidget(self.new_label)
            line.addStretch(1)
            choices.addLayout(line)
        # A suggestion is usually accepted everywhere; a decided entity or a selection added.
        default = rules.ACCEPT if span is not None and span.source is Source.MODEL else rules.ADD
        self.buttons[default].setChecked(True)
        if span is None:  # a text selection: there is nothing to accept, relabel or reject yet
            for action in (rules.ACCEPT, rules.RELABEL, rules.REJECT):
                self.buttons[action].setEnabled(False)
        self.case = QComboBox()
        self.case.addItems(list(rules.CASE_RULES))
        self.whole = QCheckBox("Whole tokens only")
        self.whole.setChecked(True)
        self.scope = QComboBox()
        self.scope.addItem("In this document", THIS_DOCUMENT)
        self.scope.addItem("In the whole project", WHOLE_PROJECT)
        form = QFormLayout()
        form.addRow("Identical means:", self.case)
        form.addRow("", self.whole)
        form.addRow("Where:", self.scope)
        self.preview_label = QLabel()
        self.preview_label.setWordWrap(True)
        self.box = QDialogButtonBox(QDialogButtonBox.StandardButton.Apply | QDialogButtonBox.StandardButton.Cancel)
        self.box.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        self.box.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(head)
        layout.addLayout(choices)
        layout.addLayout(form)
        layout.addWidget(self.preview_label)
        layout.addWidget(self.box)
        for signal in (self.actions.buttonToggled, self.add_label.currentIndexChanged,
                       self.new_label.currentIndexChanged, self.case.currentIndexChanged, self.whole.toggled,
                       self.scope.currentIndexChanged):
            signal.connect(lambda *_: self.update_preview())
        self.update_preview()

    def action(self) -> str:
        return next(a for a, b in self.buttons.items() if b.isChecked())

    def rule(self) -> rules.Rule:
        action = self.action()
        label = self.add_label.currentText() if action == rules.ADD else self.label
        # The mention's id names the concept wherever its text is the same mention (else
        # the dictionary's proposal for the label); a relabel keeps ids as they are
        # (relabel_span's rule).
        concept = None
        if action in (rules.ACCEPT, rules.ADD):
            concept = self.concept_id if label == self.label else None
            if concept is None and self.propose is not None:
                concept = self.propose(self.text, label)
        return rules.Rule(self.text, self.label if action != rules.ADD else label, action,
                          new_label=self.new_label.currentText() if action == rules.RELABEL else None,
                          concept_id=concept, case=self.case.currentText(), whole_tokens=self.whole.isChecked())

    def update_preview(self) -> rules.Preview:
        rule = self.rule()
        _rows, got = self.controller.preview(rule, self.row, self.scope.currentData())
        concept = (f" Entities without a concept id get {rule.concept_id}."
                   if rule.concept_id and got.total("accepted") + got.total("added") else "")
        self.preview_label.setText(f"{got.describe()}.{concept} One undo step undoes it all.")
        self.box.button(QDialogButtonBox.StandardButton.Apply).setEnabled(got.changes > 0)
        self.current = got
        return got

    def apply(self) -> None:
        self.applied = self.controller.apply(self.rule(), self.row, self.scope.currentData())
        self.accept()


def _html(text: str) -> str:
    from html import escape

    return escape(" ".join(text.split()))


class OccurrencesHookup(QObject):
    """What :func:`install` adds: the controller and its Curate menu action."""

    def __init__(self, services: WindowServices):
        super().__init__(services)
        self.services = services
        self.controller = Occurrences(services.workspace, services.stack, self)
        # Where curation happens (the reading view, the entity table), like the curation keys.
        self.action = services.add_action(
            "curate.occurrences", "Annotate all occurrences…", self.open_dialog, KEY,
            tip="Accept, add, relabel or reject every identical string, in the document or the project, as one "
                "undo step", scope=CURATION, menu="curate", section=True)
        self.dialog: OccurrencesDialog | None = None

    def subject(self) -> tuple[str, str, Span | None] | None:
        """What the dialog acts on: the text selected in the reading view (with the
        first label), else the current entity."""
        w = self.services
        if w.row < 0:
            return None
        doc = w.workspace.document(w.row)
        selection = w.view.selection_offsets() if not w.entities.table.hasFocus() else None
        if selection is not None and selection[1] > selection[0] and doc.text[selection[0]:selection[1]].strip():
            labels = w.workspace.labels()
            return doc.text[selection[0]:selection[1]].strip(), labels[0], None
        spans = w.keys.targets()
        if len(spans) != 1 or spans[0] not in doc.spans:
            return None
        return doc.span_text(spans[0]), spans[0].label, spans[0]

    def make_dialog(self) -> OccurrencesDialog | None:
        w = self.services
        got = self.subject()
        if got is None:
            w.show_status("Select one entity (or some text) first; then all its occurrences can be decided at once",
                          8000)
            return None
        text, label, span = got
        concept = span.concept_id if span is not None else None
        hook = w.feature("concept_lookup")
        propose = hook.lookup.propose if hook is not None else None
        if span is None and propose is not None:
            # A selection: the label the dictionary knows the text under, if any.
            label = next((lab for lab in w.workspace.labels() if propose(text, lab)), label)
        if concept is None and propose is not None:
            concept = propose(text, label)
        self.dialog = OccurrencesDialog(self.controller, w.row, text, label, w.workspace.labels(),
                                        span, concept, w.host, propose)
        return self.dialog

    def open_dialog(self) -> None:
        dialog = self.make_dialog()
        if dialog is not None:
            if dialog.exec() and dialog.applied is not None:
                self.services.show_status(dialog.applied.describe())


def install(services: WindowServices) -> OccurrencesHookup:
    return OccurrencesHookup(services)
