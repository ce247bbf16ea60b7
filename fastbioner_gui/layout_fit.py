"""Keeping the reading view the widest part of the window: when the window is narrowed
(or a side dock opens), the side panels give way first, down to the widths that show
their columns whole and then to their minimum widths, so the reading view keeps at
least half the window's width; a wider window gives a panel that gave way its columns
back. Qt alone does the opposite: docks keep their width and the central widget
shrinks, and the splitter shrinks the reading view with the entity table.

And the window itself fits the screen it opens on (:func:`fit_to_screen`)."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow, QSplitter, QWidget

# The reading view's share of the window's width it keeps when panels can give way.
READING_SHARE = 0.5
# Narrowest the side panels are made to go (their own minimum sizes may be larger).
ENTITY_MIN = 220
DOCK_MIN = 200


def give_way(deficit: int, widths: Sequence[int], minimums: Sequence[int]) -> list[int]:
    """New widths for panels that must give ``deficit`` pixels back, each in
    proportion to what it has above its minimum (none goes below it)."""
    room = [max(0, w - m) for w, m in zip(widths, minimums)]
    total = sum(room)
    if deficit <= 0 or total == 0:
        return list(widths)
    take = min(deficit, total)
    cut = [r * take // total for r in room]
    # Rounding: the remainder from the panels with the most room left.
    for i in sorted(range(len(room)), key=lambda i: room[i] - cut[i], reverse=True)[:take - sum(cut)]:
        cut[i] += 1
    return [w - c for w, c in zip(widths, cut)]


def side_docks(window: QMainWindow) -> list[QDockWidget]:
    """The docks that share the window's width with the reading view: shown, docked,
    at the left or right."""
    sides = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
    return [d for d in window.findChildren(QDockWidget)
            if d.isVisible() and not d.isFloating() and window.dockWidgetArea(d) in sides]


def comfortable(widget: QWidget | None) -> int:
    """The width at which ``widget`` shows what a curator reads there whole (its
    ``comfortable_width()``: the documents panel's columns, the entity's text and
    label), or 0 for a panel that names none."""
    size = getattr(widget, "comfortable_width", None)
    return int(size()) if callable(size) else 0


def fit(window: QMainWindow, splitter: QSplitter, then) -> None:
    """Share the window's width between the reading view (the splitter's first pane),
    the side docks and the entity table (the splitter's second pane).

    Narrower than the reading view's share: the panels give way, each in proportion
    to its width above a floor: first down to their comfortable widths (their columns
    whole), then, if that is not enough, down to their minimums. Wider: a dock that
    gave way (or opened narrower than its columns) gets its comfortable width back
    from the reading view's surplus, the entity table keeping its width. The docks are
    resized now; the splitter once the window has laid them out: ``then(fn)`` runs
    ``fn`` after that (``QTimer.singleShot(0, fn)``)."""
    sizes = splitter.sizes()
    want = int(READING_SHARE * window.width())
    if len(sizes) != 2 or sizes[0] == want:
        return
    # Docks stacked in one area share one width: one entry per area, the most
    # comfortable width any of its docks asks for.
    areas: dict[Qt.DockWidgetArea, list[QDockWidget]] = {}
    for dock in side_docks(window):
        areas.setdefault(window.dockWidgetArea(dock), []).append(dock)
    firsts = [docks[0] for docks in areas.values()]
    comforts = [max(comfortable(d.widget()) for d in docks) for docks in areas.values()]
    widths = [d.width() for d in firsts]
    if sizes[0] > want:
        _grow_docks(window, splitter, firsts, widths, comforts, sizes, sizes[0] - want, then)
        return
    widths.append(sizes[1])
    minimums = [max(DOCK_MIN, d.minimumSizeHint().width()) for d in firsts]
    minimums.append(max(ENTITY_MIN, splitter.widget(1).minimumSizeHint().width()) if sizes[1] else 0)
    comforts.append(comfortable(splitter.widget(1)) if sizes[1] else 0)
    deficit = want - sizes[0]
    new = give_way(deficit, widths, [max(c, m) for c, m in zip(comforts, minimums)])
    new = give_way(deficit - (sum(widths) - sum(new)), new, minimums)
    if new == widths:
        return
    if firsts and new[:-1] != widths[:-1]:
        window.resizeDocks(firsts, new[:-1], Qt.Orientation.Horizontal)
    entity = new[-1]

    def place_splitter() -> None:
        total = sum(splitter.sizes())
        if sizes[1]:
            splitter.setSizes([max(0, total - entity), entity])
    then(place_splitter)


def _grow_docks(window: QMainWindow, splitter: QSplitter, docks: list[QDockWidget], widths: list[int],
                comforts: list[int], sizes: list[int], surplus: int, then) -> None:
    grown = list(widths)
    for i, (width, comfort) in enumerate(zip(widths, comforts)):
        give = max(0, min(comfort - width, surplus))
        grown[i] += give
        surplus -= give
    if grown == widths:
        return
    window.resizeDocks(docks, grown, Qt.Orientation.Horizontal)
    entity = sizes[1]

    def place_splitter() -> None:  # the room came from the reading view, not the entity table
        total = sum(splitter.sizes())
        if entity:
            splitter.setSizes([max(0, total - entity), entity])
    then(place_splitter)


def fitted_rect(frame: QRect, inner: QSize, room: QRect) -> QRect:
    """Where a window of frame ``frame`` (its client area ``inner``) goes in ``room``, a
    screen's free area: its client size no larger than the room leaves (less the frame),
    and moved back inside when any part is off it. Qt restores a saved geometry as it was
    saved: a 1400x860 window on a 1024x700 screen had its status bar off-screen."""
    extra_w, extra_h = frame.width() - inner.width(), frame.height() - inner.height()
    width = min(inner.width(), room.width() - extra_w)
    height = min(inner.height(), room.height() - extra_h)
    x = min(max(frame.x(), room.left()), room.left() + room.width() - width - extra_w)
    y = min(max(frame.y(), room.top()), room.top() + room.height() - height - extra_h)
    return QRect(x, y, width, height)


def fit_to_screen(window: QWidget) -> None:
    """Fit ``window`` (its saved geometry restored) to the screen it opens on."""
    if window.isMaximized() or window.isFullScreen():
        return  # the window manager sizes these to the screen
    frame = window.frameGeometry()
    screen = QGuiApplication.screenAt(frame.center()) or window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    rect = fitted_rect(frame, window.size(), screen.availableGeometry())
    if rect.size() != window.size():
        window.resize(rect.size())
    if rect.topLeft() != frame.topLeft():
        window.move(rect.topLeft())
