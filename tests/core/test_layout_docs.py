"""The README's layout table and the contributing guide's diagram name the core's layers
as the tree and the import-linter contract have them: a package added, renamed or moved
to another layer fails here until the two pages say so."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core" / "fastbioner"


def _packages() -> set[str]:
    return {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}


def _contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)]


def test_every_top_level_module_of_the_core_is_in_a_layer():
    modules = _packages() | {p.stem for p in CORE.glob("*.py") if p.stem != "__init__"}
    assert modules == set(_contract_layers())


def test_the_contributing_diagram_names_every_package():
    text = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    diagram = text.split("```", 2)[1]
    named = set(re.findall(r"(?<!\w)([a-z]+)/", diagram))
    assert _packages() <= named, sorted(_packages() - named)


def test_the_readme_layout_table_names_every_package():
    row = next(l for l in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
               if l.startswith("| `core/fastbioner/`"))
    assert _packages() <= set(re.findall(r"`([a-z]+)/`", row)), row
