"""The Relations dock: the document's relations (BC5CDR's chemical-induced disease,
``CID``) with each concept's id and name; add one between two concepts of the
document (Ctrl+L, preselecting the chemical and disease entities selected in the
entity table or the reading view), remove the selected one (Ctrl+Delete in the
panel; Ctrl+Shift+L goes to the panel).
Each is one undo step, and relations follow concept-id edits (the rule is the
core's, :func:`fastbioner.curate.relations.follow_concept_edit`): the id edit and the
relations it renames are one undo step too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoCommand
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout,
                               QHeaderView, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from fastbioner.curate import relations as rules
from fastbioner.curate.curation import normalize_concept_id
from fastbioner.io.documents import Span

from .models.workspace import Workspace

if TYPE_CHECKING:
    from .window_api import WindowServices

ADD_KEY = "Ctrl+L"
PANEL_KEY = "Ctrl+Shift+L"
REMOVE_KEYS = ("Ctrl+Delete",)   # Delete alone deletes the current entity
Relations = tuple[tuple[str, ...], ...]


class RelationsCommand(QUndoCommand):
    """One document's relations before and after (BioC's argument names kept aligned,
    :func:`fastbioner.curate.relations.set_relations`)."""

    def __init__(self, workspace: Workspace, row: int, before: Relations, after: Relations, text: str,
                 parent: QUndoCommand | None = None):
        super().__init__(text, parent)
        self.workspace, self.row, self.before, self.after = workspace, row, before, after

    def redo(self) -> None:
        self._apply(self.after)

    def undo(self) -> None:
        self._apply(self.before)

    def _apply(self, relations: Relations) -> None:
        doc = self.workspace.document(self.row)
        new = rules.set_relations(doc, relations)
        doc.relations, doc.metadata = new.relations, new.metadata
        self.workspace.documentsChanged.emit(self.row, self.row)
        self.workspace.modified.emit()


class RelationsController(QObject):
    """Adds, removes and renames relations of a workspace row, on the undo stack."""

    changed = Signal()

    def __init__(self, workspace: Workspace, stack, curation, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace, self.stack, self.curation = workspace, stack, curation

    def _push(self, row: int, after: Sequence[tuple[str, ...]], text: str) -> bool:
        before = tuple(tuple(r) for r in self.workspace.document(row).relations)
        after = tuple(tuple(r) for r in after)
        if after == before:
            return False
        self.stack.push(RelationsCommand(self.workspace, row, before, after, text))
        return True

    def add(self, row: int, relation: tuple[str, ...]) -> bool:
        """Add ``relation`` to the document (ValueError for an empty or spaced field);
        False when it is there already."""
        doc = self.workspace.document(row)
        after = rules.add_relation(doc.relations, relation)
        return self._push(row, after, f"Add relation {' '.join(after[-1])}")

    def remove(self, row: int, relation: tuple[str, ...]) -> bool:
        doc = self.workspace.document(row)
        return self._push(row, rules.remove_relation(doc.relations, relation),
                          f"Remove relation {' '.join(relation)}")

    def set_concept_id(self, span: Span, concept_id: str) -> bool:
        """The entity table's concept edit, with the relations following it: one undo
        step when it renames relations (a macro of the edit and the rename), the plain
        edit otherwise. False as :meth:`CurationController.set_concept_id`."""
        row = self.curation.row
        if row < 0:
            return self.curation.set_concept_id(span, concept_id)
        doc = self.workspace.document(row)
        try:
            new_id = normalize_concept_id(concept_id)
        except ValueError:
            return False
        after_spans = [s.with_(concept_id=new_id) if s == span else s for s in doc.spans]
        renamed = rules.follow_concept_edit(after_spans, doc.relations, span.concept_id, new_id)
        if span not in doc.spans or [tuple(r) for r in renamed] == [tuple(r) for r in doc.relations]:
            return self.curation.set_concept_id(span, concept_id)
        self.stack.beginMacro(f"Set concept id {new_id} of '{doc.span_text(span)}' (relations follow)")
        try:
            ok = self.curation.set_concept_id(span, concept_id)
            if ok:
                self._push(row, renamed, f"Relations name {new_id} for {span.concept_id}")
        finally:
            self.stack.endMacro()
        return ok


class AddRelationDialog(QDialog):
    """Type, chemical and disease: the document's concepts offered (with their names),
    any id typed; Enter adds."""

    def __init__(self, chemicals: dict[str, str], diseases: dict[str, str], chosen: Sequence[str | None],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add a relation")
        self.type = QComboBox()
        self.type.setEditable(True)
        self.type.addItem(rules.CID)
        self.chemical = self._concepts(chemicals, chosen[0])
        self.disease = self._concepts(diseases, chosen[1])
        form = QFormLayout(self)
        form.addRow("Type:", self.type)
        form.addRow("Chemical:", self.chemical)
        form.addRow("Disease:", self.disease)
        self.message = QLabel()
        form.addRow(self.message)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        form.addRow(box)
        self.resize(460, self.sizeHint().height())

    @staticmethod
    def _concepts(concepts: dict[str, str], chosen: str | None) -> QComboBox:
        combo = QComboBox()
        combo.setEditable(True)   # an id that no entity of the document carries may be typed
        for cid, name in concepts.items():
            combo.addItem(f"{cid} — {name}", cid)
        if chosen is not None:
            i = combo.findData(chosen)
            combo.setCurrentIndex(i) if i >= 0 else combo.setEditText(chosen)
        return combo

    @staticmethod
    def _id(combo: QComboBox) -> str:
        text = combo.currentText().strip()
        i = combo.currentIndex()
        if i >= 0 and combo.itemText(i) == text:
            return combo.itemData(i)
        return text.split(" — ")[0].strip()

    def relation(self) -> tuple[str, str, str]:
        return (self.type.currentText().strip(), self._id(self.chemical), self._id(self.disease))


class RelationsPanel(QWidget):
    """The relations of the document being read."""

    def __init__(self, services: WindowServices, controller: RelationsController, on_add: Callable[[], None],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.services, self.controller = services, controller
        self.row = -1
        self.summary = QLabel()
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Type", "Chemical", "Disease"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setAlternatingRowColors(True)
        # Each column as wide as its longest id and name (a document has a few
        # relations): a narrow panel scrolls sideways rather than cut a concept's name
        # to "D007545 — I…" (a stretched last column would shrink with the panel).
        header = self.tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.remove_action = QAction("Remove relation (in the Relations panel)", self)
        self.remove_action.setShortcuts([QKeySequence(k) for k in REMOVE_KEYS])
        # Only while the list has the focus.
        self.remove_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.remove_action.triggered.connect(self.remove_current)
        self.tree.addAction(self.remove_action)
        add = QPushButton(f"Add… ({QKeySequence(ADD_KEY).toString(QKeySequence.SequenceFormat.NativeText)})")
        remove = QPushButton(f"Remove "
                             f"({QKeySequence(REMOVE_KEYS[0]).toString(QKeySequence.SequenceFormat.NativeText)})")
        for button in (add, remove):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)   # the list keeps the focus
        add.clicked.connect(on_add)
        remove.clicked.connect(self.remove_current)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        layout.addLayout(buttons)
        services.workspace.documentsChanged.connect(
            lambda first, last: self.refresh() if first <= self.row <= last else None)
        lookup = services.feature("concept_lookup")
        if lookup is not None:   # the concepts' names, once the dictionary is built (in the background)
            lookup.lookup.changed.connect(self.refresh)

    def show_row(self, row: int) -> None:
        self.row = row
        self.refresh()

    def refresh(self) -> None:
        keep = self.current_relation()
        self.tree.clear()
        ws = self.services.workspace
        if self.row < 0 or self.row >= len(ws):
            self.summary.setText("No document")
            return
        doc = ws.document(self.row)
        lookup = self.services.feature("concept_lookup")
        name_of = lookup.lookup.name if lookup is not None else None
        rows = rules.relation_rows(doc, name_of)
        for row in rows:
            cells = [row.type] + [_concept_text(i, n, p) for i, n, p in zip(row.ids, row.names, row.present)]
            item = QTreeWidgetItem(cells[:3] + ([" ".join(cells[3:])] if len(cells) > 3 else []))
            item.setData(0, Qt.ItemDataRole.UserRole, row.relation)
            for col, present in enumerate(row.present[:2], 1):
                if not present:
                    item.setForeground(col, self.palette().placeholderText())
                    item.setToolTip(col, "No entity of this document has this concept id")
            self.tree.addTopLevelItem(item)
        n = len(rows)
        self.summary.setText(f"{doc.id}: {n} relation{'s' if n != 1 else ''}" if n else
                             f"{doc.id}: no relations. Select a chemical and a disease entity and press "
                             f"{QKeySequence(ADD_KEY).toString(QKeySequence.SequenceFormat.NativeText)} to add one.")
        self.select(keep)

    def relations(self) -> list[tuple[str, ...]]:
        return [self.tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.tree.topLevelItemCount())]

    def current_relation(self) -> tuple[str, ...] | None:
        item = self.tree.currentItem()
        return None if item is None else item.data(0, Qt.ItemDataRole.UserRole)

    def select(self, relation: tuple[str, ...] | None) -> None:
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if relation is None or item.data(0, Qt.ItemDataRole.UserRole) == relation:
                self.tree.setCurrentItem(item)
                return

    def remove_current(self) -> None:
        relation = self.current_relation()
        if relation is None or self.row < 0:
            return
        index = self.tree.indexOfTopLevelItem(self.tree.currentItem())
        self.controller.remove(self.row, relation)
        # Stay where the removed one was (the next, or the new last).
        if self.tree.topLevelItemCount():
            self.tree.setCurrentItem(self.tree.topLevelItem(min(index, self.tree.topLevelItemCount() - 1)))


def _concept_text(cid: str, name: str, present: bool) -> str:
    text = f"{cid} — {name}" if name else cid
    return text if present else f"{text} (not in this document)"


class RelationsHookup(QObject):
    """What :func:`install` adds: the controller, the dock, the Curate > Relations menu,
    and concept id edits (relations naming the old id follow them)."""

    def __init__(self, services: WindowServices):
        super().__init__(services)
        self.services = services
        self.controller = RelationsController(services.workspace, services.stack, services.curation, self)
        self.panel = RelationsPanel(services, self.controller, self.add_dialog)
        self.dock = services.add_dock("relations", "Relations", self.panel, Qt.DockWidgetArea.BottomDockWidgetArea,
                                      view_menu=False)  # after the Curate menu's items (below)
        # Window-wide keys, in Curate > Relations.
        services.commands.separator("curate")
        services.menu("curate/relations", "Relations")
        self.add_action = services.add_action(
            "curate.add_relation", "Add relation…", self.add_dialog, ADD_KEY,
            tip="Add a relation between a chemical and a disease concept of the document", menu="curate/relations")
        services.commands.adopt("curate.remove_relation", self.panel.remove_action, menu="curate/relations")
        self.panel_action = services.add_action("curate.relations_panel", "Relations panel", self.focus_panel,
                                                PANEL_KEY, menu="curate/relations")
        services.menu("view").addAction(self.dock.toggleViewAction())
        services.documents.currentRowChanged.connect(self.panel.show_row)
        services.workspace.projectReset.connect(lambda: self.panel.show_row(-1))
        services.entities.conceptEdited.connect(self._concept_edited)
        self.panel.show_row(services.row)
        self.dialog: AddRelationDialog | None = None

    def focus_panel(self) -> None:
        self.dock.show()
        self.dock.raise_()
        self.panel.tree.setFocus()
        if self.panel.tree.currentItem() is None:
            self.panel.select(None)

    def make_dialog(self) -> AddRelationDialog | None:
        w = self.services
        if w.row < 0:
            w.show_status("Open a document first", 8000)
            return None
        doc = w.workspace.document(w.row)
        chosen = rules.arguments_of(w.keys.targets() or ([w.view.selected_span] if w.view.selected_span else []))
        self.dialog = AddRelationDialog(rules.document_concepts(doc, "Chemical"),
                                        rules.document_concepts(doc, "Disease"), chosen, w.host)
        return self.dialog

    def add_dialog(self) -> None:
        dialog = self.make_dialog()
        if dialog is not None and dialog.exec():
            self.add_from(dialog)

    def add_from(self, dialog: AddRelationDialog) -> bool:
        try:
            added = self.controller.add(self.services.row, dialog.relation())
        except ValueError as exc:
            self.services.show_status(f"No relation added: {exc}")
            return False
        self.dock.show()
        self.panel.select(tuple(dialog.relation()))
        self.services.show_status("Relation added" if added else "That relation is there already", 8000)
        return added

    def set_concept_id(self, span: Span, concept_id: str) -> bool:
        return self.controller.set_concept_id(span, concept_id)

    def _concept_edited(self, span: Span, concept_id: str) -> None:
        # The entity table's concept cell: through the controller, so relations follow.
        if not self.set_concept_id(span, concept_id):
            self.services.show_status("A concept id has no spaces; nothing changed.", 8000)


def install(services: WindowServices) -> RelationsHookup:
    return RelationsHookup(services)
