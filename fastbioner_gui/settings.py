"""The app's settings as one typed dataclass, persisted with QSettings in an INI file
in the user's FastBioNER folder (``$FASTBIONER_HOME`` in tests), beside the registry
and the autosave. Window layout is stored in the same file."""

from __future__ import annotations

from dataclasses import dataclass, fields

from PySide6.QtCore import QSettings

from fastbioner.curate.project import user_home

from .forms.training import DEVICES

PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")  # fastbioner.infer.inference.TaggerConfig's


@dataclass
class AppSettings:
    device: str = "auto"             # where models run: auto takes CUDA when present
    precision: str = "auto"          # inference precision; auto: the engine's default
    batch_size: int = 256            # most sentences per batch when tagging
    threads: int = 0                 # CPU threads for torch; 0: the cores less what others keep busy
    data_folder: str = ""            # where Open starts
    export_folder: str = ""          # where Export starts
    autosave_seconds: float = 1.0    # autosave this long after the last edit
    low_confidence: float = 0.5      # model spans scoring below are marked doubtful
    replace_curated: bool = False    # re-tagging may overwrite curated spans
    learn_while_reviewing: bool = False  # improve the model every 10 newly reviewed documents (issue 65)


def settings_store() -> QSettings:
    path = user_home() / "gui-settings.ini"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a home that cannot be written: settings last this session (the app says so)
        pass
    return QSettings(str(path), QSettings.Format.IniFormat)


def load_settings(store: QSettings | None = None) -> AppSettings:
    store = store or settings_store()
    values = {}
    defaults = AppSettings()
    for f in fields(AppSettings):
        default = getattr(defaults, f.name)
        raw = store.value(f"settings/{f.name}", default)
        try:
            if isinstance(default, bool):
                values[f.name] = raw if isinstance(raw, bool) else str(raw).lower() == "true"
            else:
                values[f.name] = type(default)(raw)
        except (TypeError, ValueError):  # a hand-edited file: fall back, never crash
            values[f.name] = default
    settings = AppSettings(**values)
    if settings.device not in DEVICES:
        settings.device = defaults.device
    if settings.precision not in PRECISIONS:
        settings.precision = defaults.precision
    return settings


def save_settings(settings: AppSettings, store: QSettings | None = None) -> None:
    store = store or settings_store()
    for f in fields(AppSettings):
        store.setValue(f"settings/{f.name}", getattr(settings, f.name))
    store.sync()
