"""The main window's own commands: each registered by id with its keys and placed in
its menu (the menu bar reads in the order they are registered here), and the main
toolbar. Kept apart from the window's assembly and wiring (main_window.py); the
features installed after it (adjudication, review queue, ...) add their own through
the same registry (window_api)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel

from .dialogs.about import show_about
from .window_api import WINDOW, ActionRegistry, Docks

if TYPE_CHECKING:  # pragma: no cover
    from PySide6.QtGui import QUndoStack

    from .curation import CurationController
    from .jobs import Job
    from .keyboard import CurationKeys
    from .widgets.documents_panel import DocumentsPanel
    from .widgets.model_picker import ModelPicker

# The top menus, in the menu bar's order (a feature's own menu goes before Help).
MENUS = (("file", "&File"), ("edit", "&Edit"), ("curate", "&Curate"), ("model", "&Model"), ("view", "&View"),
         ("help", "&Help"))


class CommandHost(Protocol):
    """What the window's commands call: the main window is one."""

    curation: CurationController
    documents: DocumentsPanel
    picker: ModelPicker
    stack: QUndoStack

    def open_files_dialog(self) -> None: ...
    def open_folder_dialog(self) -> None: ...
    def open_project_dialog(self) -> None: ...
    def fetch_dialog(self) -> None: ...
    def save(self) -> bool: ...
    def save_as(self) -> bool: ...
    def export_dialog(self) -> None: ...
    def close(self) -> bool: ...
    def undo(self) -> None: ...
    def redo(self) -> None: ...
    def find(self) -> None: ...
    def settings_dialog(self) -> None: ...
    def toggle_reviewed(self) -> None: ...
    def next_needing_review(self) -> None: ...
    def tag_document(self) -> None: ...
    def tag_all(self) -> None: ...
    def refresh_models(self, select: str | None = None) -> Job: ...
    def training_dialog(self, kind: str) -> None: ...
    def leftovers_dialog(self) -> None: ...
    def show_shortcuts(self) -> None: ...


def redo_keys() -> list[QKeySequence]:
    """Redo: Ctrl+Y and Ctrl+Shift+Z everywhere, and the platform's own keys, each once.
    Binding a key twice (the platform's Redo is Ctrl+Y on Windows) makes Qt call it
    ambiguous and do nothing. Only keys with Ctrl (Cmd on a Mac): a keyboard's
    dedicated Redo key, which X11 binds, showed in the help as "Redo", as if it were a
    key combination."""
    keys: list[QKeySequence] = []
    for key in [QKeySequence("Ctrl+Y"), QKeySequence("Ctrl+Shift+Z"),
                *QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)]:
        if key.count() != 1 or not key[0].keyboardModifiers() & Qt.KeyboardModifier.ControlModifier:
            continue
        if all(k.toString() != key.toString() for k in keys):
            keys.append(key)
    return keys


def _platform_or(standard: QKeySequence.StandardKey, fallback: str):
    # Some platforms bind no key to Quit or Preferences: Ctrl+Q and Ctrl+, then.
    return standard if QKeySequence(standard).count() else fallback


def build_commands(window: CommandHost, actions: ActionRegistry, keys: CurationKeys) -> None:
    """The window's commands, each a QAction with its key on the window (so its key
    works wherever the focus is) or, for the curation keys, on the reading view and the
    entity table; and the menus they are in."""
    for menu_id, title in MENUS:
        actions.menu(menu_id, title)
    K = QKeySequence.StandardKey
    add = actions.add
    add("file.open", "&Open files…", window.open_files_dialog, K.Open, tip="Open abstracts", menu="file")
    add("file.open_folder", "Open &folder…", window.open_folder_dialog, "Ctrl+Shift+O", menu="file")
    add("file.fetch", "Fetch from Pub&Med…", window.fetch_dialog, tip="Fetch abstracts by PMID or query", menu="file")
    add("file.open_project", "Open &project…", window.open_project_dialog, menu="file")
    add("file.save", "&Save project", window.save, K.Save, menu="file", section=True)
    add("file.save_as", "Save project &as…", window.save_as, K.SaveAs, menu="file")
    add("file.export", "&Export…", window.export_dialog, "Ctrl+E", menu="file")
    add("file.quit", "&Quit", window.close, _platform_or(K.Quit, "Ctrl+Q"), menu="file", section=True)
    _undo_redo(window, actions)
    add("edit.find", "&Find document…", window.find, K.Find, menu="edit", section=True)
    add("edit.preferences", "&Preferences…", window.settings_dialog, _platform_or(K.Preferences, "Ctrl+,"),
        menu="edit", section=True)
    _curation_keys(actions, keys)
    add("curate.accept_all", "Accept all suggestions", lambda: window.curation.accept(None), "Ctrl+Return",
        menu="curate", section=True)
    add("curate.reject_all", "Reject all suggestions", lambda: window.curation.reject(None), "Ctrl+Shift+Backspace",
        menu="curate")
    add("curate.mark_reviewed", "Mark document reviewed", window.toggle_reviewed, "Ctrl+M",
        tip="Mark the document reviewed (again: reopen it for review)", menu="curate", section=True)
    add("curate.next_needing_review", "Next document needing review", window.next_needing_review, "Ctrl+R",
        menu="curate")
    add("curate.next_document", "Next document", lambda: window.documents.step(1), "Ctrl+PgDown", menu="curate",
        section=True)
    add("curate.previous_document", "Previous document", lambda: window.documents.step(-1), "Ctrl+PgUp",
        menu="curate")
    add("model.tag_document", "&Tag document", window.tag_document, "Ctrl+T",
        tip="Tag the document being read with the chosen model", menu="model")
    add("model.tag_all", "Tag &all", window.tag_all, "Ctrl+Shift+T",
        tip="Tag every document (or the selected ones) with the chosen model", menu="model")
    add("model.distill", "&Distil a student…", lambda: window.training_dialog("distill"), menu="model", section=True)
    add("model.fine_tune", "&Fine-tune a teacher…", lambda: window.training_dialog("teacher"), menu="model")
    add("model.interrupted_runs", "&Interrupted runs…", window.leftovers_dialog,
        tip="Resume or delete the checkpoints of cancelled training runs", menu="model")
    add("model.refresh", "Refresh models", lambda: window.refresh_models(), menu="model", section=True)
    add("help.shortcuts", "&Keyboard shortcuts", window.show_shortcuts, "F1", menu="help")
    add("help.about", "&About FastBioNER Studio", lambda: show_about(actions.host), menu="help")


