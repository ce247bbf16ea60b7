"""What the window offers the features installed into it (adjudication, concept
lookup, occurrences, relations, suggestion keys, review queue, Improve the model):
its commands by id, its menus and docks, and :class:`WindowServices`, the one object
each feature's ``install(services)`` is handed. A feature never imports the main
window, so it reaches only what is named here, and the window is free to change the
rest (napari's app-model idea, much reduced).

Commands are registered under a string id ("file.open", "curate.accept", ...): the
id, not an attribute set on the window, is how tests and other features find an
action; an id taken twice is an error, and the tests hold every menu command's keys
to be distinct. Keys that live only inside one panel (the review queue's A and X)
are that panel's own and are not registered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QWidget

if TYPE_CHECKING:  # pragma: no cover
    from PySide6.QtGui import QUndoStack

    from .curation import CurationController
    from .jobs import Job, JobManager
    from .keyboard import CurationKeys
    from .models.workspace import Workspace
    from .project import ProjectController
    from .settings import AppSettings
    from .widgets.document_view import DocumentView
    from .widgets.documents_panel import DocumentsPanel
    from .widgets.entity_panel import EntityPanel

# Where a command's keys work: anywhere in the window, or only where curation
# happens (the reading view and the entity table, so typing in a field is never a command).
WINDOW = "window"
CURATION = "curation"
HELP_MENU = "help"  # menus added later go before it, as menus go


class ActionRegistry:
    """The window's commands by id, and the menus they are placed in (top menus by
    id, "file", submenus by path, "curate/boundary")."""

    def __init__(self, host: QMainWindow, curation_widgets: Sequence[QWidget] = ()):
        self.host = host
        self.curation_widgets = tuple(curation_widgets)
        self._actions: dict[str, QAction] = {}
        self._menus: dict[str, QMenu] = {}

    # Commands ---------------------------------------------------------------------
    def add(self, id: str, text: str, slot: Callable, shortcut=None, *, tip: str = "", scope: str = WINDOW,
            menu: str | None = None, section: bool = False, before: str | None = None,
            after: str | None = None) -> QAction:
        """A new command: ``shortcut`` is a key (a string or a standard key) or a list of
        keys; see :meth:`adopt` for the rest."""
        action = QAction(text, self.host)
        if isinstance(shortcut, (list, tuple)):
            action.setShortcuts([QKeySequence(k) for k in shortcut])
        elif shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        return self.adopt(id, action, scope=scope, menu=menu, section=section, before=before, after=after)

    def adopt(self, id: str, action: QAction, *, scope: str | None = None, menu: str | None = None,
              section: bool = False, before: str | None = None, after: str | None = None) -> QAction:
        """Register an action made elsewhere (the undo stack's, a panel's) under ``id``.
        ``scope``: WINDOW (its keys work wherever the focus is), CURATION (in the
        reading view and the entity table), None (left as its maker set it). ``menu``:
        the menu it goes in, at the end (after a separator with ``section``), or
        just before or after the command of another id."""
        if id in self._actions:
            raise ValueError(f"the command id {id!r} is taken")
        self._actions[id] = action
        action.setObjectName(id)
        if scope == WINDOW:
            self.host.addAction(action)
        elif scope == CURATION:
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            for widget in self.curation_widgets:
                widget.addAction(action)
        elif scope is not None:
            raise ValueError(f"unknown scope {scope!r}")
        if menu is not None:
            self.place(action, menu, section=section, before=before, after=after)
        return action

    def __getitem__(self, id: str) -> QAction:
        return self._actions[id]

    def __contains__(self, id: object) -> bool:
        return id in self._actions

    def __iter__(self) -> Iterator[str]:
        return iter(self._actions)

    def __len__(self) -> int:
        return len(self._actions)

    def items(self):
        return self._actions.items()

    # Menus ------------------------------------------------------------------------
    def menu(self, id: str, title: str | None = None) -> QMenu:
        """The menu ``id``, made (titled ``title``) when it is new: a top menu goes
        before Help when there is one, a submenu ("curate/boundary") at its parent's end."""
        if id in self._menus:
            return self._menus[id]
        if title is None:
            raise KeyError(f"no menu {id!r}")
        parent, _, _name = id.rpartition("/")
        if parent:
            menu = self.menu(parent).addMenu(title)
        else:
            bar = self.host.menuBar()
            menu = QMenu(title, bar)
            help_menu = self._menus.get(HELP_MENU)
            if help_menu is not None:
                bar.insertMenu(help_menu.menuAction(), menu)
            else:
                bar.addMenu(menu)
        self._menus[id] = menu
        return menu

    def separator(self, menu: str) -> None:
        self.menu(menu).addSeparator()

    def place(self, action: QAction, menu: str, *, section: bool = False, before: str | None = None,
              after: str | None = None) -> None:
        target = self.menu(menu)
        if before is not None:
            target.insertAction(self[before], action)
            return
        if after is not None:
            shown = target.actions()
            i = shown.index(self[after]) + 1
            if i < len(shown):
                target.insertAction(shown[i], action)
            else:
                target.addAction(action)
            return
        if section:
            target.addSeparator()
        target.addAction(action)


