"""The model registry: atomic install, round trips, safe loading, clear errors."""

from __future__ import annotations

import json
import os

import pytest

from fastbioner.base.errors import ModelError
from fastbioner.models.modeling import load_token_classifier, model_labels
from fastbioner.models.registry import Registry, default_root
from fastbioner.models.manifest import MANIFEST, Manifest, read_manifest, write_manifest
from tiny_models import make_tiny_model


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def install_tiny(registry, tiny_folder, name="tiny", **manifest):
    import shutil

    with registry.staging() as folder:
        for item in tiny_folder.iterdir():
            shutil.copy2(item, folder / item.name)
        write_manifest(folder, Manifest(kind="teacher", labels=["O", "B-Chemical", "I-Chemical",
                                                                "B-Disease", "I-Disease"], **manifest))
        return registry.install(folder, name)


def test_root_follows_fastbioner_home(private_user_data, monkeypatch):
    assert default_root() == private_user_data / "models"
    monkeypatch.delenv("FASTBIONER_HOME")
    assert default_root().name == "models" and "fastbioner" in str(default_root())


def test_install_list_get_resolve_round_trip(tiny_folder):
    reg = Registry()
    entry = install_tiny(reg, tiny_folder, config={"training": {"epochs": 3}}, metrics={"f1": 0.5})
    assert entry.path == reg.root / "tiny"
    assert [e.name for e in reg.list()] == ["tiny"]
    got = reg.get("tiny")
    assert got.manifest.name == "tiny"
    assert got.manifest.config == {"training": {"epochs": 3}}
    assert got.manifest.size_bytes > 0
    assert reg.resolve("tiny").path == entry.path
    assert reg.resolve(str(entry.path)).manifest.metrics == {"f1": 0.5}
    assert not any(p.name.startswith(".staging") for p in reg.root.iterdir())
    model = load_token_classifier(reg.resolve("tiny").path)
    assert model_labels(model) == got.labels


def test_plain_folder_resolves_without_a_manifest(tiny_folder):
    entry = Registry().resolve(tiny_folder)
    assert not entry.registered
    assert entry.manifest.labels == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert entry.manifest.layers == 2 and entry.manifest.width == 32
    model = load_token_classifier(tiny_folder)
    assert entry.manifest.parameters == sum(p.numel() for p in model.parameters())


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ModelError, match="no model named 'nope'"):
        Registry().resolve("nope")
    with pytest.raises(ModelError, match="bad model name"):
        Registry().get("../escape")


def test_staging_is_removed_on_error_and_nothing_is_registered(tiny_folder):
    reg = Registry()
    with pytest.raises(RuntimeError):
        with reg.staging() as folder:
            (folder / "partial.safetensors").write_bytes(b"half")
            raise RuntimeError("cancelled mid-save")
    assert reg.list() == []
    assert [p for p in reg.root.iterdir()] == []


def test_name_clash_needs_overwrite(tiny_folder):
    reg = Registry()
    install_tiny(reg, tiny_folder)
    with pytest.raises(ModelError, match="already exists"):
        install_tiny(reg, tiny_folder)
    import shutil
    with reg.staging() as folder:
        for item in tiny_folder.iterdir():
            shutil.copy2(item, folder / item.name)
        labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]  # the tiny model's head
        write_manifest(folder, Manifest(kind="student", labels=labels))
        reg.install(folder, "tiny", overwrite=True)
    assert reg.get("tiny").manifest.kind == "student"
    assert [e.name for e in reg.list()] == ["tiny"]


def test_export_import_delete(tiny_folder, tmp_path):
    reg = Registry()
    install_tiny(reg, tiny_folder)
    out = reg.export("tiny", tmp_path)
    assert out == tmp_path / "tiny" and (out / MANIFEST).is_file()
    with pytest.raises(ModelError, match="already exists"):
        reg.export("tiny", tmp_path)  # tmp_path/tiny is taken now
    reg.delete("tiny")
    assert reg.list() == []
    with pytest.raises(ModelError):
        reg.delete("tiny")
    again = reg.import_folder(out, name="back")
    assert again.manifest.name == "back"
    assert load_token_classifier(again.path) is not None


