"""Widgets kept in step with a Qt-free form (:mod:`fastbioner_gui.forms`): a widget the
user changes edits the form (whose rules then follow), and every change of the form's
values, by a rule, a recipe or a reset, is shown in the widgets bound to it. The form
holds the values; a widget only shows one."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from PySide6.QtWidgets import QAbstractSpinBox, QCheckBox, QComboBox, QLineEdit

from ..forms import Form


class Binder:
    """Binds widgets to ``form``'s fields; ``on_change(name)`` callbacks run after each
    change of the form (enabled states, texts that depend on several fields)."""

    def __init__(self, form: Form):
        self.form = form
        self._views: dict[str, list[tuple[Callable[[], Any], Callable[[Any], None]]]] = {}
        self._after: list[Callable[[str], None]] = []
        self._showing = 0  # writing the form's values into widgets: their signals are not edits
        form.watch(self._changed)

    @contextmanager
    def showing(self) -> Iterator[None]:
        """Widgets changed inside are being filled, not edited by the user."""
        self._showing += 1
        try:
            yield
        finally:
            self._showing -= 1

    def bind(self, name: str, signal, read: Callable[[], Any], write: Callable[[Any], None]) -> None:
        """``signal`` says the user changed the widget, ``read`` gives its value for field
        ``name``, ``write`` shows one; the widget shows the form's value at once."""
        def edited(*_args) -> None:
            if not self._showing:
                self.form.edit(**{name: read()})

        signal.connect(edited)
        self._views.setdefault(name, []).append((read, write))
        with self.showing():
            write(self.form.get(name))

    def on_change(self, callback: Callable[[str], None]) -> None:
        self._after.append(callback)

    def _changed(self, name: str, value: Any) -> None:
        with self.showing():
            for read, write in self._views.get(name, ()):
                if read() != value:  # a widget that shows it already is left as it is ("custom" 2 stays)
                    write(value)
        for callback in list(self._after):
            callback(name)

    # The usual widgets ------------------------------------------------------------------
    def value(self, name: str, box: QAbstractSpinBox) -> None:
        self.bind(name, box.valueChanged, box.value, box.setValue)

    def check(self, name: str, box: QCheckBox) -> None:
        self.bind(name, box.toggled, box.isChecked, box.setChecked)

    def text(self, name: str, edit: QLineEdit) -> None:
        self.bind(name, edit.textChanged, edit.text, edit.setText)

    def combo_text(self, name: str, combo: QComboBox) -> None:
        self.bind(name, combo.currentTextChanged, combo.currentText, combo.setCurrentText)

    def combo_data(self, name: str, combo: QComboBox) -> None:
        self.bind(name, combo.currentIndexChanged, combo.currentData,
                  lambda v: combo.setCurrentIndex(combo.findData(v)))

    def files(self, name: str, files) -> None:
        """A :class:`~.training_widgets.FileList`."""
        self.bind(name, files.changed, files.paths, files.set_paths)
