"""The model shipped in assets/: what a curator gets before training anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastbioner.models.shipped import assets_folder
from fastbioner.models.manifest import read_manifest

ASSETS_MODEL = assets_folder() / "default-model"

pytestmark = pytest.mark.skipif(not (ASSETS_MODEL / "config.json").is_file(), reason="no shipped default model")


def shipped_folders() -> list[Path]:
    more = assets_folder() / "more-models"
    return [ASSETS_MODEL, *sorted(p for p in more.iterdir() if p.is_dir())] if more.is_dir() else [ASSETS_MODEL]


def test_shipped_models_are_small_safetensors_students_with_their_scores():
    files = [f for folder in shipped_folders() for f in folder.iterdir()]
    assert sum(f.stat().st_size for f in files) <= 40 * 2**20  # every shipped model together
    assert not [f for f in files if f.suffix in (".bin", ".pt", ".pkl", ".py")]  # safetensors, no code
    for folder in shipped_folders():
        m = read_manifest(folder)
        assert m.kind == "student" and m.parent and m.method, folder
        assert set(m.labels) == {"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}
        assert {"Chemical", "Disease"} <= set(m.metrics["per_type"])
        assert (folder / "BUILD.md").is_file() or folder == ASSETS_MODEL  # the commands that made it


def test_shipped_model_tags_a_sample_abstract(tmp_path, monkeypatch):
    from fastbioner.models.shipped import default_model
    from fastbioner.io.formats import read_documents
    from fastbioner.infer.inference import Tagger, TaggerConfig

    entry = default_model()  # registered in the test's private registry on first use
    assert entry.registered and Path(entry.path) != ASSETS_MODEL
    sample = next(read_documents(Path(ASSETS_MODEL).parents[0] / "samples" / "bc5cdr-devel-sample.pubtator"))
    tagger = Tagger.load(entry.name, TaggerConfig(device="cpu", precision="fp32"))
    found = {(sample.text[s.start:s.end].lower(), s.label) for s in tagger.tag([sample])[0]}
    assert ("lithium carbonate", "Chemical") in found
    assert any(label == "Disease" for _, label in found)
