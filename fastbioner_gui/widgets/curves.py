"""Live training curves of one job (pyqtgraph): every loss the job reports, and its
weights (phi) and devel scores, redrawn at most a few times a second whatever the
rate of events. The losses can be drawn on a log scale (one large term, such as the
attention loss, flattens the others on a linear one) and each curve switched off."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QVBoxLayout, QWidget

from fastbioner.jobs import ProgressEvent

# Loss keys that are weights in [0, 1] rather than losses: drawn with the scores.
_WEIGHT_KEYS = ("phi", "alpha", "weight")
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


# The paper's names for the distillation objective's terms.
DISPLAY_NAMES = {"loss": "L_total", "soft": "L_SL (soft labels)", "gold": "L_TL (gold labels)",
                 "hidden": "L_ML hidden", "attention": "L_ML attention", "hidden-norm": "L_ML hidden (PKD)",
                 "embedding": "L_ML embedding", "phi": "phi(s)", "f1": "devel F1"}


def display_name(key: str) -> str:
    if key.startswith("f1_"):
        return f"devel F1 {key[3:]}"
    return DISPLAY_NAMES.get(key, key)


def _is_weight(key: str) -> bool:
    return any(w in key.lower() for w in _WEIGHT_KEYS)


def _is_score(key: str, value: object) -> bool:
    return isinstance(value, (int, float)) and "f1" in key.lower()


class Curves(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background="w", foreground="k")
        self.view = pg.GraphicsLayoutWidget()
        self.losses = self.view.addPlot(row=0, col=0, title="Losses")
        self.losses.addLegend(offset=(-5, 5))
        self.losses.setLabel("bottom", "step")
        self.losses.showGrid(x=True, y=True, alpha=0.2)
        self.scores = self.view.addPlot(row=0, col=1, title="phi(s) and devel F1")
        self.scores.addLegend(offset=(-5, 5))
        self.scores.setLabel("bottom", "step")
        self.scores.setYRange(0, 1)
        self.scores.showGrid(x=True, y=True, alpha=0.2)
        self.log_scale = QCheckBox("Log scale (losses)")
        self.log_scale.toggled.connect(lambda on: self.losses.setLogMode(y=on))
        self.toggles: dict[str, QCheckBox] = {}  # one per curve, added as curves appear
        self._toggle_row = QHBoxLayout()
        self._toggle_row.setContentsMargins(4, 0, 4, 0)
        self._toggle_row.addWidget(self.log_scale)
        self._toggle_row.addSpacing(12)
        self._toggle_row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._toggle_row)
        layout.addWidget(self.view)
        self.series: dict[str, tuple[list[float], list[float]]] = {}
        self._items: dict[str, pg.PlotDataItem] = {}
        self._events: list[ProgressEvent] = []
        self._seen = 0
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    def follow(self, events: list[ProgressEvent]) -> None:
        """Draw from ``events`` (a job's growing list), starting afresh."""
        self._events = events
        self._seen = 0
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
            x = float(event.seq if not event.total else event.step)
            for key, value in event.losses.items():
                self._add(key, x, value)
            for key, value in event.metrics.items():
                if _is_score(key, value):
                    self._add(key, x, value)
        self._seen = len(events)
        for key, (xs, ys) in self.series.items():
            item = self._items.get(key)
            if item is None:
                plot = self.scores if _is_weight(key) or "f1" in key.lower() else self.losses
                color = _COLORS[len(self._items) % len(_COLORS)]
                symbol = "o" if plot is self.scores and not _is_weight(key) else None
                item = plot.plot([], [], name=display_name(key), pen=pg.mkPen(color, width=2), symbol=symbol,
                                 symbolBrush=color, symbolSize=6)
                self._items[key] = item
                box = QCheckBox(display_name(key))
                box.setChecked(True)
                box.setStyleSheet(f"QCheckBox {{ color: {color}; }}")
                box.toggled.connect(item.setVisible)
                self.toggles[key] = box
                self._toggle_row.insertWidget(self._toggle_row.count() - 1, box)
            item.setData(xs, ys)

    def _add(self, key: str, x: float, value: object) -> None:
        if not isinstance(value, (int, float)):
            return
        xs, ys = self.series.setdefault(key, ([], []))
        if xs and x == xs[-1]:
            ys[-1] = float(value)  # the same step reported twice: keep the last
        else:
            xs.append(x)
            ys.append(float(value))
