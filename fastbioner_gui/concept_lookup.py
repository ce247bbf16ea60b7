"""Concept lookup in the app: the entity table's concept cell completes by name or id,
and accepting a suggestion fills in the id its text usually names.

The dictionary is the one shipped with the app (``fastbioner.curate.concepts``, built from
the BC5CDR and NCBI-disease training sets) plus the gold and accepted entities of
every open document; it is rebuilt (lazily, on the next lookup) whenever documents
are opened or a project replaces the working set.

A proposed id is filled in as part of the accept itself: the one undo step takes
back the accept and the id together, the status bar names the id and where it came
from, and F2 (or a double-click) edits it like any other id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QCompleter, QLineEdit, QToolTip

from fastbioner.curate.concepts import ConceptDictionary, propose_for_accepted, shipped_dictionary
from fastbioner.io.documents import Span

from .models.entity_table import CONCEPT, LABEL
from .models.workspace import Workspace
from .widgets.entity_panel import ConceptIdDelegate

if TYPE_CHECKING:
    from .window_api import WindowServices

ID_ROLE = Qt.ItemDataRole.UserRole + 10   # what the completer puts into the cell


class ConceptLookup(QObject):
    """The dictionary the app looks concepts up in (shipped + open documents)."""

    def __init__(self, workspace: Workspace, shipped: ConceptDictionary | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self._shipped = shipped
        self._merged: ConceptDictionary | None = None
        workspace.documentsAdded.connect(lambda *_: self.invalidate())
        workspace.projectReset.connect(self.invalidate)

    def invalidate(self) -> None:
        self._merged = None

    def dictionary(self) -> ConceptDictionary:
        if self._merged is None:
            if self._shipped is None:
                self._shipped = shipped_dictionary()   # 4,000 rows: a fraction of a second, once
            opened = ConceptDictionary()
            opened.add_documents(e.document for e in self.workspace.project.entries)
            self._merged = self._shipped.merged(opened)
        return self._merged

    def complete(self, typed: str, label: str | None = None, limit: int = 20):
        return self.dictionary().complete(typed, label, limit)

    def propose(self, text: str, label: str | None = None) -> str | None:
        return self.dictionary().propose(text, label)

    def name(self, concept_id: str) -> str | None:
        concept = self.dictionary().concept(concept_id)
        return concept.name if concept is not None else None

    def fill_accepted(self, before: Sequence[Span], after: list[Span], text: str) -> list[Span]:
        """The curation controller's hook: accepted suggestions get the proposed id."""
        return propose_for_accepted(before, after, text, self.dictionary())


class ConceptCompleter(QCompleter):
    """Offers ``id — name (label, n mentions)`` for what is typed; choosing one puts
    the id into the cell. The list is asked of the dictionary as the text changes (not
    filtered by Qt: a name matches as well as an id)."""

    def __init__(self, lookup: ConceptLookup, label: str | None, editor: QLineEdit):
        super().__init__(editor)
        self.lookup = lookup
        self.label = label
        self.items = QStandardItemModel(self)
        self.setModel(self.items)
        self.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.setCompletionRole(ID_ROLE)
        self.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setMaxVisibleItems(12)
        editor.setCompleter(self)
        editor.textEdited.connect(self.refill)
        self.editor = editor
        editor.installEventFilter(self)
        self.popup().installEventFilter(self)

    def eventFilter(self, obj, event):
        """Return in the cell commits it even while the list is open (the offer chosen
        with the arrow keys, else what was typed); the list closes first, so the
        focus goes back to the table, not to a list that is gone."""
        if (obj is self.editor and event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.popup().isVisible()):
            current = self.popup().currentIndex()
            if current.isValid():
                self.editor.setText(current.data(ID_ROLE))
            self.popup().hide()
            return False   # the delegate commits (queued) what the cell now holds
        if obj is self.popup() and event.type() == QEvent.Type.Hide:
            # Where the platform gave the list the window focus (no keyboard grab), it
            # goes back to the window, or the curation keys find no focused table.
            window = self.editor.window()
            QTimer.singleShot(0, window.activateWindow)
        return super().eventFilter(obj, event)

    def refill(self, typed: str) -> None:
        self.items.clear()
        for concept in self.lookup.complete(typed, self.label):
            item = QStandardItem(f"{concept.id} — {concept.name} ({concept.label}, "
                                 f"{concept.mentions} mention{'s' if concept.mentions != 1 else ''})")
            item.setData(concept.id, ID_ROLE)
            item.setToolTip(item.text())
            self.items.appendRow(item)
        if self.items.rowCount() and typed.strip():
            # As wide as its lines (the cell is narrow; "D008094 — lithium (…)" must be read whole).
            popup = self.popup()
            width = popup.sizeHintForColumn(0) + popup.verticalScrollBar().sizeHint().width() + 12
            screen = self.editor.screen()
            if screen is not None:
                width = min(width, screen.availableGeometry().width() - 16)
            # A minimum width, not only the rect: the line edit completes again after this
            # slot with its own rect (the cell's width), which would narrow the list back.
            popup.setMinimumWidth(width)
            rect = self.editor.rect()
            rect.setWidth(max(rect.width(), width))
            self.complete(rect)
        else:
            self.popup().hide()

    def offered(self) -> list[str]:
        """The ids offered now (for tests and the status bar)."""
        return [self.items.item(i).data(ID_ROLE) for i in range(self.items.rowCount())]


