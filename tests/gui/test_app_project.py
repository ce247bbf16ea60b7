"""Projects in the window: save and open a working set, autosave after every edit,
and recovery of the autosave a crashed session left."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from fastbioner.io.documents import Source, Span
from fastbioner.curate.project import DocStatus, load_project
from fastbioner_gui import app as app_module
from fastbioner_gui.main_window import MainWindow


def _edit(window):
    doc = window.workspace.document(0)
    start = doc.text.index("serum")
    window.curation.add(start, start + 5, "Chemical")
    return Span(start, start + 5, "Chemical", Source.CURATOR)


def test_save_and_open_restore_the_working_set(loaded, tmp_path, qtbot):
    added = _edit(loaded)
    assert loaded.projects.modified and loaded.isWindowModified()
    assert loaded._save_to(tmp_path / "work")
    path = tmp_path / "work.fbproj"
    assert path.is_file() and not loaded.projects.modified
    assert "work.fbproj" in loaded.windowTitle()
    other = MainWindow()
    try:
        other.open_project(str(path))
        qtbot.waitUntil(lambda: other.row == 0, timeout=30000)
        assert len(other.workspace) == 3
        assert added in other.workspace.document(0).spans
        assert other.workspace.entry(0).status is DocStatus.IN_REVIEW
        assert other.view.toPlainText() == loaded.view.toPlainText()
        assert not other.projects.modified and other.stack.count() == 0
    finally:
        other.projects.close()
        other.close()


def test_every_edit_is_autosaved_and_a_crash_is_recovered(window, qtbot, monkeypatch):
    from gui_documents import make_documents

    window.projects.set_autosave_interval(0.1)
    assert window.projects.claim_autosave_slot() is None  # a fresh home: nothing to recover
    autosave = window.projects.autosave_file
    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    added = _edit(window)
    qtbot.waitUntil(lambda: autosave.is_file() and added in load_project(autosave).entries[0].document.spans,
                    timeout=30000)
    # A crash: the process dies without closing the project, so its lock goes stale.
    window.projects._locks[0].unlock()

    fresh = MainWindow()
    try:
        asked = []
        monkeypatch.setattr(QMessageBox, "question",
                            lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Yes)
        app_module.start_session(fresh, [])
        assert asked and "did not close cleanly" in asked[0]
        qtbot.waitUntil(lambda: fresh.row == 0, timeout=30000)
        assert len(fresh.workspace) == 3
        assert added in fresh.workspace.document(0).spans
        assert fresh.projects.modified  # recovered work is unsaved until the curator saves it
        assert fresh.projects.autosave_file == autosave
    finally:
        fresh.projects.mark_clean()
        fresh.projects.close()
        fresh.close()
    assert not autosave.exists()  # a clean exit leaves no autosave behind


def test_two_running_sessions_never_share_an_autosave(window):
    window.projects.claim_autosave_slot()
    other = MainWindow()
    try:
        other.projects.claim_autosave_slot()
        assert other.projects.autosave_file != window.projects.autosave_file
    finally:
        other.projects.close()
        other.close()


def test_keep_for_later_leaves_the_leftover_and_autosaves_elsewhere(window, qtbot, monkeypatch):
    window.projects.claim_autosave_slot()
    leftover = window.projects.autosave_file
    window.workspace.add_documents(__import__("gui_documents").make_documents())
    window.projects.autosave_now()
    window.projects._locks[0].unlock()  # crash
    fresh = MainWindow()
    try:
        monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
        app_module.start_session(fresh, [])
        assert fresh.projects.autosave_file not in (None, leftover)
        assert leftover.exists()
    finally:
        fresh.projects.close()
        fresh.close()
    assert leftover.exists()
