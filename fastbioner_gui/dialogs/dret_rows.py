"""DRET's fine-tuning knobs in the training dialogs, under *Advanced*: the model's input
embeddings frozen (vectors carried in by ``fastbioner transfer-embeddings`` stay as they
came) and peak rates per part (embeddings, layers, head). The values are the form's
(:class:`~fastbioner_gui.forms.training.RunForm`), the CLI's defaults unless changed."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QGroupBox, QVBoxLayout, QWidget

EXPLAINED = "docs/explanation/dret.md"


def dret_rows(binder) -> list[tuple[str, QWidget]]:
    """The rows (label, widget), bound to ``binder``'s form."""
    freeze = QCheckBox("freeze the input embeddings (keep transferred vectors as they came)")
    freeze.setToolTip(f"DRET 3.0.1: the token embedding matrix does not learn ({EXPLAINED})")
    embedding = QDoubleSpinBox(minimum=0.0, maximum=10.0, decimals=3, singleStep=0.1)
    embedding.setToolTip("The embeddings' peak rate as a multiple of the learning rate (also lowered by the layer "
                         "decay once more than the lowest layer); 1: the same rate")
    decay = QDoubleSpinBox(minimum=0.05, maximum=1.0, decimals=3, singleStep=0.05)
    decay.setToolTip("Layer-wise rates: each layer below the top trains at this times the rate of the one above; "
                     "1: one rate for every layer")
    head = QDoubleSpinBox(minimum=0.01, maximum=100.0, decimals=2, singleStep=1.0)
    head.setToolTip("The tagging head's (classifier, CRF) peak rate as a multiple of the learning rate")
    binder.check("freeze_embeddings", freeze)
    for name, box in (("embedding_lr_scale", embedding), ("layer_lr_decay", decay), ("head_lr_scale", head)):
        binder.value(name, box)
    return [("Embeddings (DRET)", freeze), ("Embedding rate (x)", embedding), ("Layer rate decay", decay),
            ("Head rate (x)", head)]


class AdvancedTraining(QWidget):
    """The teacher dialog's folded *Advanced* section: a check box opens it and makes its
    settings count (the form's ``advanced``)."""

    def __init__(self, binder, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QCheckBox("Advanced (DRET): frozen embeddings, layer-wise learning rates")
        self.toggled = self.header.toggled
        self.body = QGroupBox()
        form = QFormLayout(self.body)
        for label, widget in dret_rows(binder):
            form.addRow(label, widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.body)
        binder.check("advanced", self.header)
        self.body.setVisible(self.header.isChecked())
        self.toggled.connect(self.body.setVisible)
