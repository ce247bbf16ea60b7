"""Nothing lost, nothing crashes (issue 13), in the app: autosave keeps up with steady
editing, a session killed mid-editing is recovered with its edits, a bad project
(even the last one) is reported while the app starts, one bad file in a folder is
reported while the others load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from fastbioner.io.documents import Source
from fastbioner.curate.project import autosave_folder, load_project, save_project
from fastbioner_gui import app as app_module
from fastbioner_gui.loading import read_files
from fastbioner_gui.main_window import MainWindow
from fastbioner_gui.settings import settings_store

REPO = Path(__file__).resolve().parents[2]


def curated(project) -> set:
    return {s for s in project.entries[0].document.spans if s.source is Source.CURATOR}


def test_steady_editing_is_autosaved(window, qtbot):
    """Edits closer together than the autosave interval: each used to restart the
    timer, so none was ever saved while the curator kept working."""
    from gui_documents import make_documents

    window.projects.set_autosave_interval(0.3)
    window.projects.claim_autosave_slot()
    autosave = window.projects.autosave_file
    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    text = window.workspace.document(0).text
    positions = [i for i, c in enumerate(text) if not c.isspace()]
    made = []
    for n in range(300):  # steady editing: one edit every 50 ms, never a pause (50 intervals)
        k = positions[n % len(positions)]
        made.append(window.curation.add(k, k + 1, ("Chemical", "Disease")[(n // len(positions)) % 2], exact=True))
        qtbot.wait(50)
        if autosave.is_file() and made[0] in curated(load_project(autosave)):
            break
    else:
        pytest.fail("300 edits 50 ms apart and nothing autosaved")


CHILD = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from fastbioner.io.documents import Document
from fastbioner_gui.main_window import MainWindow

app = QApplication([])
window = MainWindow()
window.show()
window.projects.claim_autosave_slot()
window.workspace.add_documents([Document.from_parts("1", "Lithium toxicity in a newborn infant.",
                                                    [(None, "Heart failure and high serum lithium.")]),
                                Document.from_parts("2", "Cocaine and seizures.")])
spans = []

def edit():
    # Five new entities, then relabel them in turn for as long as it runs (the document
    # keeps its size however long the curator works).
    if window.row != 0:
        return
    n = len(spans) if len(spans) < 5 else edit.count
    if len(spans) < 5:
        spans.append(window.curation.add(2 * n, 2 * n + 1, "Chemical", exact=True))
    else:
        i = n % 5
        label = "Disease" if spans[i].label == "Chemical" else "Chemical"
        window.curation.relabel(spans[i], label)
        spans[i] = spans[i].with_(label=label)
    edit.count = n + 1

edit.count = 0

timer = QTimer()
timer.timeout.connect(edit)
timer.start(200)   # a curator who never pauses for a whole second
print("editing", flush=True)
app.exec()
"""


def test_a_session_killed_mid_editing_is_recovered_with_its_edits(qtbot, monkeypatch):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
           "QT_QPA_PLATFORM": "offscreen"}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    autosave = autosave_folder() / "autosave-0.fbproj"
    try:
        assert child.stdout.readline() == "editing\n"
        deadline = time.monotonic() + 180  # generous: the machine may be loaded
        relabelled = False
        while not relabelled:  # five entities added, and at least one relabelled since
            assert child.poll() is None, "the app died before it was killed"
            assert time.monotonic() < deadline, "steady editing was never autosaved"
            if autosave.is_file():
                saved = curated(load_project(autosave))
                relabelled = len(saved) == 5 and any(s.label == "Disease" for s in saved)
            time.sleep(0.1)  # polling the file, not timing anything
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    on_disk = curated(load_project(autosave))
    assert len(on_disk) == 5 and {s.start for s in on_disk} == {0, 2, 4, 6, 8}

    fresh = MainWindow()
    try:
        asked = []
        monkeypatch.setattr(QMessageBox, "question",
                            lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Yes)
        app_module.start_session(fresh, [])
        assert asked and "did not close cleanly" in asked[0]
        qtbot.waitUntil(lambda: fresh.row == 0, timeout=30000)
        assert len(fresh.workspace) == 2
        assert curated(fresh.workspace.project) == on_disk
        assert fresh.projects.modified
    finally:
        fresh.projects.mark_clean()
        fresh.projects.close()
        fresh.close()


BAD_HEADERS = [
    {"models": [1, 2]}, {"labels": 5}, {"version": 0}, {"version": -1}, {"version": True},
    {"info": {"deep": json.loads("[" * 100 + "]" * 100)}},
]


