"""SIGTERM (a logout, ``systemctl stop``, ``kill``) ends the app the clean way.

Python runs a signal handler only when the interpreter next gets control, and inside
Qt's event loop it may not for a long time. So the handler is a no-op and the signal
wakes the loop instead: Python writes each signal's number into a socket
(``signal.set_wakeup_fd``) that a ``QSocketNotifier`` watches; the notifier's slot runs
in the GUI thread, between two events, and calls ``on_term`` there."""

from __future__ import annotations

import signal
import socket
from typing import Callable

from PySide6.QtCore import QObject, QSocketNotifier


class SigtermWatcher(QObject):
    def __init__(self, on_term: Callable[[], None], parent: QObject | None = None):
        super().__init__(parent)
        self._on_term = on_term
        self._read, self._write = socket.socketpair()
        for end in (self._read, self._write):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._previous_handler = signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
        self.notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read, self)
        self.notifier.activated.connect(self._woken)
        self.terminated = False

    def _woken(self) -> None:
        try:
            data = self._read.recv(512)
        except (BlockingIOError, InterruptedError):
            return
        if signal.SIGTERM in data and not self.terminated:
            self.terminated = True
            self._on_term()

    def uninstall(self) -> None:
        """Put back what was there before (the app is ending, or a test is done)."""
        self.notifier.setEnabled(False)
        signal.set_wakeup_fd(self._previous_fd)
        signal.signal(signal.SIGTERM, self._previous_handler)
        self._read.close()
        self._write.close()
