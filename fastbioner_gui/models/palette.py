"""One stable colour per entity label: the same label gets the same colour in every
session, view and screenshot (fixed for the two core types, by a hash of the name
for any other label a model or file brings)."""

from __future__ import annotations

import zlib

from PySide6.QtGui import QColor

_FIXED = {"Disease": "#f4a3a3", "Chemical": "#9fd3f5"}
# Light, distinct fills that keep black text readable.
_PALETTE = ["#b8e0a0", "#f7d08a", "#d4b8f0", "#f5b8dc", "#a8e6dc", "#e6d7a8",
            "#c9c9f5", "#f0b89c", "#bfe3f0", "#dcdcdc"]


def label_color(label: str) -> QColor:
    name = _FIXED.get(label)
    if name is None:
        name = _PALETTE[zlib.crc32(label.encode("utf-8")) % len(_PALETTE)]
    return QColor(name)


def strong_color(label: str) -> QColor:
    """A darker shade of the label's colour, for underlines and outlines."""
    return label_color(label).darker(160)
