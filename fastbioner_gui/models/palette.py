"""One stable colour per entity label: the same label gets the same colour in every
session, view and screenshot (fixed for the two core types, by a hash of the name
for any other label a model or file brings)."""

from __future__ import annotations

import zlib

from PySide6.QtGui import QColor, QPalette

# Secondary text (notes, counts, key hints): the palette's placeholder colour, which
# reads on a light or a dark theme alike (a fixed #555 vanished on a dark one).
MUTED_STYLE = "color: palette(placeholder-text)"

_FIXED = {"Disease": "#f4a3a3", "Chemical": "#9fd3f5"}
# Light, distinct fills that keep black text readable.
_PALETTE = ["#b8e0a0", "#f7d08a", "#d4b8f0", "#f5b8dc", "#a8e6dc", "#e6d7a8",
            "#c9c9f5", "#f0b89c", "#bfe3f0", "#dcdcdc"]


def muted_color(palette: QPalette) -> str:
    """:data:`MUTED_STYLE`'s colour by name, for rich text."""
    return palette.color(QPalette.ColorRole.PlaceholderText).name()


def label_color(label: str) -> QColor:
    name = _FIXED.get(label)
    if name is None:
        name = _PALETTE[zlib.crc32(label.encode("utf-8")) % len(_PALETTE)]
    return QColor(name)


def strong_color(label: str) -> QColor:
    """A darker shade of the label's colour, for underlines and outlines."""
    return label_color(label).darker(160)


def _luminance(color: QColor) -> float:
    """WCAG relative luminance of an opaque colour."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG contrast between two colours (1 to 21; 4.5 is the floor for body text)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def blend(fill: QColor, under: QColor) -> QColor:
    """``fill`` (with its alpha) painted over the opaque ``under``."""
    a = fill.alphaF()
    return QColor.fromRgbF(fill.redF() * a + under.redF() * (1 - a), fill.greenF() * a + under.greenF() * (1 - a),
                           fill.blueF() * a + under.blueF() * (1 - a))


def text_on(background: QColor) -> QColor:
    """Black or white, whichever reads better on ``background``: label fills are light,
    so text on them stays dark even when the desktop's palette is dark."""
    black, white = QColor("black"), QColor("white")
    return black if contrast_ratio(black, background) >= contrast_ratio(white, background) else white


def readable(color: QColor, background: QColor, minimum: float = 4.5) -> QColor:
    """``color``, lightened or darkened until it reads on ``background``."""
    out = QColor(color)
    dark_background = _luminance(background) < 0.5
    for _ in range(20):
        if contrast_ratio(out, background) >= minimum:
            break
        out = out.lighter(115) if dark_background else out.darker(115)
        if dark_background and out.value() >= 255:
            out = QColor.fromHsvF(out.hsvHueF(), max(0.0, out.hsvSaturationF() - 0.1), 1.0)
    return out
