"""Compare and adjudicate: File > Compare with another annotation… reads another
curator's version of the open documents; the documents panel shows each document's
agreement; the Adjudication dock walks every difference, and each decision (keep
mine, take theirs, keep both, drop both, move a side's boundary) is one undo step.

"Mine" is the document as it stands (gold, accepted and added entities, never pending
suggestions); the rules are the core's (:mod:`fastbioner.curate.adjudication`). A document
whose differences are all decided becomes reviewed, so it exports like any reviewed
work. :func:`install` hooks all of it into the main window.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from fastbioner.curate import adjudication as rules
from fastbioner.curate.agreement import ONLY_A, ONLY_B, OTHER_BOUNDARY, OTHER_LABEL
from fastbioner.io.documents import Document, Span

from .adjudication_session import AdjudicationSession, Comparison, comparison_job

if TYPE_CHECKING:  # pragma: no cover
    from .window_api import WindowServices

# The kinds of difference as the queue names them (mine is A, theirs B).
KIND_NAMES = {ONLY_A: "only mine", ONLY_B: "only theirs", OTHER_LABEL: "other label",
              OTHER_BOUNDARY: "other boundaries"}


def _span_text(doc: Document, span: Span | None) -> str:
    return "—" if span is None else f"{doc.text[span.start:span.end]}  [{span.label}]"


class AdjudicationPanel(QWidget):
    """The queue of the document being read: one line per difference (kind, mine,
    theirs, decision) and the decision keys, live when the queue has the focus."""

    rowRequested = Signal(int)      # go to this workspace row
    spanFocused = Signal(object, object)   # the item's span in the document (or None), theirs (or None)

    def __init__(self, session: AdjudicationSession, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.row = -1
        self.side = rules.MINE
        self.summary = QLabel("Nothing compared yet: File > Compare with another annotation…")
        self.summary.setWordWrap(True)
        self.queue = QTreeWidget()
        self.queue.setColumnCount(4)
        self.queue.setHeaderLabels(["Difference", "Mine", "Theirs", "Decision"])
        self.queue.setRootIsDecorated(False)
        self.queue.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.queue.setAlternatingRowColors(True)
        header = self.queue.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in enumerate((130, 260, 260)):
            header.resizeSection(col, width)
        self.queue.currentItemChanged.connect(self._current_changed)
        self.side_label = QLabel()
        self.commands: dict[str, QAction] = {}  # by name, in the Adjudicate menu's order
        C = rules
        self.keep_mine = self._action("keep_mine", "Keep mine", "M", lambda: self.decide(C.MINE))
        self.take_theirs = self._action("take_theirs", "Take theirs", "T", lambda: self.decide(C.THEIRS))
        self.keep_both = self._action("keep_both", "Keep both", "B", lambda: self.decide(C.BOTH))
        self.drop_both = self._action("drop_both", "Drop both", "D", lambda: self.decide(C.NEITHER))
        self.switch_side = self._action("switch_side", "Boundary keys: switch mine/theirs", "S", self.toggle_side)
        K = Qt.Key
        self.start_left = self._action("start_left", "Boundary: start a token left", K.Key_BracketLeft,
                                       lambda: self.move("start", -1))
        self.start_right = self._action("start_right", "Boundary: start a token right", K.Key_BracketRight,
                                        lambda: self.move("start", 1))
        self.end_left = self._action("end_left", "Boundary: end a token left", K.Key_Comma,
                                     lambda: self.move("end", -1))
        self.end_right = self._action("end_right", "Boundary: end a token right", K.Key_Period,
                                      lambda: self.move("end", 1))
        self.next_document = self._action("next_document", "Next document with differences", "J", self.go_next)
        buttons = QHBoxLayout()
        for action in (self.keep_mine, self.take_theirs, self.keep_both, self.drop_both):
            button = QPushButton(f"{action.text()} ({action.shortcut().toString()})")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)   # the queue keeps the focus
            button.clicked.connect(action.trigger)
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.queue, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.side_label)
        self._update_side()
        session.changed.connect(self._session_changed)

    def _action(self, name: str, text: str, key, slot: Callable[[], object]) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(key))
        # Only while the queue has the focus: typing elsewhere never decides anything.
        action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        action.triggered.connect(slot)
        self.queue.addAction(action)
        self.commands[name] = action
        return action

    # Showing -------------------------------------------------------------------
    def show_row(self, row: int) -> None:
        # Another document opens on its first difference left, never on the place the
        # previous one's queue was at.
        moved, self.row = row != self.row, row
        self._fill(keep=not moved)

    def _session_changed(self, row: int) -> None:
        self.summary.setText(self.session.summary() if self.session.active else
                             "Nothing compared yet: File > Compare with another annotation…")
        if row in (-1, self.row):
            self._fill()

    def _fill(self, keep: bool = True) -> None:
        at = self.current_index() if keep else None
        self.queue.clear()
        items = self.session.items.get(self.row, [])
        if self.row < 0 or not self.session.active:
            return
        doc = self.session.workspace.document(self.row)
        for i, item in enumerate(items):
            decision = self.session.decision(self.row, i)
            line = QTreeWidgetItem([KIND_NAMES[item.kind], _span_text(doc, item.a), _span_text(doc, item.b),
                                    rules.CHOICE_NAMES.get(decision.choice, "")
                                    + (": " + ", ".join(_span_text(doc, s) for s in decision.spans)
                                       if decision.choice.endswith(rules.BOUNDARY) else "")])
            line.setData(0, Qt.ItemDataRole.UserRole, i)
            if decision.choice:
                for col in range(4):
                    line.setForeground(col, self.palette().placeholderText())
            self.queue.addTopLevelItem(line)
        if items:
            self.select(at if at is not None and at < len(items) else self._first_undecided(0))

    def current_index(self) -> int | None:
        item = self.queue.currentItem()
        return None if item is None else item.data(0, Qt.ItemDataRole.UserRole)

    def select(self, index: int | None) -> None:
        if index is not None and 0 <= index < self.queue.topLevelItemCount():
            self.queue.setCurrentItem(self.queue.topLevelItem(index))

    def _first_undecided(self, start: int) -> int:
        n = len(self.session.items.get(self.row, []))
        for k in range(n):
            i = (start + k) % n
            if (self.row, i) not in self.session.decisions:
                return i
        return min(start, n - 1)

    def _current_changed(self, current, _previous) -> None:
        index = None if current is None else current.data(0, Qt.ItemDataRole.UserRole)
        # While the queue is emptied (a new comparison), its lines outlive the items.
        if index is None or index >= len(self.session.items.get(self.row, ())):
            return
        decision = self.session.decision(self.row, index)
        # The span the decision put in the document, if any, is shown selected there;
        # else their mention, as a text selection (it is not in the document).
        self.spanFocused.emit(decision.spans[0] if decision.spans else None, self.session.items[self.row][index].b)

    # Deciding ------------------------------------------------------------------
    def decide(self, choice: str) -> None:
        index = self.current_index()
        if index is None or self.row < 0:
            return
        self.session.decide(self.row, index, choice)
        self._advance(index)

    def move(self, edge: str, tokens: int) -> None:
        index = self.current_index()
        if index is not None and self.row >= 0:
            self.session.move_boundary(self.row, index, self.side, edge, tokens)
            self.select(index)   # a boundary is moved a token at a time: stay on it

    def _advance(self, index: int) -> None:
        """On to the next difference left in this document, else to the next document
        that has some."""
        if self.session.left(self.row):
            self.select(self._first_undecided(index + 1))
        else:
            nxt = self.session.next_row(self.row)
            if nxt >= 0 and nxt != self.row:
                self.rowRequested.emit(nxt)
            else:
                self.select(index)
        self.queue.setFocus()

    def go_next(self) -> None:
        nxt = self.session.next_row(self.row)
        if nxt >= 0:
            self.rowRequested.emit(nxt)

    def toggle_side(self) -> None:
        self.side = rules.THEIRS if self.side == rules.MINE else rules.MINE
        self._update_side()

    def _update_side(self) -> None:
        self.side_label.setText(f"Boundary keys [ ] (start) and , . (end) move {self.side}; S switches.")


def compare_documents_job(path: str, mine: list[Document]):
    """Read another curator's file and compare it with ``mine`` (copies of the open
    documents) in a worker thread: a big file, or a document of thousands of mentions,
    must not freeze the app."""
    def job(on_event, cancel):
        from fastbioner.io.formats import read_documents

        return comparison_job(mine, list(read_documents(path)), Path(path).name)(on_event, cancel)
    return job


class Adjudication(QObject):
    """What :func:`install` adds to the window: the session, its dock and actions."""

    def __init__(self, services: WindowServices):
        super().__init__(services)
        self.services = services
        self.session = AdjudicationSession(services.workspace, services.stack, services.jobs, self)
        self.panel = AdjudicationPanel(self.session)
        self.dock = services.add_dock("adjudication", "Adjudication", self.panel,
                                      Qt.DockWidgetArea.BottomDockWidgetArea,
                                      view_menu=False)  # its show/hide is in the Adjudicate menu
        self.compare_action = services.add_action(
            "file.compare", "Compare with another annotation…", self.compare_dialog,
            tip="Read another curator's version of the open documents and settle the differences",
            menu="file", before="file.export")
        self._job = None
        self._hook_menus()
        self.panel.rowRequested.connect(services.documents.set_current_row)
        self.panel.spanFocused.connect(self._focus_span)
        services.documents.currentRowChanged.connect(self.panel.show_row)
        services.workspace.projectReset.connect(self._reset)
        self.session.changed.connect(self._refresh_documents)

    def _hook_menus(self) -> None:
        menu = self.menu = self.services.menu("adjudicate", "A&djudicate")  # before Help, as menus go
        menu.addAction(self.compare_action)
        menu.addSeparator()
        # The decision keys: the queue's own (they work while it has the focus), by id.
        for name, action in self.panel.commands.items():
            self.services.commands.adopt(f"adjudicate.{name}", action, menu="adjudicate")
        menu.addSeparator()
        menu.addAction(self.dock.toggleViewAction())

    def compare_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.services.host, "Compare with another annotation",
                                              self.services.settings.data_folder)
        if path:
            self.compare_with(path)

    def compare_with(self, path: str):
        """Read ``path`` in the background, then compare; the job (tests wait on it)."""
        s = self.services
        if not len(s.workspace):
            s.show_status("Open the documents first, then compare them")
            return None
        job = s.jobs.start(f"Read {Path(path).name} to compare", compare_documents_job(path, self.session.snapshot()),
                           kind="open")   # it says what it did itself, as opening does
        project = s.workspace.project   # another project opened meanwhile is not the one compared
        job.succeeded.connect(lambda comparison: self._compare(comparison, path)
                              if s.workspace.project is project else None)
        job.failed.connect(lambda message: s.show_status(f"Cannot compare: {message}", 15000))
        self._job = job
        return job

    def _compare(self, comparison: Comparison, path: str) -> None:
        s = self.services
        mine = s.projects.path.stem if s.projects.path is not None else "mine"
        theirs = Path(path).name.split(".")[0] or "theirs"
        if theirs == mine:
            theirs += " (theirs)"
        summary = self.session.apply(comparison, Path(path).name, (mine, theirs))
        self.dock.show()
        self.dock.raise_()
        self.panel.show_row(s.row)
        s.show_status(summary, 15000)
        if s.row not in self.session.items or not self.session.left(s.row):
            self.panel.go_next()
        self.panel.queue.setFocus()

    def _focus_span(self, span: Span | None, theirs: Span | None) -> None:
        s = self.services
        row = self.panel.row
        if row >= 0 and row == s.row:
            doc = s.workspace.document(row)
            hit = next((x for x in doc.spans if span is not None and (x.start, x.end, x.label) ==
                        (span.start, span.end, span.label)), None)
            s.view.select_span(hit)
            s.entities.select_span(hit)
            if hit is None and theirs is not None:
                s.view.select_offsets(theirs.start, theirs.end)

    def _refresh_documents(self, row: int) -> None:
        # A new comparison, or none, adds or removes the agreement column; a document
        # compared again (at once or in a job) shows its new agreement.
        model = self.services.documents.model
        if row < 0:
            model.set_agreement(self.session.cell if self.session.active else None)
        else:
            model.refresh_agreement(row)

    def _reset(self) -> None:
        # Another project: its documents are not the ones compared (the project
        # controller empties the undo stack, decisions included).
        if self.session.active:
            self.session.clear()


def install(services: WindowServices) -> Adjudication:
    return Adjudication(services)
