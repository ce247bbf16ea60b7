"""The shipped models: the default in ``assets/default-model``, and any more in
``assets/more-models/<name>`` (a faster or a more accurate one beside it), all
registered on first use, so ``fastbioner tag`` and the app can tag without a model
being named and the picker offers every shipped model with its card.

``FASTBIONER_DEFAULT_MODEL`` points at another default folder (tests use it; a
packager can too); ``FASTBIONER_MORE_MODELS`` at another folder of further models.
A process that sets the first but not the second ships no further models: another
default is a different package, whose extras its packager names.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from fastbioner.base.errors import ModelError
from fastbioner.models.registry import ModelEntry, Registry, RegistryUnwritable, manifest_from_folder
from fastbioner.models.manifest import MANIFEST, read_manifest

def assets_folder() -> Path:
    """The shipped data: the installed ``fastbioner_assets`` package (a wheel or an
    editable install), else the checkout's ``assets/`` beside ``core/`` (code run
    from a source tree with only ``core`` on the path)."""
    try:
        folder = Path(str(files("fastbioner_assets")))
        if folder.is_dir():
            return folder
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[3] / "assets"


def shipped_model_folder() -> Path:
    override = os.environ.get("FASTBIONER_DEFAULT_MODEL")
    return Path(override).expanduser() if override else assets_folder() / "default-model"


def more_models_folder() -> Path | None:
    override = os.environ.get("FASTBIONER_MORE_MODELS")
    if override:
        return Path(override).expanduser()
    if os.environ.get("FASTBIONER_DEFAULT_MODEL"):
        return None
    return assets_folder() / "more-models"


def more_model_folders() -> list[Path]:
    """The further shipped models' folders (each holding a config.json), by name."""
    folder = more_models_folder()
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / "config.json").is_file())


def samples_folder() -> Path:
    return assets_folder() / "samples"


def sample_files() -> list[str]:
    """The bundled sample abstracts' files: what the app opens on a first launch and
    what a distillation trains on when no file is chosen."""
    return [str(p) for p in sorted(samples_folder().glob("*")) if p.is_file() and not p.name.startswith(".")]


def default_model(registry: Registry | None = None) -> ModelEntry:
    """The registry entry of the shipped default model, importing it on first use
    (under the name in its manifest)."""
    registry = registry or Registry()
    folder = shipped_model_folder()
    if not (folder / "config.json").is_file():
        raise ModelError(f"no default model is installed ({folder} is missing); name a model "
                         f"with --model (see `fastbioner models list`)")
    return _registered(registry, folder, "default")


def shipped_models(registry: Registry | None = None) -> list[ModelEntry]:
    """Every shipped model's registry entry, the default first, each imported on
    first use. A further model that cannot be imported is left out (the default's
    failure is reported: it is the one tagging falls back on)."""
    registry = registry or Registry()
    entries = [default_model(registry)]
    for folder in more_model_folders():
        try:
            entries.append(_registered(registry, folder, folder.name))
        except ModelError:
            continue
    return entries


def model_entry(name: str, registry: Registry) -> ModelEntry:
    """``registry.resolve(name)``, a shipped model's name included before its first
    registration (the app offers the shipped default as a teacher while its first scan
    still registers it): the shipped models are registered then, and looked up again."""
    try:
        return registry.resolve(name)
    except ModelError:
        folders = [shipped_model_folder(), *more_model_folders()]
        if not any((f / MANIFEST).is_file() and read_manifest(f).name == name for f in folders):
            raise
    shipped_models(registry)
    return registry.resolve(name)


def model_to_tag(name: str | None, registry: Registry | None = None) -> str:
    """The model a tagging command uses: ``name`` (a registry name or folder; a shipped
    model's name works before its first registration), else the shipped default."""
    registry = registry or Registry()
    if not name:
        return _reference(default_model(registry))
    if not registry.exists(name):
        for folder in more_model_folders():
            if folder.name == name or ((folder / MANIFEST).is_file() and read_manifest(folder).name == name):
                return _reference(_registered(registry, folder, folder.name))
        if (shipped_model_folder() / MANIFEST).is_file() and read_manifest(shipped_model_folder()).name == name:
            return _reference(default_model(registry))
    return name


def _reference(entry: ModelEntry) -> str:
    """What Tagger.load takes for ``entry``: its registry name, or its folder when it
    could not be registered."""
    return entry.name if entry.registered else str(entry.path)


def _registered(registry: Registry, folder: Path, fallback_name: str) -> ModelEntry:
    shipped = read_manifest(folder) if (folder / MANIFEST).is_file() else None
    name = (shipped.name if shipped else "") or fallback_name
    if registry.exists(name):
        return _with_newer_shipped_checks(registry, registry.get(name), shipped)
    try:
        return registry.import_folder(folder, name=name)
    except RegistryUnwritable:
        # A user folder that cannot be written (read-only, a file in the way, a full
        # disk): the shipped folder is used where it is, unregistered.
        manifest = shipped or manifest_from_folder(folder, "student")
        return ModelEntry(name, folder.resolve(), manifest, registered=False)
    except ModelError:
        if registry.exists(name):  # another process registered it meanwhile
            return registry.get(name)
        raise


def _with_newer_shipped_checks(registry: Registry, entry: ModelEntry, shipped) -> ModelEntry:
    """A shipped model registered earlier, with the precision checks of the shipped
    folder when they are newer than its own. A new default comes under a new name, but
    its checks can be run again in place (``build_default_model.py
    --recheck-precision``: int8 newly allowed, say), and an update must reach a machine
    that registered the model before; a check the user ran since (``fastbioner
    benchmark``, dated later) stays."""
    if shipped is None or not shipped.speed:
        return entry
    if str(shipped.speed.get("date", "")) <= str(entry.manifest.speed.get("date", "")):
        return entry
    try:
        return registry.update_manifest(entry.name, speed=shipped.speed)
    except (ModelError, OSError):  # a read-only registry: tag with the checks it holds
        return entry
