"""Entry point of ``fastbioner-gui``: checks for a display, builds the window, then
offers crash recovery, or opens the files named, the last project, or the samples."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fastbioner.base.errors import FastBioNERError
from fastbioner.models.shipped import sample_files

# Platforms that need no display server.
_HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc", "eglfs", "linuxfb", "vkkhrdisplay")

NO_DISPLAY = ("fastbioner-gui: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set); "
              "run it in a desktop session, or set QT_QPA_PLATFORM=offscreen to render without one")


def display_available(environ=os.environ, platform: str = sys.platform) -> bool:
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


def start_session(window, paths: list[str]) -> None:
    """Decide what the window shows first."""
    from PySide6.QtWidgets import QMessageBox

    from .dialogs.unsaved import Answer, ask_unsaved
    from .settings import settings_store

    leftover = window.projects.claim_autosave_slot()
    if leftover is not None:
        answer = ask_unsaved(
            window, "Recover unsaved work?",
            f"FastBioNER Studio did not close cleanly last time. Recover the work it autosaved?\n({leftover})",
            "recover it", "discard it", "keep it for later and start fresh")
        if window.terminating:  # SIGTERM while it asked: the session has ended
            return
        if answer is Answer.YES:
            try:
                window.projects.recover(leftover)
                return
            except Exception as exc:
                message = str(exc) if isinstance(exc, (FastBioNERError, OSError)) else (
                    f"{leftover}: cannot read ({type(exc).__name__}: {exc})")
                QMessageBox.warning(window, "Cannot recover", message)
        elif answer is Answer.NO:
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
        open_samples(window)


def report_home_problem(window) -> str | None:
    """When the user folder cannot be written (a regular file in its place, read-only,
    a full disk), say so for the whole session in the status bar: settings, autosaves
    and new models are not kept. Tagging with the shipped model still works. Returns
    the problem, or None."""
    from PySide6.QtWidgets import QLabel

    from fastbioner.curate.project import home_problem

    problem = home_problem()
    if problem:
        label = QLabel("Not saving settings, autosaves or models (the user folder cannot be written)")
        label.setObjectName("homeProblem")
        label.setToolTip(problem)
        window.statusBar().addPermanentWidget(label)
        window.statusBar().showMessage(problem, 30000)
    return problem


def open_samples(window) -> None:
    """First launch: the shipped samples, tagged with the default model. Nothing in
    that is the curator's work: the session is not "modified" (no "Untitled*", no
    question on closing) until the curator edits something."""
    paths = sample_files()
    loading = window.loader.open(paths)

    def only_samples() -> bool:  # no other file opened, no project saved
        return window.projects.path is None and all(e.origin in paths for e in window.workspace.project.entries)

    def loaded() -> None:  # (``finished`` comes after the documents were added)
        if only_samples() and window.stack.count() == 0:
            window.projects.mark_clean()

    def tagged() -> None:
        window.tagging.applied.disconnect(tagged)
        # The samples and one tagging run of them: no edit of the curator's yet.
        if only_samples() and window.stack.count() == 1 and window.stack.index() == 1:
            window.projects.mark_clean()

    loading.finished.connect(loaded)
    window.tagging.applied.connect(tagged)
    window.tag_all_when_ready(loading)


# Qt's own options that take a value (``-platform offscreen``): passed on to Qt, and
# their value is not taken for a file to open.
_QT_VALUE_OPTIONS = ("-platform", "-platformpluginpath", "-platformtheme", "-plugin", "-qwindowgeometry",
                     "-qwindowicon", "-qwindowtitle", "-geometry", "-display", "-style", "-stylesheet", "-session")


def parse_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The command line: files to open, and (passed on to Qt) Qt's own options.
    ``--help`` and ``--version`` print and exit here, before Qt is imported or a
    display is looked for."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="fastbioner-gui",
        description="FastBioNER Studio: tag disease and chemical mentions in PubMed abstracts, review them "
                    "with the keyboard, export them, and distil your own fast models.",
        epilog="With no file, the app reopens the last project (or, on first launch, the sample abstracts). "
               "Qt's own options (-platform offscreen, -style ...) are passed on to Qt. See the README and docs/.")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="abstracts to open (PubTator, BioC, PubMed XML, MEDLINE, CoNLL/BIO, JSONL, text, "
                             "or a folder of them) or a project (.fbproj)")
    parser.add_argument("--version", action="version", version=f"fastbioner-gui {__version__}")
    qt_args: list[str] = []
    mine: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg in _QT_VALUE_OPTIONS:
            qt_args += [arg, next(args, "")]
        elif arg.startswith("-") and arg not in ("-h", "--help", "--version", "--"):
            qt_args.append(arg)
        else:
            mine.append(arg)
    return parser.parse_args(mine), argv[:1] + qt_args


def main(argv: list[str] | None = None) -> int:
    from fastbioner.base.threads import wait_passively

    # Before anything imports torch: OpenMP reads its wait policy once, as it loads, and
    # the app's jobs share the machine with its window and with other programs.
    wait_passively()
    argv = list(sys.argv if argv is None else argv)
    args, qt_argv = parse_arguments(argv)
    if not display_available():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    from .xcb_check import missing_message, missing_xcb_packages, uses_xcb

    if uses_xcb() and (missing := missing_xcb_packages()):
        print(missing_message(missing), file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from . import __version__
    from .main_window import MainWindow

    app = QApplication.instance() or QApplication(qt_argv)
    app.setApplicationName("FastBioNER Studio")
    app.setApplicationVersion(__version__)
    app.setOrganizationName("FastBioNER")
    from .sigterm import SigtermWatcher

    window = MainWindow()
    watcher = SigtermWatcher(window.terminate, app)
    window.show()
    report_home_problem(window)
    try:
        start_session(window, args.files)
    except Exception as exc:
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.warning(window, "FastBioNER Studio", f"Could not restore the last session: {exc}")
    try:
        # A SIGTERM during a start-up question (its own event loop) ended the session
        # already: no main loop to start.
        if watcher.terminated:
            window.jobs.cancel_all()  # whatever start-up began after the signal
            return 0
        code = app.exec()
        # A quit that closed no window (QApplication.quit) skips closeEvent's cancelling:
        # a job still running then (the concept dictionary's background build, say) would
        # outlive its QThread object and abort the process.
        window.jobs.cancel_all()
        return code
    finally:
        watcher.uninstall()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
