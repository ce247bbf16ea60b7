"""The public API (``import fastbioner``): every documented name resolves, each on
first use only, so tagging never loads the training or distillation code and
``import fastbioner`` loads nothing heavy."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastbioner

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference" / "python-api.md"

PROBE = """
import sys
import fastbioner
for name in sys.argv[1:]:
    getattr(fastbioner, name)
loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("fastbioner."))
print("LOADED:" + ",".join(loaded))
"""


def loaded_after(*names: str) -> set[str]:
    """Modules a fresh interpreter holds after ``import fastbioner`` and reading ``names``."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *names], capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("LOADED:"))
    return set(filter(None, line[len("LOADED:"):].split(",")))


def test_import_loads_nothing_but_the_package():
    assert loaded_after() == set()


def test_tagging_side_never_loads_training_or_distillation():
    loaded = loaded_after("Tagger", "TaggerConfig", "read_documents", "write_documents", "tag_files",
                          "Registry", "default_model", "Document", "Span")
    assert "fastbioner.infer.inference" in loaded  # the probe did load the tagger
    training = sorted(m for m in loaded if m == "fastbioner.train" or m.startswith("fastbioner.train."))
    assert training == []


def test_reading_documents_loads_no_torch():
    loaded = loaded_after("read_documents", "write_documents", "Document")
    assert "fastbioner.io.formats" in loaded and "torch" not in loaded


def test_every_exported_name_resolves_to_its_object():
    from fastbioner.train.distill.runner import distill
    from fastbioner.train.finetune import fine_tune
    from fastbioner.io.formats import read_documents
    from fastbioner.infer.inference import Tagger
    from fastbioner.train.teacher import train_teacher

    for name in fastbioner.__all__:
        assert getattr(fastbioner, name) is not None, name
    assert fastbioner.Tagger is Tagger
    assert fastbioner.read_documents is read_documents
    assert fastbioner.train_teacher is train_teacher
    assert fastbioner.distill_student is distill
    assert fastbioner.fine_tune is fine_tune
    # the subpackage keeps its name: the call is exported as distill_student
    assert fastbioner.train.distill.__name__ == "fastbioner.train.distill"


def test_unknown_names_fail_as_attributes_do():
    with pytest.raises(AttributeError, match="no attribute 'Taggerr'"):
        _ = fastbioner.Taggerr
    with pytest.raises(ImportError):
        exec("from fastbioner import Taggerr", {})
    assert not hasattr(fastbioner, "_private_thing")


def test_dir_lists_the_api():
    assert set(fastbioner.__all__) <= set(dir(fastbioner))


def test_the_app_takes_distillation_vocabulary_from_the_api():
    from fastbioner.train.distill.config import SMALL_SOURCES
    from fastbioner.train.distill.methods import TERM_NAMES

    ns: dict = {}
    exec("from fastbioner import SMALL_SOURCES, TERM_NAMES", ns)
    assert ns["SMALL_SOURCES"] == SMALL_SOURCES and ns["TERM_NAMES"] == TERM_NAMES
    deep_import = re.compile(r"from fastbioner\.distill\.\w+ import [^\n]*\b(SMALL_SOURCES|TERM_NAMES)\b")
    app = (REPO / "fastbioner_gui").rglob("*.py")
    deep = [p.name for p in app if deep_import.search(p.read_text(encoding="utf-8"))]
    assert deep == []


def test_the_type_checking_mirror_names_every_export_from_its_module():
    """Type checkers and editors read the TYPE_CHECKING block, not __getattr__: it must
    import each exported name from the module _EXPORTS gives, and nothing else."""
    tree = ast.parse((REPO / "core" / "fastbioner" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    mirrored = {(a.asname or a.name): (node.module, a.name)
                for node in block.body if isinstance(node, ast.ImportFrom) for a in node.names}
    exported = {name: (module, name) for name, module in fastbioner._EXPORTS.items()}
    exported.update(fastbioner._RENAMED)
    assert mirrored == exported


def test_load_gives_a_tagger_for_a_folder_or_the_default(tmp_path, monkeypatch):
    from tiny_models import make_tiny_model

    folder = make_tiny_model(tmp_path / "tiny", ["O", "B-Disease", "I-Disease"])
    tagger = fastbioner.load(folder, threads=1)
    assert isinstance(tagger, fastbioner.Tagger) and tagger.labels == ["O", "B-Disease", "I-Disease"]
    with pytest.raises(TypeError, match="speed"):
        fastbioner.load(folder, speed="max")
    seen = []
    monkeypatch.setattr(fastbioner.Tagger, "load", classmethod(lambda cls, name, config: seen.append(name)))
    fastbioner.load()
    assert seen == [fastbioner.default_model().name]


def test_the_app_imports_no_private_name_of_the_library():
    private = []
    for path in (REPO / "fastbioner_gui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastbioner"):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and a.name != "__version__"]
    assert private == []


def test_every_exported_name_is_documented():
    text = REFERENCE.read_text(encoding="utf-8")
    undocumented = [n for n in fastbioner.__all__ if f"`{n}" not in text]
    assert undocumented == []


def test_the_documented_quick_start_runs(tmp_path, monkeypatch):
    """The reference page's first example, on a shipped sample, with the shipped model."""
    from fastbioner.models.shipped import samples_folder, shipped_model_folder

    if not (shipped_model_folder() / "config.json").is_file():
        pytest.skip("no shipped default model")
    monkeypatch.setenv("FASTBIONER_HOME", str(tmp_path / "home"))
    sample = next(samples_folder().glob("*.pubtator"))
    docs = list(fastbioner.read_documents(sample))[:2]
    tagger = fastbioner.load(threads=1)
    out = tmp_path / "tagged.jsonl"
    fastbioner.write_documents(tagger.annotate(docs), out)
    back = list(fastbioner.read_documents(out))
    assert [d.id for d in back] == [d.id for d in docs]
    assert any(s.source is fastbioner.Source.MODEL for d in back for s in d.spans)
