"""The research area (``experiments/``) apart from the product, as contracts over the
import graph (every import, the lazy ones inside functions included):

- nothing in the library, the app or the product's tests imports the research area;
- the research area, the product benchmarks (``benchmarks/``) and the maintainers'
  scripts (``scripts/``) use the library through ``import fastbioner`` (names in
  ``fastbioner.__all__``) and ``fastbioner.research`` (the names they need beyond it,
  listed once there), never a module path of the library; what those names import in
  turn is the library's business. The app (``fastbioner_gui``) is not an API: the GUI
  benchmark drives it as the app, and is not held here;
- every name ``fastbioner.research`` lists is used by one of them (a name no longer
  needed goes), and none is also public;
- no module edits ``sys.path``, tests included: pytest's ``pythonpath`` puts the
  shared test helpers on it (issue 50).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import fastbioner
import fastbioner.research

REPO = Path(__file__).resolve().parents[2]
# The folders held to the API: their modules, not their tests (experiments/tests builds
# fixtures from the library's internals, as the product's tests do).
MEASURING = ("experiments", "benchmarks", "scripts")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every absolute import in ``path``, anywhere in the file, and of
    every ``fastbioner.NAME`` / ``fastbioner.research.NAME`` read as an attribute."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Attribute) and _is_name(node.value, "fastbioner") and node.attr != "research":
            out.append(("fastbioner", [node.attr]))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
              and _is_name(node.value.value, "fastbioner") and node.value.attr == "research"):
            out.append(("fastbioner.research", [node.attr]))
    return out


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in (REPO / folder).rglob("*.py")]


def test_the_product_never_imports_the_research_area():
    offenders = [f"{p.relative_to(REPO)}: {module}"
                 for p in _python_files("core", "fastbioner_gui", "tests")
                 for module, _ in _imports(p) if module.split(".")[0] == "experiments"]
    assert offenders == []


def _measuring_modules() -> list[Path]:
    return [p for folder in MEASURING for p in (REPO / folder).glob("*.py")]


def test_research_benchmarks_and_scripts_use_the_api_only():
    allowed = {"fastbioner": set(fastbioner.__all__), "fastbioner.research": set(fastbioner.research.__all__)}
    bad = []
    for path in _measuring_modules():
        for module, names in _imports(path):
            if module in allowed:
                bad += [f"{_module(path)}: {module}.{n}" for n in names
                        if n not in allowed[module] and not (n.startswith("__") and n.endswith("__"))]
            elif module.startswith("fastbioner."):
                bad.append(f"{_module(path)}: {module}")
    assert bad == [], "library internals: use a public name, or list it in fastbioner/research.py"


def test_every_research_name_is_used_and_resolves_and_none_is_public():
    used = {n for path in _measuring_modules() for module, names in _imports(path)
            if module == "fastbioner.research" for n in names}
    assert sorted(set(fastbioner.research.__all__) - used) == [], "no longer needed: remove from fastbioner.research"
    assert sorted(set(fastbioner.research.__all__) & set(fastbioner.__all__)) == []
    for name in fastbioner.research.__all__:
        assert getattr(fastbioner.research, name) is not None, name
    from fastbioner.train.run_progress import diverged_at

    assert fastbioner.research.diverged_at is diverged_at
    assert not hasattr(fastbioner, "diverged_at")  # research plumbing is not the package's


def test_importing_the_research_names_loads_nothing():
    probe = "import sys, fastbioner.research; print(sorted(m for m in sys.modules if m.startswith('fastbioner.')))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "['fastbioner.research']"


def test_the_contract_sees_a_deep_import(tmp_path):
    """The checks above would catch one (they read imports inside functions too, and
    the names read as attributes)."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from fastbioner.train.distill.runner import distill\n"
                      "    import fastbioner.train.training\n"
                      "    fastbioner.diverged_at([])\n    fastbioner.research.move_to(None, None)\n")
    assert _imports(module) == [("fastbioner.train.distill.runner", ["distill"]), ("fastbioner.train.training", []),
                                ("fastbioner", ["diverged_at"]), ("fastbioner.research", ["move_to"])]


SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\+=|=[^=])|syspath_prepend")


def test_no_module_edits_sys_path():
    offenders = [str(p.relative_to(REPO)) for p in _python_files("core", "fastbioner_gui", "experiments",
                                                                    "benchmarks", "scripts", "docs", "tests")
                 if p != Path(__file__).resolve() and SYS_PATH_EDIT.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