def _undo_redo(window: CommandHost, actions: ActionRegistry) -> None:
    undo = window.stack.createUndoAction(actions.host, "&Undo")
    undo.setShortcut(QKeySequence.StandardKey.Undo)
    redo = window.stack.createRedoAction(actions.host, "&Redo")
    redo.setShortcuts(redo_keys())
    # Undo and redo keep the curator on the entity they changed (CurationKeys.history).
    for action, step, name in ((undo, window.undo, "Undo"), (redo, window.redo, "Redo")):
        action.triggered.disconnect()
        action.triggered.connect(step)
        action.setProperty("help_name", name)  # the help page's name, not "Undo Relabel as …"
    actions.adopt("edit.undo", undo, scope=WINDOW, menu="edit")  # window-wide, wherever the focus is
    actions.adopt("edit.redo", redo, scope=WINDOW, menu="edit")


def _curation_keys(actions: ActionRegistry, keys: CurationKeys) -> None:
    """The curation keys (made by CurationKeys, live in the reading view and the entity
    table) under their ids, in the Curate menu."""
    named = (("next_entity", keys.next_entity), ("previous_entity", keys.previous_entity), None,
             ("accept", keys.accept), ("reject", keys.reject), ("delete", keys.delete),
             ("edit_concept", keys.edit_concept), None,
             *((f"label.{i + 1}", a) for i, a in enumerate(keys.label_actions)))
    for item in named:
        if item is None:
            actions.separator("curate")
        else:
            actions.adopt(f"curate.{item[0]}", item[1], menu="curate")
    actions.menu("curate/exact", "Label the exact selection")
    for i, action in enumerate(keys.exact_label_actions):
        actions.adopt(f"curate.exact_label.{i + 1}", action, menu="curate/exact")
    actions.menu("curate/boundary", "Boundary")
    for name in ("extend_end", "shrink_end", "extend_start", "shrink_start"):
        actions.adopt(f"curate.{name}", getattr(keys, name), menu="curate/boundary")


def build_toolbar(window: CommandHost, actions: ActionRegistry, docks: Docks) -> None:
    """The View menu's docks and the main toolbar over the commands of :func:`build_commands`."""
    for name in ("documents", "model-card", "jobs"):
        actions.menu("view").addAction(docks[name].toggleViewAction())
    tools = actions.host.addToolBar("Main")
    tools.setObjectName("main-toolbar")
    tools.addAction(actions["file.open"])
    tools.addAction(actions["file.save"])
    tools.addSeparator()
    # Short toolbar buttons; the Edit menu's items name the command undone.
    for text, slot, signal in (("Undo", window.undo, window.stack.canUndoChanged),
                               ("Redo", window.redo, window.stack.canRedoChanged)):
        button = tools.addAction(text, slot)
        button.setEnabled(False)
        signal.connect(button.setEnabled)
    tools.addSeparator()
    tools.addWidget(QLabel(" Model: "))
    tools.addWidget(window.picker)
    tools.addAction(actions["model.tag_document"])
    tools.addAction(actions["model.tag_all"])
    tools.addSeparator()
    tools.addAction(actions["model.distill"])

