"""Live training curves of one job (pyqtgraph): every loss the job reports, and its
weights (phi) and devel scores, redrawn at most a few times a second whatever the
rate of events. The losses can be drawn on a log scale (one large term, such as the
attention loss, flattens the others on a linear one) and each curve switched off.

A chained job (fine-tune a teacher, then distil a student) counts its steps afresh in
each part: each part is drawn after the one before on the step axis (a dashed line
names it), so its curves never run back over the earlier part's. The switches above
the plots, in each curve's colour, are the legend: nothing is drawn over the curves."""

from __future__ import annotations

import math
import zlib

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QCheckBox, QVBoxLayout, QWidget

from fastbioner.base.jobs import ProgressEvent

from .flow_layout import FlowLayout

# Loss keys that are weights in [0, 1] rather than losses: drawn with the scores.
_WEIGHT_KEYS = ("phi", "alpha", "weight")
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


# The distillation objective's terms in plain words (a curator reads the legend); the
# paper's names, which the research settings under Advanced use, in each switch's tooltip.
DISPLAY_NAMES = {"loss": "total loss", "soft": "teacher's labels", "gold": "gold labels",
                 "hidden": "hidden states", "attention": "attention", "hidden-norm": "hidden states (normalised)",
                 "embedding": "embeddings", "phi": "phi(s) weight", "f1": "devel F1"}
PAPER_NAMES = {"loss": "L_total", "soft": "L_SL", "gold": "L_TL", "hidden": "L_ML hidden",
               "attention": "L_ML attention", "hidden-norm": "L_ML hidden, normalised as Patient KD does",
               "embedding": "L_ML embedding", "phi": "phi(s)"}
# Each curve keeps its colour whatever order its terms first appear in (a resumed run
# reports them in another order than the run it continues).
KEY_COLORS = {"loss": 0, "soft": 1, "gold": 2, "hidden": 3, "attention": 4, "hidden-norm": 5, "embedding": 6,
              "phi": 7, "f1": 0}


def display_name(key: str) -> str:
    if key.startswith("f1_"):
        return f"devel F1 {key[3:]}"
    return DISPLAY_NAMES.get(key, key)


def curve_color(key: str) -> str:
    index = KEY_COLORS.get(key)
    if index is None:
        index = zlib.crc32(key.encode("utf-8"))  # the same on every run, unlike hash()
    return _COLORS[index % len(_COLORS)]


def _is_weight(key: str) -> bool:
    return any(w in key.lower() for w in _WEIGHT_KEYS)


def _is_score(key: str, value: object) -> bool:
    return isinstance(value, (int, float)) and "f1" in key.lower()


def part_of(stage: str) -> str:
    """The part of a chained job a stage belongs to: ``"teacher"`` of
    ``"teacher: train"`` (the prefix :func:`fastbioner.base.jobs.relay` gives), ``""`` for a
    job of one part."""
    return stage.split(": ", 1)[0] if ": " in stage else ""