def test_import_a_foreign_folder_skips_pickles_and_writes_a_manifest(tiny_folder, tmp_path):
    import shutil
    src = tmp_path / "hf-model"
    shutil.copytree(tiny_folder, src)
    (src / "training_args.bin").write_bytes(b"pickle")
    entry = Registry().import_folder(src, kind="student")
    assert entry.name == "hf-model" and entry.manifest.kind == "student"
    assert not (entry.path / "training_args.bin").exists()
    assert read_manifest(entry.path).labels[0] == "O"


def test_import_rejects_non_bio_labels(tmp_path):
    folder = make_tiny_model(tmp_path / "weird", labels=["LABEL_0", "LABEL_1"])
    with pytest.raises(ModelError, match="not IOB2"):
        Registry().import_folder(folder)
    assert Registry().list() == []


def test_corrupt_or_missing_weights_are_rejected(tiny_folder, tmp_path):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(tiny_folder, bad)
    weights = bad / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="corrupt weights"):
        load_token_classifier(bad)
    with pytest.raises(ModelError, match="corrupt weights"):
        Registry().import_folder(bad)
    weights.unlink()
    (bad / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(ModelError, match="no safetensors"):
        load_token_classifier(bad)


def test_incomplete_weights_are_rejected(tiny_folder, tmp_path):
    import shutil
    from safetensors.torch import load_file, save_file
    part = tmp_path / "part"
    shutil.copytree(tiny_folder, part)
    tensors = load_file(str(part / "model.safetensors"))
    tensors = {k: v for k, v in tensors.items() if not k.startswith("classifier")}
    save_file(tensors, str(part / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ModelError, match="missing"):
        load_token_classifier(part)


def test_manifest_from_a_newer_version_is_a_clear_error(tiny_folder):
    reg = Registry()
    entry = install_tiny(reg, tiny_folder)
    data = json.loads((entry.path / MANIFEST).read_text())
    data["project_version"] = "99.0.0"
    data["field_of_the_future"] = 1
    (entry.path / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(ModelError, match="newer than this"):
        reg.get("tiny")
    assert reg.list() == []
    assert reg.problems()[0][0] == "tiny"


def test_update_manifest_is_atomic_and_checked(tiny_folder):
    reg = Registry()
    install_tiny(reg, tiny_folder)
    entry = reg.update_manifest("tiny", speed={"cpu_tokens_per_s": 1234.0})
    assert reg.get("tiny").manifest.speed == {"cpu_tokens_per_s": 1234.0}
    assert entry.manifest.speed == {"cpu_tokens_per_s": 1234.0}
    with pytest.raises(ModelError, match="unknown manifest field"):
        reg.update_manifest("tiny", sped={})
    leftovers = [p for p in os.listdir(entry.path) if p.endswith(".tmp")]
    assert leftovers == []


def test_the_registry_lock_is_a_system_lock_another_process_sees(tmp_path):
    """The registry's lock is filelock's (flock on POSIX, LockFileEx on Windows): while
    the registry holds it, another holder of the same file cannot take it."""
    from filelock import FileLock, Timeout

    reg = Registry(tmp_path / "reg")
    reg.root.mkdir(parents=True, exist_ok=True)
    with reg._locked():
        with pytest.raises(Timeout):
            FileLock(reg.root / ".lock").acquire(timeout=0)
    other = FileLock(reg.root / ".lock")
    other.acquire(timeout=0)  # released with the registry's block
    other.release()


def test_trained_on_hashes_only_a_regular_file(tmp_path, monkeypatch):
    """``evaluate MODEL /dev/zero`` asks whether the model trained on the file: a device
    never ends and a pipe would be read empty for the scoring after, so neither is hashed."""
    import fastbioner.models.manifest as manifest_module
    from fastbioner.models.manifest import Manifest, data_record, trained_on

    train = tmp_path / "train.tsv"
    train.write_text("Aspirin\tB-Chemical\n", encoding="utf-8")
    manifest = Manifest(name="m", training_data=[data_record(train, "train")])
    assert trained_on(manifest, train) and not trained_on(manifest, tmp_path / "other.tsv")

    def endless(path):
        raise AssertionError(f"hashed {path}")

    monkeypatch.setattr(manifest_module, "file_sha256", endless)
    assert trained_on(manifest, "/dev/zero") is False
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert trained_on(manifest, fifo) is False
