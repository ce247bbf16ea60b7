"""The research area (``experiments/``) apart from the product, as contracts over the
import graph (every import, the lazy ones inside functions included):

- nothing in the library, the app or the product's tests imports the research area;
- the research area uses the library through its public names only (``import
  fastbioner`` and ``from fastbioner import NAME`` with NAME in ``fastbioner.__all__``;
  what those names import in turn is the library's business), but for the modules
  listed in ``STILL_DEEP`` with the exact internals each still reaches: the list can
  only shrink (an entry no longer used fails too);
- no module edits ``sys.path``, tests included: pytest's ``pythonpath`` puts the
  shared test helpers on it (issue 50).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import fastbioner

REPO = Path(__file__).resolve().parents[2]
RESEARCH = REPO / "experiments"

# Research modules that still import library internals: what each reaches and why no
# public call covers it yet. Remove an entry when the module no longer needs it.
STILL_DEEP = {
    # Measures the distillation terms' scales at the first batches: it drives the
    # calibration, capture and loss internals themselves (what it studies).
    "experiments.loss_scales": {"fastbioner.cli", "fastbioner.cli.distill", "fastbioner.train.distill.calibration",
                                "fastbioner.train.distill.data", "fastbioner.train.distill.losses",
                                "fastbioner.train.distill.runner", "fastbioner.base.jobs",
                                "fastbioner.train.training", "fastbioner.train.distill.capture"},
    # Re-decides `--precision auto` from a model's recorded checks for another machine
    # (what a CPU without the chosen mode runs), for the model card.
    "experiments.build_default_model": {"fastbioner.models.precision"},
}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every absolute import in ``path``, anywhere in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [a.name for a in node.names]))
    return out


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in (REPO / folder).rglob("*.py")]


def test_the_product_never_imports_the_research_area():
    offenders = [f"{p.relative_to(REPO)}: {module}"
                 for p in _python_files("core", "fastbioner_gui", "tests")
                 for module, _ in _imports(p) if module.split(".")[0] == "experiments"]
    assert offenders == []


def test_the_research_area_uses_the_public_api_only():
    public = set(fastbioner.__all__)
    deep: dict[str, set[str]] = {}
    bad_names = []
    for path in RESEARCH.glob("*.py"):  # the research modules (experiments/tests builds fixtures)
        name = _module(path)
        for module, names in _imports(path):
            if module == "fastbioner":
                bad_names += [f"{name}: fastbioner.{n}" for n in names if n not in public]
            elif module.startswith("fastbioner."):
                deep.setdefault(name, set()).add(module)
    assert bad_names == [], "names the public API does not export"
    new = {m: sorted(mods - STILL_DEEP.get(m, set())) for m, mods in deep.items() if mods - STILL_DEEP.get(m, set())}
    assert new == {}, "library internals imported by research modules (use or add a public name in fastbioner)"
    gone = {m: sorted(mods - deep.get(m, set())) for m, mods in STILL_DEEP.items() if mods - deep.get(m, set())}
    assert gone == {}, "STILL_DEEP lists imports no longer made: remove them"


def test_the_contract_sees_a_deep_import(tmp_path):
    """The check above would catch one (it reads imports inside functions too)."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from fastbioner.train.distill.runner import distill\n"
                      "    import fastbioner.train.training\n")
    assert [m for m, _ in _imports(module)] == ["fastbioner.train.distill.runner", "fastbioner.train.training"]


SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\+=|=[^=])|syspath_prepend")


def test_no_module_edits_sys_path():
    offenders = [str(p.relative_to(REPO)) for p in _python_files("core", "fastbioner_gui", "experiments",
                                                                    "benchmarks", "scripts", "docs", "tests")
                 if p != Path(__file__).resolve() and SYS_PATH_EDIT.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
