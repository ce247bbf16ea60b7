"""The user's FastBioNER folder, decided in one place: the registry (``models/``), the
app's settings and autosave, and reviewed training data all live under it."""

from __future__ import annotations

import os
from pathlib import Path


def user_home() -> Path:
    """``$FASTBIONER_HOME`` when set (tests set it), ``~`` and ``~user`` expanded as a
    shell would (``FASTBIONER_HOME="~/x"`` quoted reaches us unexpanded: the registry and
    the settings must not part ways over it); else the platform's user data folder."""
    override = os.environ.get("FASTBIONER_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("fastbioner", appauthor=False))
