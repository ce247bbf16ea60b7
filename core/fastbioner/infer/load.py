"""``fastbioner.load``: one call from a model's name (or folder) to a ready tagger, as
``spacy.load`` is for spaCy. The default model when no name is given."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.models.shipped import default_model


def load(name_or_folder: str | Path | None = None, config: TaggerConfig | None = None,
         **settings: Any) -> Tagger:
    """A :class:`Tagger` for a registered model's name or a model folder (safetensors
    only, never remote code); the shipped default model when none is named.
    ``settings`` are :class:`TaggerConfig` fields (``precision="fp32"``, ``threads=1``),
    applied over ``config``; an unknown one is a TypeError naming it."""
    config = dataclasses.replace(config or TaggerConfig(), **settings)
    if name_or_folder is None:
        name_or_folder = default_model().name
    return Tagger.load(name_or_folder, config)
