"""The training dialog's own input widgets: a learning-rate box that reads and
writes rates as people write them, the folded Advanced section of a distillation
method's research settings, and the list of training files."""

from __future__ import annotations

from typing import Sequence

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
    are compared. Defaults come from :class:`MethodConfig` and the chosen method's own
    (:meth:`follow`), as the CLI's do.

    A check box opens the section and makes its settings count; folded, the section
    is that one line (a checkable group box would leave an empty frame)."""

    def __init__(self, parent: QWidget | None = None):
        from fastbioner import ATTENTION_FORMS, MATCHING_TERMS, METHODS, TERM_NAMES, MethodConfig

        super().__init__(parent)
        defaults = MethodConfig()
        self.header = QCheckBox("Advanced (research settings): method, loss-term weights, calibration, attention")
        self.toggled = self.header.toggled
        self.body = QGroupBox()
        form = QFormLayout(self.body)
        self.form = form  # the dialog puts the method's own rows first
        self.weights: dict[str, QDoubleSpinBox] = {}
        grid = QGridLayout()
        for i, term in enumerate(TERM_NAMES):
            box = QDoubleSpinBox(minimum=0.0, maximum=1e4, decimals=4, singleStep=0.1,
                                 value=defaults.term_weights.get(term, 1.0))
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
            box = QDoubleSpinBox(minimum=0.01, maximum=1e4, decimals=2, singleStep=1.0,
                                 value=defaults.term_ratios.get(term, defaults.calibration_ratio))
            box.setToolTip(f"with calibration: the {term} term's gradient norm at the start as a multiple of "
                           f"the gold labels' (1: equal pull)")
            self.ratios[term] = box
            ratios.addWidget(QLabel(term))
            ratios.addWidget(box)
        form.addRow("Pull (x gold)", ratios)
        self._terms: tuple[str, ...] = ()
        self.calibrate.toggled.connect(self._enable_ratios)
        self.attention = QComboBox()
        self.attention.addItems(ATTENTION_FORMS)
        self.follow(METHODS[defaults.name])
        self.attention.setToolTip("scores: QK^T/sqrt(d_k) (the paper's); centred: the same with each query "
                                  "row's mean removed (softmax ignores it); probs: after softmax")
        form.addRow("Attention maps", self.attention)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggled.connect(self.body.setVisible)

    def follow(self, method) -> None:
        """Show ``method``'s own calibration and attention form (the dialog calls this
        when the method changes, as the CLI takes them from the method unless told)."""
        self._terms = method.term_names
        self.calibrate.setChecked(method.calibrate != "none")
        self.attention.setCurrentText(method.attention)
        self._enable_ratios()

    def _enable_ratios(self) -> None:
        for term, box in self.ratios.items():
            box.setEnabled(self.calibrate.isChecked() and term in self._terms)

    def isChecked(self) -> bool:
        return self.header.isChecked()

    def setChecked(self, on: bool) -> None:
        self.header.setChecked(on)

    def apply(self, method):
        """The term weights, calibration and attention form into ``method`` (only while
        the section is open: folded, the method's defaults stand)."""
        if not self.isChecked():
            return method
        method.term_weights = {t: box.value() for t, box in self.weights.items() if box.value() != 1.0}
        method.calibrate = "grad-norm" if self.calibrate.isChecked() else "none"
        method.term_ratios = {t: box.value() for t, box in self.ratios.items()
                              if box.isEnabled() and box.value() != method.calibration_ratio}
        method.attention = self.attention.currentText()
        return method


class FileList(QWidget):
    """Files to train on (tagged, or the unlabelled text of a distillation): a list
    with Add and Remove; ``caption`` titles the file chooser."""

    def __init__(self, start_folder: str, parent: QWidget | None = None,
                 caption: str = "Training data (BIO / CoNLL)"):
        super().__init__(parent)
        self.start_folder = start_folder
        self.caption = caption
        self.list = QListWidget()
        self.list.setMaximumHeight(80)
        add, remove = QPushButton("Add…"), QPushButton("Remove")
        add.clicked.connect(self._add)
        remove.clicked.connect(lambda: [self.list.takeItem(self.list.row(i)) for i in self.list.selectedItems()])
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

    def add_paths(self, paths: Sequence[str]) -> None:
        for p in paths:
            self.list.addItem(p)

    def paths(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]
