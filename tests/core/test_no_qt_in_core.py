"""The core library never imports Qt (or the app): the CLI and servers use it headless."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import fastbioner

CORE = Path(fastbioner.__file__).resolve().parent
FORBIDDEN = ("PySide6", "shiboken6", "PyQt5", "PyQt6", "fastbioner_gui", "pyqtgraph")


def forbidden_imports(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        found += [(node.lineno, n) for n in names if n.split(".")[0] in FORBIDDEN]
    return found


def test_the_scan_catches_every_way_of_importing_qt():
    src = ("import os\nimport PySide6.QtCore\nfrom shiboken6 import x\n"
           "importlib.import_module('fastbioner_gui.app')\nfrom .formats import conll\n")
    assert forbidden_imports(src) == [(2, "PySide6.QtCore"), (3, "shiboken6"), (4, "fastbioner_gui.app")]


def test_no_core_source_file_imports_qt():
    offenders = [f"{path.relative_to(CORE.parent)}:{line}: imports {name}"
                 for path in sorted(CORE.rglob("*.py"))
                 for line, name in forbidden_imports(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_importing_every_core_module_loads_no_qt():
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import fastbioner\n"
        "names = [m.name for m in pkgutil.walk_packages(fastbioner.__path__, 'fastbioner.')]\n"
        "for n in names: importlib.import_module(n)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(json.dumps({'modules': len(names), 'qt': bad}))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["modules"] > 10
    assert result["qt"] == []
