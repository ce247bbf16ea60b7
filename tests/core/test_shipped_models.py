"""More than one shipped model: the default and the further ones in
``assets/more-models`` are registered on first use, offered together, and a
tagging command can name a further one before it was ever registered."""

from __future__ import annotations

import pytest

from fastbioner.models.shipped import model_to_tag, model_entry, more_model_folders, shipped_models
from fastbioner.base.errors import ModelError
from fastbioner.models.registry import Registry, manifest_from_folder
from fastbioner.models.manifest import write_manifest
from tiny_models import make_tiny_model


def _named(folder, name):
    """A shipped folder carries its manifest, whose name it registers under."""
    manifest = manifest_from_folder(folder, kind="student")
    manifest.name = name
    write_manifest(folder, manifest)
    return folder


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    default = _named(make_tiny_model(tmp_path / "default-model", seed=1), "tiny-default")
    more = tmp_path / "more-models"
    _named(make_tiny_model(more / "fast", seed=2), "tiny-fast")
    (more / "broken").mkdir()
    (more / "broken" / "config.json").write_text("{", encoding="utf-8")
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(default))
    monkeypatch.setenv("FASTBIONER_MORE_MODELS", str(more))
    return default, more


def test_every_shipped_model_is_registered_the_default_first_and_a_broken_one_left_out(shipped):
    names = [e.name for e in shipped_models()]
    assert names == ["tiny-default", "tiny-fast"]
    assert {e.name for e in Registry().list()} >= {"tiny-default", "tiny-fast"}
    assert [p.name for p in more_model_folders()] == ["broken", "fast"]


def test_a_tagging_command_names_a_further_shipped_model_before_its_first_registration(shipped, tmp_path):
    registry = Registry()
    assert not registry.exists("tiny-fast")
    assert model_to_tag("tiny-fast", registry) == "tiny-fast" and registry.exists("tiny-fast")
    assert model_to_tag(None, registry) == "tiny-default"
    folder = make_tiny_model(tmp_path / "elsewhere")
    assert model_to_tag(str(folder), registry) == str(folder)  # a folder is passed on as it is


def test_a_run_resolves_a_shipped_models_name_before_its_first_registration(shipped):
    """The app offers the shipped default as a teacher while its first scan still
    registers it: a distillation (or its estimate) named so finds it all the same, and an
    unknown name is still an error, registering nothing."""
    registry = Registry()
    with pytest.raises(ModelError):
        model_entry("no-such-model", registry)
    assert not registry.exists("tiny-default")
    assert model_entry("tiny-default", registry).name == "tiny-default" and registry.exists("tiny-default")


def test_another_default_ships_no_further_models_unless_named(shipped, monkeypatch):
    monkeypatch.delenv("FASTBIONER_MORE_MODELS")
    assert more_model_folders() == []
    assert [e.name for e in shipped_models()] == ["tiny-default"]


def test_without_a_default_the_message_says_how_to_name_a_model(shipped, monkeypatch, tmp_path):
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(tmp_path / "absent"))
    with pytest.raises(ModelError, match="--model"):
        shipped_models()


def test_a_shipped_models_newer_precision_checks_reach_a_registry_that_holds_it(shipped):
    """The checks were run again in the shipped folder (int8 newly allowed): a machine
    that registered the model before tags with them; a check the user ran later stays."""
    from fastbioner.models.shipped import default_model

    default, _ = shipped
    assert default_model().manifest.speed == {}
    newer = {"precision": "int8", "date": "2026-12-01T20:00:00+00:00", "modes": {}}
    manifest = manifest_from_folder(default, kind="student")
    manifest.name, manifest.speed = "tiny-default", newer
    write_manifest(default, manifest)
    assert default_model().manifest.speed == newer
    assert Registry().get("tiny-default").manifest.speed == newer      # written, not only returned
    own = {"precision": "bf16", "date": "2026-12-02T09:00:00+00:00", "modes": {}}
    Registry().update_manifest("tiny-default", speed=own)             # `fastbioner benchmark` here, later
    assert default_model().manifest.speed == own