class Docks:
    """The window's docks by name (their object names, which the saved layout keys on)."""

    def __init__(self, host: QMainWindow, on_moved: Callable[[], None]):
        self.host = host
        self._on_moved = on_moved
        self._docks: dict[str, QDockWidget] = {}

    def add(self, name: str, title: str, widget: QWidget, area: Qt.DockWidgetArea, *,
            hidden: bool = False) -> QDockWidget:
        if name in self._docks:
            raise ValueError(f"the dock name {name!r} is taken")
        dock = QDockWidget(title, self.host)
        dock.setObjectName(name)
        dock.setWidget(widget)
        # A dock opened or moved beside the reading view gives way to it (layout_fit).
        dock.visibilityChanged.connect(lambda _shown: self._on_moved())
        dock.dockLocationChanged.connect(lambda _area: self._on_moved())
        self.host.addDockWidget(area, dock)
        if hidden:
            dock.hide()
        self._docks[name] = dock
        return dock

    def __getitem__(self, name: str) -> QDockWidget:
        return self._docks[name]

    def __contains__(self, name: object) -> bool:
        return name in self._docks


class WindowServices(QObject):
    """What a feature's ``install(services)`` may use of the window, and all of it: the
    documents and their undo stack, the jobs, the panels a curator works in, the
    commands, menus and docks, and the status bar. ``host`` is the window as Qt sees
    it (a dialog's parent, a dock's placement), never the app's own class."""

    def __init__(self, host: QMainWindow, *, workspace: Workspace, stack: QUndoStack, jobs: JobManager,
                 settings: AppSettings, projects: ProjectController, curation: CurationController,
                 view: DocumentView, entities: EntityPanel, documents: DocumentsPanel, keys: CurationKeys,
                 commands: ActionRegistry, docks: Docks, features: dict[str, Any],
                 current_row: Callable[[], int], current_model: Callable[[], str],
                 offer_model: Callable[[Job, object], None], undo: Callable[[], None], tagging: Any = None):
        super().__init__(host)
        self.host = host
        self.workspace, self.stack, self.jobs, self.settings = workspace, stack, jobs, settings
        self.projects, self.curation = projects, curation
        self.view, self.entities, self.documents, self.keys = view, entities, documents, keys
        self.commands, self.docks = commands, docks
        self._features = features
        self._current_row, self._current_model = current_row, current_model
        self._offer_model, self._undo = offer_model, undo
        self.tagging = tagging  # the TaggingController (tagging runs merged as one undo step each)

    @property
    def row(self) -> int:
        """The workspace row of the document being read (-1: none)."""
        return self._current_row()

    def current_model(self) -> str:
        """The model chosen in the toolbar ("" when none is)."""
        return self._current_model()

    def offer_model(self, job: Job, result: object) -> None:
        """Offer the model a finished job registered (its card; never a silent switch)."""
        self._offer_model(job, result)

    def undo(self) -> None:
        """Undo as Ctrl+Z does: the curator stays on the entity the step changed."""
        self._undo()

    def show_status(self, text: str, ms: int = 10000) -> None:
        self.host.statusBar().showMessage(text, ms)

    def add_action(self, id: str, text: str, slot: Callable, shortcut=None, **where) -> QAction:
        return self.commands.add(id, text, slot, shortcut, **where)

    def action(self, id: str) -> QAction:
        return self.commands[id]

    def menu(self, id: str, title: str | None = None) -> QMenu:
        return self.commands.menu(id, title)

    def add_dock(self, name: str, title: str, widget: QWidget, area: Qt.DockWidgetArea, *,
                 hidden: bool = True, view_menu: bool = True) -> QDockWidget:
        """A dock (hidden until asked for), its show/hide in the View menu with ``view_menu``."""
        dock = self.docks.add(name, title, widget, area, hidden=hidden)
        if view_menu:
            self.menu("view").addAction(dock.toggleViewAction())
        return dock

    def dock(self, name: str) -> QDockWidget:
        return self.docks[name]

    def feature(self, name: str) -> Any:
        """Another installed feature, by its module's name (None when it is not
        installed, or not yet): what it offers is its own affair, hence Any."""
        return self._features.get(name)
