"""The registry against hostile folders and races (issue 13): import copies only what a
model needs, never follows a link out of the folder, refuses bad manifests and
folders without a usable tokenizer, and claims a name atomically."""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from fastbioner.cli.main import main
from fastbioner.base.errors import ModelError
from fastbioner.models.registry import Registry
from fastbioner.models.manifest import MANIFEST
from tiny_models import make_tiny_model


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def src(tiny_folder, tmp_path):
    folder = tmp_path / "hf-model"
    shutil.copytree(tiny_folder, folder)
    return folder


def test_import_copies_only_the_regular_files_a_model_needs(src, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0")
    (src / "passwd").symlink_to(outside)
    (src / "evil.py").write_text("import os; os.system('boom')")
    (src / "sub").mkdir()
    (src / "sub" / "weights.pkl").write_bytes(b"\x80\x04pickle")
    (src / "training_args.bin").write_bytes(b"pickle")
    entry = Registry().import_folder(src)
    copied = sorted(p.name for p in entry.path.iterdir())
    assert copied == sorted([MANIFEST, *(p.name for p in src.iterdir() if p.name in {
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
        "special_tokens_map.json"})])
    assert not any(p.is_symlink() for p in entry.path.iterdir())


def test_a_needed_file_linking_out_of_the_folder_is_refused(src, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("root:x:0:0")
    (src / "vocab.txt").unlink()
    (src / "vocab.txt").symlink_to(outside)
    with pytest.raises(ModelError, match=r"vocab\.txt: a symbolic link out of the model folder"):
        Registry().import_folder(src)
    assert Registry().list() == []


def test_a_symlink_loop_is_a_clear_error(src, tmp_path, capsys):
    (src / "tokenizer.json").unlink()
    (src / "tokenizer.json").symlink_to(src / "tokenizer.json")
    assert main(["models", "import", str(src)]) == 2
    assert "tokenizer.json: a symbolic link loop or a broken link" in capsys.readouterr().err
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert main(["models", "import", str(loop)]) == 2
    err = capsys.readouterr().err
    assert "no such model folder" in err and "Traceback" not in err


def test_a_manifest_of_the_wrong_types_is_refused_at_import(src):
    manifest = {"kind": "teacher", "labels": ["O", "B-X", "I-X"], "parameters": "many"}
    (src / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match=r"bad manifest \('parameters' must be a whole number, not negative, "
                                         r"got a string 'many'\)"):
        Registry().import_folder(src)
    (src / MANIFEST).write_text(json.dumps({**manifest, "parameters": 1, "labels": 5}))
    with pytest.raises(ModelError, match=r"'labels' must be a list, got a number 5"):
        Registry().import_folder(src)


def test_models_list_survives_a_bad_entry(src, capsys):
    reg = Registry()
    reg.import_folder(src, name="good")
    reg.import_folder(src, name="bad")
    data = json.loads((reg.root / "bad" / MANIFEST).read_text())
    data["parameters"] = "many"  # edited by hand after the import
    (reg.root / "bad" / MANIFEST).write_text(json.dumps(data))
    assert main(["models", "list"]) == 0
    out, err = capsys.readouterr()
    assert "good" in out and "bad " not in out
    assert "warning: bad:" in err and "'parameters' must be a whole number" in err
    assert [e.name for e in reg.list()] == ["good"]


def test_a_folder_without_tokenizer_files_is_refused(src):
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (src / name).unlink(missing_ok=True)
    with pytest.raises(ModelError, match="no tokenizer files .* a model cannot tag without its tokenizer"):
        Registry().import_folder(src)


def test_a_tokenizer_that_knows_almost_nothing_is_refused(src):
    (src / "tokenizer.json").unlink()
    (src / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    with pytest.raises(ModelError, match=r"the tokenizer knows too little"):
        Registry().import_folder(src)


@pytest.mark.parametrize("name", ["bad\nname", "a/b", "..", ".hidden", "x" * 101, "tab\tname", "é"])
def test_names_must_be_safe_file_names(src, name):
    with pytest.raises(ModelError, match="bad model name"):
        Registry().import_folder(src, name=name)
    assert Registry().list() == []


@pytest.mark.parametrize("ref", ["a" * 5000, "x/" + "b" * 300, "nul\0name"])
def test_a_model_reference_the_system_cannot_look_up_is_one_line(ref, capsys):
    """A name or path too long for the file system (ENAMETOOLONG) or holding a NUL is
    'no model named ...', not an OSError traceback, in every command that resolves one."""
    with pytest.raises(ModelError, match="no model named"):
        Registry().resolve(ref)
    assert main(["models", "show", ref]) != 0
    assert "Traceback" not in capsys.readouterr().err


def test_two_imports_of_the_same_new_name_exactly_one_wins(src):
    reg = Registry()
    results: list[object] = []
    ready = threading.Barrier(2)

    original_install = Registry.install

    def install_together(self, staging, name, overwrite=False):
        ready.wait(timeout=60)  # both have checked the name is free and staged a copy
        return original_install(self, staging, name, overwrite)

    def run():
        try:
            results.append(Registry().import_folder(src, name="same"))
        except ModelError as exc:
            results.append(exc)

    Registry.install = install_together
    try:
        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        Registry.install = original_install
    errors = [r for r in results if isinstance(r, ModelError)]
    assert len(results) == 2 and len(errors) == 1
    assert "a model named 'same' already exists" in str(errors[0])
    assert [e.name for e in reg.list()] == ["same"]
    assert not [p for p in reg.root.iterdir() if p.name.startswith((".staging", ".trash"))]


def test_registry_files_honour_the_umask(src):
    old = os.umask(0o022)
    try:
        entry = Registry().import_folder(src)
    finally:
        os.umask(old)
    assert oct(entry.path.stat().st_mode & 0o777) == oct(0o755)
    assert oct((entry.path / MANIFEST).stat().st_mode & 0o777) == oct(0o644)
