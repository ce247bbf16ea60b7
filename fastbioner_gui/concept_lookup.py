"""Concept lookup in the app: the entity table's concept cell completes by name or id,
and accepting a suggestion fills in the id its text usually names.

The dictionary is the one shipped with the app (``fastbioner.curate.concepts``, built from
the BC5CDR and NCBI-disease training sets) plus the gold and accepted entities of
every open document; it is rebuilt whenever documents are opened or a project replaces
the working set.

It is built, lookups and all, in a background job, never on the GUI thread: a
dictionary of millions of rows takes seconds, and typing in a concept cell must not
freeze the window. Until a rebuild is done, lookups answer from the dictionary built
before (without the newest documents' concepts); before the first is done, the cell's
list says the dictionary is still loading and fills in when it is ready, and an accept
proposes no id (the status bar says so).

A proposed id is filled in as part of the accept itself: the one undo step takes
back the accept and the id together, the status bar names the id and where it came
from, and F2 (or a double-click) edits it like any other id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QCompleter, QLineEdit, QToolTip

from fastbioner.base.errors import InputError
from fastbioner.base.jobs import JobState
from fastbioner.curate.concepts import (Concept, ConceptDictionary, accepted_without_id, document_votes,
                                        propose_for_accepted, shipped_dictionary)
from fastbioner.io.documents import Span

from .jobs import QUIET_KIND, Job, JobManager
from .models.entity_table import CONCEPT, LABEL
from .models.workspace import Workspace
from .widgets.entity_panel import ConceptIdDelegate

if TYPE_CHECKING:
    from .window_api import WindowServices

ID_ROLE = Qt.ItemDataRole.UserRole + 10   # what the completer puts into the cell
LOADING = "the concept dictionary is still loading"


def build_dictionary_job(shipped: ConceptDictionary | None, votes: list[tuple[str, str, str]]):
    """The job that builds the app's dictionary: the shipped one (read first if
    ``shipped`` is None) merged with the open documents' ``votes``, every lookup built.
    Its result: the shipped dictionary (kept for the next build), the merged one, and
    why the shipped one could not be read ("" if it could)."""
    def job(on_event, cancel):
        problem = ""
        if shipped is None:
            try:
                base = shipped_dictionary(indexed=False)  # only merged: its own lookups would go unused
            except InputError as exc:   # a damaged install: the documents' concepts still work
                base, problem = ConceptDictionary(), str(exc)
        else:
            base = shipped
        cancel.check()
        opened = ConceptDictionary()
        opened.add_votes(votes)
        merged = base.merged(opened)
        cancel.check()
        merged.build_index()
        return base, merged, problem
    return job


class ConceptLookup(QObject):
    """The dictionary the app looks concepts up in (shipped + open documents), built in
    a background job; lookups never wait for it."""

    changed = Signal()        # a newly built dictionary answers from now on
    failed = Signal(str)      # the shipped dictionary could not be read, or a build failed (one line)

    def __init__(self, workspace: Workspace, jobs: JobManager, shipped: ConceptDictionary | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.jobs = jobs
        self._shipped = shipped
        self._dictionary: ConceptDictionary | None = None   # the latest built: lookups answer from it
        self._wanted = 0      # changes to the documents so far
        self._tried = -1      # how many of them the latest build started with
        self._built = -1      # how many of them the dictionary answering holds
        self._job: Job | None = None
        workspace.documentsAdded.connect(lambda *_: self.invalidate())
        workspace.projectReset.connect(self.invalidate)

    def invalidate(self) -> None:
        """The documents changed: build again (the dictionary built before answers meanwhile)."""
        self._wanted += 1
        self._build()

    @property
    def ready(self) -> bool:
        """Whether a dictionary answers lookups (else each answers "nothing yet")."""
        return self._dictionary is not None

    def up_to_date(self) -> bool:
        """Whether the dictionary answering holds every open document's concepts."""
        return self._built == self._wanted

    def _build(self) -> None:
        if self._job is not None or self._tried == self._wanted:
            return   # the running build's end starts the next; a failed one is not retried
        wanted = self._tried = self._wanted
        votes = list(document_votes(e.document for e in self.workspace.project.entries))
        job = self.jobs.start("Build the concept dictionary", build_dictionary_job(self._shipped, votes),
                              kind=QUIET_KIND)
        self._job = job
        job.succeeded.connect(lambda got: self._done(got, wanted))
        job.failed.connect(self.failed)   # a bug: the dictionary built before still answers
        job.finished.connect(self._next)

    def _done(self, got: tuple[ConceptDictionary, ConceptDictionary, str], wanted: int) -> None:
        self._shipped, self._dictionary, problem = got
        self._built = wanted
        if problem:
            self.failed.emit(problem)
        self.changed.emit()

    def _next(self) -> None:
        cancelled = self._job is not None and self._job.state is JobState.CANCELLED
        self._job = None
        # If the documents changed while it ran; not after a cancel (the window closing
        # cancels every job and waits for those it cancelled, not for a new one).
        if not cancelled:
            self._build()

    def dictionary(self) -> ConceptDictionary | None:
        """The dictionary answering now (None before the first is built; asking starts it)."""
        self._build()
        return self._dictionary

    def complete(self, typed: str, label: str | None = None, limit: int = 20) -> list[Concept]:
        d = self.dictionary()
        return d.complete(typed, label, limit) if d is not None else []

    def propose(self, text: str, label: str | None = None) -> str | None:
        d = self.dictionary()
        return d.propose(text, label) if d is not None else None

    def concept(self, concept_id: str, label: str | None = None) -> Concept | None:
        d = self.dictionary()
        return d.concept(concept_id, label) if d is not None else None

    def name(self, concept_id: str) -> str | None:
        concept = self.concept(concept_id)
        return concept.name if concept is not None else None

    def fill_accepted(self, before: Sequence[Span], after: list[Span], text: str) -> list[Span]:
        """The curation controller's hook: accepted suggestions get the proposed id."""
        d = self.dictionary()
        return propose_for_accepted(before, after, text, d) if d is not None else after


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
        # A dictionary built while the curator types: the list offers from it at once.
        lookup.changed.connect(self._dictionary_changed)

    def eventFilter(self, obj, event):
        """Return in the cell commits it even while the list is open (the offer chosen
        with the arrow keys, else what was typed); the list closes first, so the
        focus goes back to the table, not to a list that is gone."""
        if (obj is self.editor and event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.popup().isVisible()):
            current = self.popup().currentIndex()
            if current.isValid() and current.data(ID_ROLE):   # not the "still loading" line
                self.editor.setText(current.data(ID_ROLE))
            self.popup().hide()
            return False   # the delegate commits (queued) what the cell now holds
        if obj is self.popup() and event.type() == QEvent.Type.Hide:
            # Where the platform gave the list the window focus (no keyboard grab), it
            # goes back to the window, or the curation keys find no focused table.
            window = self.editor.window()
            QTimer.singleShot(0, window.activateWindow)
        return super().eventFilter(obj, event)

    def _dictionary_changed(self) -> None:
        if self.editor.isVisible() and self.editor.text().strip():   # the cell is still being edited
            self.refill(self.editor.text())

    def refill(self, typed: str) -> None:
        self.items.clear()
        if not self.lookup.ready and typed.strip():
            loading = QStandardItem(LOADING.capitalize() + "…")
            loading.setFlags(Qt.ItemFlag.NoItemFlags)   # nothing to choose: the list fills in when it is built
            self.items.appendRow(loading)
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
        ids = (self.items.item(i).data(ID_ROLE) for i in range(self.items.rowCount()))
        return [cid for cid in ids if cid]

    def loading(self) -> bool:
        """Whether the list says the dictionary is still loading."""
        return self.items.rowCount() > 0 and not self.items.item(0).isEnabled()


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
        if not self.lookup.ready:
            return f"{cid}: {LOADING}"
        concept = self.lookup.concept(cid, index.siblingAtColumn(LABEL).data() or None) or self.lookup.concept(cid)
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
        self.lookup = ConceptLookup(services.workspace, services.jobs, shipped, self)
        self.lookup.failed.connect(lambda message: services.show_status(
            f"Concept dictionary: {message} (ids are proposed from the open documents only)"))
        self.delegate = ConceptLookupDelegate(self.lookup, services.entities.table)
        services.entities.table.setItemDelegateForColumn(CONCEPT, self.delegate)
        services.curation.propose_concepts = self._propose

    def _propose(self, before: Sequence[Span], after: list[Span], text: str) -> list[Span]:
        if not self.lookup.ready:
            if accepted_without_id(before, after):
                self.services.show_status(f"Accepted; no concept id proposed: {LOADING} (F2 adds one)")
            return after
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