class Curves(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        # The chart takes the window's colours (a dark palette gets a dark chart).
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.WindowText)
        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground(palette.color(QPalette.ColorRole.Base))
        self.view.setMinimumSize(240, 160)
        self.losses = self.view.addPlot(row=0, col=0, title="Losses")
        self.losses.setLabel("bottom", "step")
        self.losses.showGrid(x=True, y=True, alpha=0.2)
        self.scores = self.view.addPlot(row=0, col=1, title="phi(s) and devel F1")
        self.scores.setLabel("bottom", "step")
        for plot in (self.losses, self.scores):
            plot.setTitle(plot.titleLabel.text, color=text)
            for side in ("left", "bottom"):
                plot.getAxis(side).setPen(text)
                plot.getAxis(side).setTextPen(text)
        self.scores.setYRange(0, 1)
        self.scores.showGrid(x=True, y=True, alpha=0.2)
        self.log_scale = QCheckBox("Log scale (losses)")
        self.log_scale.toggled.connect(lambda on: self.losses.setLogMode(y=on))
        self.toggles: dict[str, QCheckBox] = {}  # one per curve, added as curves appear
        # The switches wrap onto more lines: a dozen curves never widen the dock.
        self._toggle_row = FlowLayout()
        self._toggle_row.addWidget(self.log_scale)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._toggle_row)
        layout.addWidget(self.view, 1)
        self.series: dict[str, tuple[list[float], list[float]]] = {}
        self._items: dict[str, pg.PlotDataItem] = {}
        self._events: list[ProgressEvent] = []
        self._seen = 0
        # Where each part of a chained job starts on the step axis.
        self.parts: list[tuple[str, float]] = []
        self._offset = 0.0
        self._last_x = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    def follow(self, events: list[ProgressEvent]) -> None:
        """Draw from ``events`` (a job's growing list), starting afresh."""
        self._events = events
        self._seen = 0
        self.parts = []
        self._offset = self._last_x = 0.0
        self.series.clear()
        self.losses.clear()
        self.scores.clear()
        self._items.clear()
        for box in self.toggles.values():
            box.setParent(None)
            box.deleteLater()
        self.toggles.clear()
        self.refresh()

    def refresh(self) -> None:
        events = self._events
        if self._seen >= len(events):
            return
        for event in events[self._seen:]:
            scores = {k: v for k, v in event.metrics.items() if _is_score(k, v)}
            if not event.losses and not scores:
                continue
            if not event.total:
                x = float(event.seq)
            else:
                self._enter_part(part_of(event.stage))
                x = self._offset + event.step
            for key, value in event.losses.items():
                self._add(key, x, value)
            for key, value in scores.items():
                self._add(key, x, value)
        self._seen = len(events)
        for key, (xs, ys) in self.series.items():
            item = self._items.get(key)
            if item is None:
                plot = self.scores if _is_weight(key) or "f1" in key.lower() else self.losses
                color = curve_color(key)
                symbol = "o" if plot is self.scores and not _is_weight(key) else None
                item = plot.plot([], [], name=display_name(key), pen=pg.mkPen(color, width=2), symbol=symbol,
                                 symbolBrush=color, symbolSize=6)
                self._items[key] = item
                box = QCheckBox(display_name(key))
                box.setChecked(True)
                if key in PAPER_NAMES:
                    box.setToolTip(f"{PAPER_NAMES[key]} in the distillation methods' terms")
                box.setStyleSheet(f"QCheckBox {{ color: {color}; }}")
                box.toggled.connect(item.setVisible)
                self.toggles[key] = box
                self._toggle_row.addWidget(box)
            item.setData(xs, ys, connect="finite")  # a part's curve never joins the next part's

    def _enter_part(self, part: str) -> None:
        """Place a new part of a chained job after the steps drawn so far, with a gap
        in every curve and a dashed line naming it."""
        if self.parts and self.parts[-1][0] == part:
            return
        if self.parts:
            self._offset = self._last_x
            for xs, ys in self.series.values():
                if xs and not math.isnan(ys[-1]):
                    xs.append(xs[-1])
                    ys.append(math.nan)
        self.parts.append((part, self._offset))
        # A job of one part needs no marks; the second part marks the first too.
        marks = self.parts if len(self.parts) == 2 else self.parts[-1:] if len(self.parts) > 2 else []
        colour = self.palette().color(QPalette.ColorRole.WindowText)
        for name, start in marks:
            for plot in (self.losses, self.scores):
                line = pg.InfiniteLine(pos=start, angle=90, movable=False,
                                       pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine),
                                       label=name or None, labelOpts={"position": 0.95, "color": colour,
                                                                      "anchors": [(0, 0), (0, 0)]})
                plot.addItem(line)  # in the view range: each part's name shows

    def _add(self, key: str, x: float, value: object) -> None:
        if not isinstance(value, (int, float)):
            return
        self._last_x = max(self._last_x, x)
        xs, ys = self.series.setdefault(key, ([], []))
        if xs and x == xs[-1] and not math.isnan(ys[-1]):
            ys[-1] = float(value)  # the same step reported twice: keep the last
        else:
            xs.append(x)
            ys.append(float(value))
