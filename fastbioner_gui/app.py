"""Entry point of ``fastbioner-gui``: checks for a display, builds the window, then
offers crash recovery, or opens the files named, the last project, or the samples."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fastbioner.errors import FastBioNERError

# Platforms that need no display server.
_HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc", "eglfs", "linuxfb", "vkkhrdisplay")

NO_DISPLAY = ("fastbioner-gui: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set); "
              "run it in a desktop session, or set QT_QPA_PLATFORM=offscreen to render without one")


def display_available(environ=os.environ, platform: str = sys.platform) -> bool:  # noqa: ANN001
    """Whether Qt can open windows here; checked before QApplication exists, because
    Qt aborts the process when it cannot connect to a display."""
    if platform.startswith(("win", "darwin")):
        return True
    qpa = environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip()
    if qpa in _HEADLESS_PLATFORMS:
        return True
    if qpa.startswith("wayland"):
        return bool(environ.get("WAYLAND_DISPLAY"))
    if qpa == "xcb":
        return bool(environ.get("DISPLAY"))
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def sample_files() -> list[str]:
    from fastbioner.defaults import samples_folder

    return [str(p) for p in sorted(samples_folder().glob("*")) if p.is_file() and not p.name.startswith(".")]


def start_session(window, paths: list[str]) -> None:  # noqa: ANN001 - MainWindow
    """Decide what the window shows first."""
    from PySide6.QtWidgets import QMessageBox

    from .settings import settings_store

    leftover = window.projects.claim_autosave_slot()
    if leftover is not None:
        B = QMessageBox.StandardButton
        answer = QMessageBox.question(
            window, "Recover unsaved work?",
            "FastBioNER Studio did not close cleanly last time. Recover the work it autosaved?\n"
            f"({leftover})\n\nYes: recover it. No: discard it. Cancel: keep it for later and start fresh.",
            B.Yes | B.No | B.Cancel, B.Yes)
        if answer == B.Yes:
            try:
                window.projects.recover(leftover)
                return
            except Exception as exc:  # noqa: BLE001 - a bad autosave must not stop the app starting
                message = str(exc) if isinstance(exc, (FastBioNERError, OSError)) else (
                    f"{leftover}: cannot read ({type(exc).__name__}: {exc})")
                QMessageBox.warning(window, "Cannot recover", message)
        elif answer == B.No:
            window.projects.discard_autosave()
        else:
            window.projects.claim_autosave_slot(fresh=True)  # leave that file for later
    if paths:
        window.open_paths(paths)
        return
    last = settings_store().value("session/last_project", "")
    if last and Path(str(last)).is_file():
        # A last project that cannot be read is reported by open_project and the app
        # starts without it (the setting stays: the curator may repair the file).
        window.open_project(str(last))
    elif sample_files():
        window.tag_all_when_ready(window.loader.open(sample_files()))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    if not display_available():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from . import __version__
    from .main_window import MainWindow

    app = QApplication.instance() or QApplication(argv)
    app.setApplicationName("FastBioNER Studio")
    app.setApplicationVersion(__version__)
    app.setOrganizationName("FastBioNER")
    window = MainWindow()
    window.show()
    try:
        start_session(window, [a for a in argv[1:] if not a.startswith("-")])
    except Exception as exc:  # noqa: BLE001 - whatever the last session left, the app starts
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.warning(window, "FastBioNER Studio", f"Could not restore the last session: {exc}")
    return app.exec()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
