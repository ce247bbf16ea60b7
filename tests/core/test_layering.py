"""The layering, as checked contracts over the import graph (every import, the
lazy ones inside functions included): the library never imports Qt or the app;
inference never reaches training or distillation code; the formats import nothing
above the document model."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core" / "fastbioner"

# What training is: a tagger in use must never need it (the layers contract says the same).
TRAINING = ("fastbioner.train",)
# Where tagging lives: every module of these packages is checked.
INFERENCE_PACKAGES = ("fastbioner.infer", "fastbioner.models")
# Below the formats: the document model and its plain helpers, and the base layer.
FORMATS_MAY_IMPORT = ("fastbioner.io", "fastbioner.base")


def module_name(path: Path) -> str:
    rel = path.relative_to(CORE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, anywhere in the file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # Imports under `if TYPE_CHECKING:` never run (the package's mirror of its lazy names).
    type_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and getattr(block.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            # "from . import x" and "from .pkg import mod" may name submodules
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


GRAPH = {module_name(p): imports_of(p) for p in CORE.rglob("*.py")}


def _known(name: str) -> str | None:
    """The project module an import name refers to (itself, or its package)."""
    while name:
        if name in GRAPH:
            return name
        name = name.rpartition(".")[0]
    return None


def reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        for target in GRAPH.get(mod, ()):
            known = _known(target)
            if known and known not in seen:
                todo.append(known)
    return seen


def test_the_graph_is_read():
    assert "fastbioner.infer.inference" in GRAPH and "fastbioner.train.distill.runner" in GRAPH
    assert "fastbioner.models.modeling" in GRAPH["fastbioner.infer.inference"] or any(
        t.startswith("fastbioner.models.modeling") for t in GRAPH["fastbioner.infer.inference"])


def test_core_never_imports_qt_or_the_app():
    bad = {m: sorted(t for t in targets if t.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "fastbioner_gui",
                                                                "pyqtgraph"))
           for m, targets in GRAPH.items()}
    assert {m: t for m, t in bad.items() if t} == {}


@pytest.mark.parametrize("start", sorted(m for m in GRAPH if _under(m, INFERENCE_PACKAGES)))
def test_inference_never_reaches_training_or_distillation(start):
    reached = sorted(m for m in reachable(start) if _under(m, TRAINING))
    assert reached == [], f"{start} reaches {reached}"


def test_formats_import_nothing_above_the_document_model():
    bad = {}
    for mod, targets in GRAPH.items():
        if not _under(mod, ("fastbioner.io.formats",)):
            continue
        above = sorted(t for t in targets if t.startswith("fastbioner") and not _under(t, FORMATS_MAY_IMPORT))
        if above:
            bad[mod] = above
    assert bad == {}


def test_a_training_import_in_inference_would_be_caught():
    """The check itself can fail: a graph where inference imports the runner is refused."""
    GRAPH["fastbioner.infer.inference"].add("fastbioner.train.distill.runner")
    try:
        assert any(_under(m, TRAINING) for m in reachable("fastbioner.infer.inference"))
    finally:
        GRAPH["fastbioner.infer.inference"].discard("fastbioner.train.distill.runner")


def test_every_module_importing_from_transformers_at_its_top_imports_it_whole_first():
    """transformers' lazy package is not safe to import from two threads at once (the app's
    workers): a module naming transformers at its top imports fastbioner.models.hf, which
    imports it whole, before its own ``from transformers import ...`` line."""
    late = []
    for path in CORE.rglob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        names = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
        first_hf = next((i for i, n in enumerate(names) if isinstance(n, ast.ImportFrom)
                         and n.module == "fastbioner.models" and any(a.name == "hf" for a in n.names)), None)
        for i, n in enumerate(names):
            module = n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
            if (module or "").split(".")[0] == "transformers" and (first_hf is None or first_hf > i):
                late.append(module_name(path))
    assert late == []
