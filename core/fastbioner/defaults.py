"""The default model: shipped in ``assets/default-model`` and registered on first use,
so ``fastbioner tag`` and the app can tag without a model being named.

``FASTBIONER_DEFAULT_MODEL`` points at another folder (tests use it; a packager
can too).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ModelError
from .registry import MANIFEST, ModelEntry, Registry, read_manifest

def assets_folder() -> Path:
    """The shipped data: the installed ``fastbioner_assets`` package (a wheel or an
    editable install), else the checkout's ``assets/`` beside ``core/`` (code run
    from a source tree with only ``core`` on the path)."""
    try:
        from importlib.resources import files

        folder = Path(str(files("fastbioner_assets")))
        if folder.is_dir():
            return folder
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "assets"


def shipped_model_folder() -> Path:
    override = os.environ.get("FASTBIONER_DEFAULT_MODEL")
    return Path(override).expanduser() if override else assets_folder() / "default-model"


def samples_folder() -> Path:
    return assets_folder() / "samples"


def default_model(registry: Registry | None = None) -> ModelEntry:
    """The registry entry of the shipped model, importing it on first use (under the
    name in its manifest)."""
    registry = registry or Registry()
    folder = shipped_model_folder()
    if not (folder / "config.json").is_file():
        raise ModelError(f"no default model is installed ({folder} is missing); name a model "
                         f"with --model (see `fastbioner models list`)")
    name = read_manifest(folder).name if (folder / MANIFEST).is_file() else ""
    name = name or "default"
    if registry.exists(name):
        return registry.get(name)
    try:
        return registry.import_folder(folder, name=name)
    except ModelError:
        if registry.exists(name):  # another process registered it meanwhile
            return registry.get(name)
        raise
