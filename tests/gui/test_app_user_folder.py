"""The app against a user folder it cannot use (issue 52, items 5, 9 and 2): a
FASTBIONER_HOME that is a regular file still lets the app start and it says what it
cannot save; an autosave folder that is a file does not keep a named project from
opening; an autosave path that is a folder is skipped and closing stays clean; a FIFO
given as a project is refused instead of freezing the window."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel, QMessageBox

from fastbioner.curate.project import Project, autosave_folder, entry_for, save_project
from fastbioner_gui import app as app_module
from gui_documents import make_documents

REPO = Path(__file__).resolve().parents[2]

LAUNCH = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from fastbioner_gui import app as app_module

qt = QApplication([])
QMessageBox.warning = staticmethod(lambda *a, **k: print("WARNING:", a[2], flush=True))
QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes)
real = app_module.report_home_problem
app_module.report_home_problem = lambda window: print("REPORTED:", real(window), flush=True)
QTimer.singleShot(0, qt.quit)  # up and running: leave at once
sys.exit(app_module.main(["fastbioner-gui"]))
"""


def test_the_app_starts_when_the_user_folder_is_a_regular_file(tmp_path):
    """As the issue saw it: FileExistsError from the settings store, and no window."""
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
           "QT_QPA_PLATFORM": "offscreen", "FASTBIONER_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", LAUNCH], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"REPORTED: {home}: cannot save settings, autosaves or models there" in done.stdout
    assert home.read_text() == "not a folder"


def test_the_window_says_what_it_cannot_save(window, monkeypatch, tmp_path):
    assert app_module.report_home_problem(window) is None  # the tests' own home can be written
    assert window.statusBar().findChild(QLabel, "homeProblem") is None
    home = tmp_path / "home-file"
    home.write_text("")
    monkeypatch.setenv("FASTBIONER_HOME", str(home))
    problem = app_module.report_home_problem(window)
    assert problem.startswith(f"{home}: cannot save settings, autosaves or models there (")
    label = window.statusBar().findChild(QLabel, "homeProblem")
    assert label is not None and "Not saving settings, autosaves or models" in label.text()
    assert label.toolTip() == problem


def _project(tmp_path: Path) -> Path:
    path = tmp_path / "named.fbproj"
    save_project(Project([entry_for(d) for d in make_documents()]), path)
    return path


def test_an_autosave_folder_that_is_a_file_does_not_keep_the_named_project_from_opening(
        window, monkeypatch, tmp_path):
    autosave_folder().parent.mkdir(parents=True, exist_ok=True)
    autosave_folder().write_text("in the way")
    path = _project(tmp_path)
    warned, messages = [], []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warned.append(a[2]))
    window.projects.autosaveFailed.connect(messages.append)
    app_module.start_session(window, [str(path)])
    assert warned == []
    assert window.projects.path == path and len(window.workspace) == len(make_documents())
    assert window.projects.autosave_file is None
    assert messages and messages[0].startswith(f"no autosave this session: {autosave_folder()}: ")
    window.projects.autosave_now()  # editing goes on without an autosave, silently
    assert autosave_folder().read_text() == "in the way"


def test_an_autosave_path_that_is_a_folder_is_skipped_and_closing_is_clean(window, tmp_path):
    blocked = autosave_folder() / "autosave-0.fbproj"
    blocked.mkdir(parents=True)
    assert window.projects.claim_autosave_slot() is None  # nothing to recover from a folder
    assert window.projects.autosave_file == autosave_folder() / "autosave-1.fbproj"
    window.projects.close()
    # An autosave path that became a folder after the slot was claimed: closing still ends cleanly.
    messages = []
    window.projects.autosaveFailed.connect(messages.append)
    window.projects.autosave_file = blocked
    window.projects.close()
    assert blocked.is_dir() and len(messages) == 1 and messages[0].startswith(f"cannot remove the autosave {blocked}")
    window.projects.autosave_file = None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_given_as_a_project_is_refused_not_waited_on(window, monkeypatch, tmp_path):
    fifo = tmp_path / "pipe.fbproj"
    os.mkfifo(fifo)
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warned.append(a[2]))
    app_module.start_session(window, [str(fifo)])  # would block forever reading the pipe
    assert warned == [f"{fifo}: not a regular file (a FIFO, device or socket); a project is a .fbproj file"]
    assert len(window.workspace) == 0 and window.projects.path is None
