"""The window as features see it (fastbioner_gui/window_api.py): its commands by id,
each key bound once, and features that plug in through ``install(services)`` without
importing the main window (it imported them and they it: a circle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel

APP = Path(__file__).resolve().parents[2] / "fastbioner_gui"
# The app's entry point builds the window; the window is itself.
MAY_IMPORT_THE_WINDOW = {"app.py", "main_window.py"}


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports, anywhere in it (type-only imports included)."""
    package = ".".join(("fastbioner_gui", *path.parent.relative_to(APP).parts))
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def test_no_module_but_the_app_imports_the_main_window():
    importers = sorted(str(p.relative_to(APP)) for p in APP.rglob("*.py")
                       if p.name not in MAY_IMPORT_THE_WINDOW and "fastbioner_gui.main_window" in _imports(p))
    assert importers == []


def test_no_module_sets_attributes_on_the_window():
    """Commands are registered by id, not assigned onto the window (``window.open_action = ...``)."""
    found = []
    for path in APP.rglob("*.py"):
        if path.name == "main_window.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "window":
                        found.append(f"{path.name}:{node.lineno} window.{t.attr}")
    assert found == []


def _menu_actions(actions, out):
    for action in actions:
        if action.menu() is not None:
            _menu_actions(action.menu().actions(), out)
        elif not action.isSeparator():
            out.append(action)
    return out


def test_every_menu_command_with_a_key_is_registered_and_each_key_is_bound_once(window):
    registered = {id(window.commands[name]): name for name in window.commands}
    keyed = [a for a in _menu_actions(window.menuBar().actions(), []) if a.shortcuts()]
    assert [a.text() for a in keyed if id(a) not in registered] == []
    bound: dict[str, list[str]] = {}
    for name, action in window.commands.items():
        for key in action.shortcuts():
            bound.setdefault(key.toString(), []).append(name)
    assert {key: names for key, names in bound.items() if len(names) > 1} == {}
    # Names say where a command lives; a few of the keys curators rely on.
    expected = {"file.open": QKeySequence(QKeySequence.StandardKey.Open).toString(), "file.export": "Ctrl+E",
                "edit.undo": QKeySequence(QKeySequence.StandardKey.Undo).toString(), "curate.accept": "A",
                "curate.mark_reviewed": "Ctrl+M", "curate.occurrences": "Ctrl+Shift+A",
                "curate.add_relation": "Ctrl+L", "curate.next_undecided": "U", "curate.review_queue": "Ctrl+Shift+R",
                "model.tag_all": "Ctrl+Shift+T", "adjudicate.keep_mine": "M", "help.shortcuts": "F1"}
    assert {name: window.commands[name].shortcut().toString() for name in expected} == expected
    assert not [name for name in vars(window) if name.endswith("_action")]


def test_an_id_is_taken_once(window):
    with pytest.raises(ValueError, match="file.open"):
        window.services.add_action("file.open", "Open again", lambda: None)
    with pytest.raises(ValueError, match="relations"):
        window.services.add_dock("relations", "Relations again", QLabel(), Qt.DockWidgetArea.BottomDockWidgetArea)


def test_a_feature_plugs_in_through_the_services_alone(window, qtbot):
    """What a new feature does: a dock, a command with its key in a menu of its own
    (before Help), a status message; and the command is found by its id."""
    said = []

    def install(services):
        dock = services.add_dock("hello", "Hello", QLabel("hello"), Qt.DockWidgetArea.BottomDockWidgetArea)

        def greet():
            dock.show()
            services.show_status(f"{len(services.workspace)} documents")
            said.append(services.row)
        services.menu("tools", "&Tools")
        services.add_action("tools.hello", "Say hello", greet, "Ctrl+Shift+H", menu="tools")

    install(window.services)
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[-2:] == ["&Tools", "&Help"]
    assert window.services.dock("hello").toggleViewAction() in window.commands.menu("view").actions()
    window.commands["tools.hello"].trigger()
    assert window.services.dock("hello").isVisible() and said == [-1]
    assert window.statusBar().currentMessage() == "0 documents"


def test_features_find_each_other_by_name(window):
    assert window.services.feature("concept_lookup") is window.features["concept_lookup"]
    assert window.services.feature("no such feature") is None
