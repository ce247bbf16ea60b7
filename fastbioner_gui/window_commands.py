"""The main window's commands: its actions and their keys, the menu bar and the main
toolbar. Kept apart from the window's assembly and wiring (main_window.py); the
features installed after it (adjudication, review queue, ...) add their own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel

from .dialogs.about import show_about
from .keyboard import CurationKeys

if TYPE_CHECKING:
    from .main_window import MainWindow


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


def build_actions(window: MainWindow) -> None:
    """The window's commands, each a QAction with its key, on the window (so its key
    works wherever the focus is)."""
    K = QKeySequence.StandardKey
    window.open_action = window._action("&Open files…", window.open_files_dialog, K.Open, "Open abstracts")
    window.open_folder_action = window._action("Open &folder…", window.open_folder_dialog, "Ctrl+Shift+O")
    window.open_project_action = window._action("Open &project…", window.open_project_dialog)
    window.fetch_action = window._action("Fetch from Pub&Med…", window.fetch_dialog,
                                     tip="Fetch abstracts by PMID or query")
    window.save_action = window._action("&Save project", window.save, K.Save)
    window.save_as_action = window._action("Save project &as…", window.save_as, K.SaveAs)
    window.export_action = window._action("&Export…", window.export_dialog, "Ctrl+E")
    # Some platforms bind no key to Quit or Preferences: Ctrl+Q and Ctrl+, then.
    window.quit_action = window._action("&Quit", window.close, K.Quit if QKeySequence(K.Quit).count() else "Ctrl+Q")
    window.undo_action = window.stack.createUndoAction(window, "&Undo")
    window.undo_action.setShortcut(K.Undo)
    window.redo_action = window.stack.createRedoAction(window, "&Redo")
    window.redo_action.setShortcuts(redo_keys())
    # Undo and redo keep the curator on the entity they changed (CurationKeys.history).
    for action, step, name in ((window.undo_action, window.undo, "Undo"), (window.redo_action, window.redo, "Redo")):
        action.triggered.disconnect()
        action.triggered.connect(step)
        action.setProperty("help_name", name)  # the help page's name, not "Undo Relabel as …"
    window.addActions([window.undo_action, window.redo_action])  # window-wide, wherever the focus is
    window.find_action = window._action("&Find document…", window.find, K.Find)
    window.accept_all_action = window._action("Accept all suggestions", lambda: window.curation.accept(None),
                                          "Ctrl+Return")
    window.reject_all_action = window._action("Reject all suggestions", lambda: window.curation.reject(None),
                                          "Ctrl+Shift+Backspace")
    window.mark_reviewed_action = window._action("Mark document reviewed", window.toggle_reviewed, "Ctrl+M",
                                             "Mark the document reviewed (again: reopen it for review)")
    window.next_action = window._action("Next document", lambda: window.documents.step(1), "Ctrl+PgDown")
    window.prev_action = window._action("Previous document", lambda: window.documents.step(-1), "Ctrl+PgUp")
    window.next_review_action = window._action("Next document needing review", window.next_needing_review, "Ctrl+R")
    window.keys = CurationKeys(window.view, window.entities, window.curation, window)
    window.tag_doc_action = window._action("&Tag document", window.tag_document, "Ctrl+T",
                                       "Tag the document being read with the chosen model")
    window.tag_all_action = window._action("Tag &all", window.tag_all, "Ctrl+Shift+T",
                                       "Tag every document (or the selected ones) with the chosen model")
    window.refresh_models_action = window._action("Refresh models", lambda: window.refresh_models())
    window.distill_action = window._action("&Distil a student…", lambda: window.training_dialog("distill"))
    window.train_action = window._action("&Fine-tune a teacher…", lambda: window.training_dialog("teacher"))
    window.leftovers_action = window._action("&Interrupted runs…", window.leftovers_dialog,
                                         tip="Resume or delete the checkpoints of cancelled training runs")
    window.settings_action = window._action("&Preferences…", window.settings_dialog,
                                        K.Preferences if QKeySequence(K.Preferences).count() else "Ctrl+,")
    window.about_action = window._action("&About FastBioNER Studio", lambda: show_about(window))
    window.shortcuts_action = window._action("&Keyboard shortcuts", window.show_shortcuts, "F1")

def build_menus(window: MainWindow) -> None:
    """The menu bar and the main toolbar over the actions of :func:`build_actions`."""
    bar = window.menuBar()
    file = bar.addMenu("&File")
    for a in (window.open_action, window.open_folder_action, window.fetch_action, window.open_project_action,
              None, window.save_action,
              window.save_as_action, window.export_action, None, window.quit_action):
        file.addSeparator() if a is None else file.addAction(a)
    edit = bar.addMenu("&Edit")
    for a in (window.undo_action, window.redo_action, None, window.find_action, None, window.settings_action):
        edit.addSeparator() if a is None else edit.addAction(a)
    curate = bar.addMenu("&Curate")
    keys = window.keys
    for a in (keys.next_entity, keys.previous_entity, None, keys.accept, keys.reject, keys.delete,
              keys.edit_concept, None, *keys.label_actions):
        curate.addSeparator() if a is None else curate.addAction(a)
    exact = curate.addMenu("Label the exact selection")
    exact.addActions(keys.exact_label_actions)
    boundary = curate.addMenu("Boundary")
    boundary.addActions([keys.extend_end, keys.shrink_end, keys.extend_start, keys.shrink_start])
    for a in (None, window.accept_all_action, window.reject_all_action, None, window.mark_reviewed_action,
              window.next_review_action, None, window.next_action, window.prev_action):
        curate.addSeparator() if a is None else curate.addAction(a)
    model = bar.addMenu("&Model")
    for a in (window.tag_doc_action, window.tag_all_action, None, window.distill_action, window.train_action,
              window.leftovers_action, None, window.refresh_models_action):
        model.addSeparator() if a is None else model.addAction(a)
    view = bar.addMenu("&View")
    for dock in (window.documents_dock, window.card_dock, window.jobs_dock):
        view.addAction(dock.toggleViewAction())
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(window.shortcuts_action)
    help_menu.addAction(window.about_action)
    tools = window.addToolBar("Main")
    tools.setObjectName("main-toolbar")
    for a in (window.open_action, window.save_action, None):
        tools.addSeparator() if a is None else tools.addAction(a)
    # Short toolbar buttons; the Edit menu's items name the command undone.
    for text, slot, signal in (("Undo", window.undo, window.stack.canUndoChanged),
                               ("Redo", window.redo, window.stack.canRedoChanged)):
        button = tools.addAction(text, slot)
        button.setEnabled(False)
        signal.connect(button.setEnabled)
    tools.addSeparator()
    tools.addWidget(QLabel(" Model: "))
    tools.addWidget(window.picker)
    tools.addAction(window.tag_doc_action)
    tools.addAction(window.tag_all_action)
    tools.addSeparator()
    tools.addAction(window.distill_action)
