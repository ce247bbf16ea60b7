"""Changing a proxy's row filter the way the installed Qt wants it."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QSortFilterProxyModel


def refilter_rows(proxy: QSortFilterProxyModel, change: Callable[[], None]) -> None:
    """Apply ``change`` (which alters what ``filterAcceptsRow`` answers) and refilter.
    Qt 6.10 replaced ``invalidateRowsFilter`` with begin/endFilterChange."""
    if hasattr(proxy, "beginFilterChange"):
        proxy.beginFilterChange()
        change()
        proxy.endFilterChange(QSortFilterProxyModel.Direction.Rows)
    else:  # Qt before 6.10
        change()
        proxy.invalidateRowsFilter()
