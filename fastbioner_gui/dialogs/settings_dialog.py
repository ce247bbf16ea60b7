"""Preferences: device, precision, batch size, threads, folders, autosave delay and
the low-confidence threshold."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout,
                               QLineEdit, QSpinBox, QWidget)

from ..settings import DEVICES, PRECISIONS, AppSettings


class SettingsDialog(QDialog):
    def __init__(self, settings: AppSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self._base = settings
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        self.precision = QComboBox()
        self.precision.addItems(PRECISIONS)
        self.precision.setCurrentText(settings.precision)
        self.batch_size = QSpinBox(minimum=1, maximum=4096, value=settings.batch_size)
        self.threads = QSpinBox(minimum=0, maximum=256, value=settings.threads, specialValueText="default")
        self.data_folder = QLineEdit(settings.data_folder)
        self.export_folder = QLineEdit(settings.export_folder)
        self.autosave = QDoubleSpinBox(minimum=0.2, maximum=600, value=settings.autosave_seconds, suffix=" s")
        self.low_confidence = QDoubleSpinBox(minimum=0, maximum=1, singleStep=0.05, value=settings.low_confidence)
        self.replace_curated = QCheckBox("Re-tagging may replace curated entities")
        self.replace_curated.setChecked(settings.replace_curated)
        form = QFormLayout(self)
        form.addRow("Device", self.device)
        form.addRow("Precision", self.precision)
        form.addRow("Batch size", self.batch_size)
        form.addRow("CPU threads", self.threads)
        form.addRow("Open files from", self.data_folder)
        form.addRow("Export to", self.export_folder)
        form.addRow("Autosave after an edit", self.autosave)
        form.addRow("Low-confidence below", self.low_confidence)
        form.addRow(self.replace_curated)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def result_settings(self) -> AppSettings:
        return replace(self._base, device=self.device.currentText(), precision=self.precision.currentText(),
                       batch_size=self.batch_size.value(), threads=self.threads.value(),
                       data_folder=self.data_folder.text().strip(), export_folder=self.export_folder.text().strip(),
                       autosave_seconds=self.autosave.value(), low_confidence=self.low_confidence.value(),
                       replace_curated=self.replace_curated.isChecked())
