"""The training dialog's own input widgets: a learning-rate box that reads and
writes rates as people write them, the folded Advanced section of a distillation
method's research settings, and the list of training files."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGridLayout,
                               QGroupBox, QHBoxLayout, QLabel, QListWidget, QPushButton, QVBoxLayout, QWidget)


class LearningRateBox(QDoubleSpinBox):
    """A learning rate as people write it ("5e-05", "0.001"), not "0.000050"; the
    arrows halve and double it."""

    def __init__(self, value: float, parent: QWidget | None = None):
        super().__init__(parent)
        self.setDecimals(12)  # the value itself is kept exact; the text is ours
        self.setRange(1e-7, 1.0)
        self.setValue(value)

    def textFromValue(self, value: float) -> str:
        return f"{value:g}"

    def valueFromText(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int):
        try:
            value = float(text)
        except ValueError:
            return QValidator.State.Intermediate, text, pos
        ok = self.minimum() <= value <= self.maximum()
        return (QValidator.State.Acceptable if ok else QValidator.State.Intermediate), text, pos

    def stepBy(self, steps: int) -> None:
        self.setValue(min(self.maximum(), max(self.minimum(), self.value() * 2.0 ** steps)))


class AdvancedMethodSettings(QWidget):
    """The research settings of a distillation method, folded away by default: a
    weight per loss term, calibration of the matching terms, and how attention maps
    are compared. The values are the form's (:class:`~fastbioner_gui.forms.distill.DistillForm`:
    the chosen method's own unless changed, as the CLI's); :meth:`bind` shows them.

    A check box opens the section and makes its settings count; folded, the section
    is that one line (a checkable group box would leave an empty frame)."""

    def __init__(self, parent: QWidget | None = None):
        from fastbioner import ATTENTION_FORMS, MATCHING_TERMS, TERM_NAMES

        super().__init__(parent)
        self.header = QCheckBox("Advanced (research settings): method, loss-term weights, calibration, attention")
        self.toggled = self.header.toggled
        self.body = QGroupBox()
        form = QFormLayout(self.body)
        self.form = form  # the dialog puts the method's own rows first
        self.weights: dict[str, QDoubleSpinBox] = {}
        grid = QGridLayout()
        for i, term in enumerate(TERM_NAMES):
            box = QDoubleSpinBox(minimum=0.0, maximum=1e4, decimals=4, singleStep=0.1, value=1.0)
            box.setToolTip(f"weight of the {term} term, multiplying the method's own (1: as the method says)")
            self.weights[term] = box
            grid.addWidget(QLabel(term), i // 4, 2 * (i % 4))
            grid.addWidget(box, i // 4, 2 * (i % 4) + 1)
        form.addRow("Term weights", grid)
        self.calibrate = QCheckBox("scale each matching term so its gradient norm at the start is its pull "
                                   "(below) times the gold labels'")
        form.addRow("Calibration", self.calibrate)
        # Under calibration, each matching term's pull as a multiple of the gold term's
        # (--term-ratio); a box is live only for a term the chosen method has.
        self.ratios: dict[str, QDoubleSpinBox] = {}
        ratios = QHBoxLayout()
        for term in MATCHING_TERMS:
            box = QDoubleSpinBox(minimum=0.01, maximum=1e4, decimals=2, singleStep=1.0)
            box.setToolTip(f"with calibration: the {term} term's gradient norm at the start as a multiple of "
                           f"the gold labels' (1: equal pull)")
            self.ratios[term] = box
            ratios.addWidget(QLabel(term))
            ratios.addWidget(box)
        form.addRow("Pull (x gold)", ratios)
        self.attention = QComboBox()
        self.attention.addItems(ATTENTION_FORMS)
        self.attention.setToolTip("scores: QK^T/sqrt(d_k) (the paper's); centred: the same with each query "
                                  "row's mean removed (softmax ignores it); probs: after softmax")
        form.addRow("Attention maps", self.attention)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggled.connect(self.body.setVisible)

    def bind(self, binder) -> None:
        """Show and edit ``binder``'s distillation form: ``advanced``, ``term_weights``
        (only those not 1 are kept), ``calibrate``, ``term_ratios``, ``attention``."""
        form = binder.form
        binder.check("advanced", self.header)
        binder.check("calibrate", self.calibrate)
        binder.combo_text("attention", self.attention)
        for term, box in self.weights.items():
            binder.bind("term_weights", box.valueChanged,
                        lambda term=term, box=box: _without(form.term_weights, term, box.value(), 1.0),
                        lambda weights, term=term, box=box: box.setValue(weights.get(term, 1.0)))
        for term, box in self.ratios.items():
            default = form.ratio_default(term)
            binder.bind("term_ratios", box.valueChanged,
                        lambda term=term, box=box, default=default: _without(form.term_ratios, term, box.value(),
                                                                              default),
                        lambda ratios, term=term, box=box, default=default: box.setValue(ratios.get(term, default)))
        binder.on_change(lambda _name: self._enable_ratios(form))
        self._enable_ratios(form)

    def _enable_ratios(self, form) -> None:
        for term, box in self.ratios.items():
            box.setEnabled(form.ratio_applies(term))

    def isChecked(self) -> bool:
        return self.header.isChecked()

    def setChecked(self, on: bool) -> None:
        self.header.setChecked(on)


def _without(values: dict, key: str, value: float, default: float) -> dict:
    """``values`` with ``key`` set to ``value``, left out when that is its default."""
    changed = {k: v for k, v in values.items() if k != key}
    if value != default:
        changed[key] = value
    return changed


class FileList(QWidget):
    """Files to train on (tagged, or the unlabelled text of a distillation): a list
    with Add and Remove; ``caption`` titles the file chooser. ``changed`` says the
    list changed."""

    changed = Signal()

    def __init__(self, start_folder: str, parent: QWidget | None = None,
                 caption: str = "Training data (BIO / CoNLL)"):
        super().__init__(parent)
        self.start_folder = start_folder
        self.caption = caption
        self.list = QListWidget()
        self.list.setMaximumHeight(80)
        add, remove = QPushButton("Add…"), QPushButton("Remove")
        add.clicked.connect(self._add)
        remove.clicked.connect(self._remove)
        buttons = QVBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        # The dialog opens at its smallest height: an empty list would shrink to one
        # line and squash the two buttons beside it.
        self.add_button, self.remove_button = add, remove
        self.setMinimumHeight(add.sizeHint().height() + remove.sizeHint().height() + max(0, buttons.spacing()))

    def _add(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, self.caption, self.start_folder)
        self.add_paths(paths)

    def _remove(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self.changed.emit()

    def add_paths(self, paths: Sequence[str]) -> None:
        for p in paths:
            self.list.addItem(p)
        if paths:
            self.changed.emit()

    def set_paths(self, paths: Sequence[str]) -> None:
        if list(paths) != self.paths():
            self.list.clear()
            self.list.addItems(list(paths))
            self.changed.emit()

    def paths(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]
