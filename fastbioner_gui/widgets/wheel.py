"""The mouse wheel over a form: it scrolls the form and changes no setting the pointer
only passes over (:class:`WheelGuard`, :func:`guard_wheel`)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QWidget


class WheelGuard(QObject):
    """Scrolling a form passes over spin boxes and lists; Qt gives them the wheel, and a
    learning rate or a batch size changed under the pointer (issue 67). A guarded
    widget takes the wheel only once it has the focus (clicked or tabbed to); until
    then the wheel scrolls the form around it."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget):
            return False
        focus = QApplication.focusWidget()
        if focus is not None and (focus is watched or watched.isAncestorOf(focus)):
            return False  # focused: the wheel is the user's, on purpose
        area = watched.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:
            QCoreApplication.sendEvent(area.viewport(), event)  # scroll the form instead
        return True


def guard_wheel(root: QWidget, guard: WheelGuard) -> None:
    """Guard every spin box and combo box under ``root`` with ``guard``; they no longer
    take the focus from the wheel either (Qt's WheelFocus would focus and change them)."""
    for widget in root.findChildren(QAbstractSpinBox) + root.findChildren(QComboBox):
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.installEventFilter(guard)
