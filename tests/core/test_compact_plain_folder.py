"""`compact FOLDER` on a Hugging Face folder made elsewhere (no fastbioner.json): it
registers the compacted model, with no pickle, instead of an error naming the registry's
staging folder (found by the round-3 trouble sweep, issue 70)."""

from __future__ import annotations

import shutil

from fastbioner.cli.main import main
from fastbioner.models.registry import Registry
from tiny_models import make_tiny_model


def test_compact_of_a_folder_without_a_manifest_registers_it(tmp_path, capsys):
    folder = make_tiny_model(tmp_path / "plain", seed=3)
    assert not (folder / "fastbioner.json").exists()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not a real pickle")
    assert main(["compact", str(folder), "--keep-vocabulary", "--name", "small", "--quiet"]) == 0
    entry = Registry().get("small")
    names = {p.name for p in entry.path.iterdir()}
    assert "fastbioner.json" in names and "pytorch_model.bin" not in names
    assert entry.manifest.compression["compacted_from"] == "plain"
    assert "staging" not in capsys.readouterr().err
    shutil.rmtree(folder)