class ConceptLookupDelegate(ConceptIdDelegate):
    """The concept cell's editor with the dictionary's completer, within the entity's
    label (a Chemical cell offers chemicals)."""

    def __init__(self, lookup: ConceptLookup, parent=None):
        super().__init__(parent)
        self.lookup = lookup
        self.last_completer: ConceptCompleter | None = None

    def tooltip(self, index) -> str | None:
        """The concept cell's tooltip: the id's name and label in the dictionary."""
        cid = (index.data() or "").strip()
        if not cid:
            return "No concept id: double-click or F2, then type a name or an id"
        concept = self.lookup.dictionary().concept(cid, index.siblingAtColumn(LABEL).data() or None) \
            or self.lookup.dictionary().concept(cid)
        if concept is None:
            return f"{cid}: not in the concept dictionary"
        n = concept.mentions
        return f"{cid} — {concept.name} ({concept.label}, {n} mention{'s' if n != 1 else ''} in the dictionary)"

    def helpEvent(self, event, view, option, index):
        if event.type() == QEvent.Type.ToolTip and index.isValid():
            QToolTip.showText(event.globalPos(), self.tooltip(index), view)
            return True
        return super().helpEvent(event, view, option, index)

    def createEditor(self, parent, option, index):
        editor = super().createEditor(parent, option, index)
        editor.setPlaceholderText("MeSH id or a name, e.g. cocaine")
        label = index.siblingAtColumn(LABEL).data() or None
        self.last_completer = ConceptCompleter(self.lookup, label, editor)
        return editor


class ConceptLookupHookup(QObject):
    """What :func:`install` adds: the lookup, the concept cell's completer and the
    proposal on accept."""

    def __init__(self, services: WindowServices, shipped: ConceptDictionary | None = None):
        super().__init__(services)
        self.services = services
        self.lookup = ConceptLookup(services.workspace, shipped, self)
        self.delegate = ConceptLookupDelegate(self.lookup, services.entities.table)
        services.entities.table.setItemDelegateForColumn(CONCEPT, self.delegate)
        services.curation.propose_concepts = self._propose

    def _propose(self, before: Sequence[Span], after: list[Span], text: str) -> list[Span]:
        out = self.lookup.fill_accepted(before, after, text)
        filled = [s for s, a in zip(out, after) if s.concept_id != a.concept_id]
        if filled:
            first = filled[0]
            what = (f"concept id {first.concept_id} proposed for '{text[first.start:first.end]}'" if len(filled) == 1
                    else f"concept ids proposed for {len(filled)} accepted entities")
            self.services.show_status(
                f"Accepted; {what} from the concept dictionary (F2 edits it, undo takes it back with the accept)")
        return out


def install(services: WindowServices, shipped: ConceptDictionary | None = None) -> ConceptLookupHookup:
    return ConceptLookupHookup(services, shipped)