@pytest.mark.parametrize("changes", BAD_HEADERS)
def test_a_bad_last_project_is_reported_and_the_app_starts(window, qtbot, monkeypatch, tmp_path, changes):
    from fastbioner.curate.project import Project, entry_for
    from gui_documents import make_documents

    path = tmp_path / "last.fbproj"
    save_project(Project([entry_for(d) for d in make_documents()]), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = {**json.loads(lines[0]), **changes}
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    settings_store().setValue("session/last_project", str(path))
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warned.append(a[2]))
    app_module.start_session(window, [])
    assert len(warned) == 1 and warned[0].startswith(f"{path}:1: ")
    assert len(window.workspace) == 0
    window.workspace.add_documents(make_documents())  # the rest of the app works
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)


def test_a_project_with_an_infinite_offset_or_cut_short_is_reported(window, monkeypatch, tmp_path):
    from fastbioner.curate.project import Project, entry_for
    from gui_documents import make_documents

    path = tmp_path / "p.fbproj"
    save_project(Project([entry_for(d) for d in make_documents()]), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warned.append(a[2]))
    path.write_text("\n".join([lines[0], lines[1].replace('"start": 0', '"start": 1e999', 1), *lines[2:]]))
    assert not window.open_project(str(path))
    path.write_text("\n".join(lines[:3]) + "\n")
    assert not window.open_project(str(path))
    assert warned == [f"{path}:2: number 1e999 is out of range (not finite)",
                      f"{path}:3: the header says 3 document(s) but the file holds 2 (the file was cut short?)"]
    assert len(window.workspace) == 0


def test_a_bad_file_in_a_folder_is_reported_and_the_others_load(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for n in (1, 2, 3):
        (folder / f"{n}.pubtator").write_text(f"{n}|t|Cocaine.\n{n}|a|Seizures.\n\n", encoding="utf-8")
    (folder / "bad.bioc.xml").write_text(
        "<collection><document><id>9</id><passage><offset>0</offset><text>Cocaine</text>"
        "<annotation id='1'><infon key='type'>Chemical</infon><infon key='score'>high</infon>"
        "<location offset='0' length='7'/></annotation></passage></document></collection>", encoding="utf-8")
    result = read_files([str(folder)], on_event=lambda event: None, cancel=None)
    assert result.documents == 3 and len(result.files) == 3
    assert result.errors == [f"{folder / 'bad.bioc.xml'}:1: document 9: annotation '1' score 'high' is not a "
                             f"finite number"]


def test_an_autosave_that_cannot_be_written_is_reported_not_fatal(window, tmp_path):
    from gui_documents import make_documents

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    window.projects.autosave_file = blocker / "autosave-0.fbproj"  # its folder is a file
    window.workspace.add_documents(make_documents())
    messages = []
    window.projects.autosaveFailed.connect(messages.append)
    window.projects.autosave_now()
    assert messages == [f"autosave to {blocker / 'autosave-0.fbproj'} failed: {blocker / 'autosave-0.fbproj'}: "
                        f"cannot write: {blocker} is not a folder"]
    window.projects.autosave_file = None


LAUNCH = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from fastbioner_gui import app as app_module

qt = QApplication([])
QMessageBox.warning = staticmethod(lambda *a, **k: print("WARNING:", a[2], flush=True))
QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes)
QTimer.singleShot(0, qt.quit)  # up and running: leave at once
sys.exit(app_module.main(["fastbioner-gui"]))
"""


@pytest.mark.parametrize("damage", ["header", "autosave"])
def test_the_real_launch_survives_a_bad_last_project_and_a_bad_autosave(tmp_path, damage):
    """As the issue saw it: a bad last project aborted every launch (exit 134)."""
    path = tmp_path / "last.fbproj"
    path.write_text('{"format": "fastbioner-project", "version": 1, "models": [1, 2]}\n', encoding="utf-8")
    if damage == "header":
        settings_store().setValue("session/last_project", str(path))
        settings_store().sync()
    else:
        autosave_folder().mkdir(parents=True, exist_ok=True)
        (autosave_folder() / "autosave-0.fbproj").write_text("[" * 5000 + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
           "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", LAUNCH], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    expected = (f"WARNING: {path}:1: bad project header: 'models' must be an object" if damage == "header"
                else f"WARNING: {autosave_folder() / 'autosave-0.fbproj'}:1: JSON nested deeper than 64 levels")
    assert expected in done.stdout
