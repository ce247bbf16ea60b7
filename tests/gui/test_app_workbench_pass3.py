"""The workbench's third pass (issue 48): a bulk relabel is asked for and one undo
step; undo and redo keep the curator on the entity they changed (F2, N and Tab carry
on from it); Ctrl+Y redoes and the help lists it and F2; a first launch is not
"modified"; both unsaved-work questions have the same buttons; export reports and
PubTator order; the documents panel's count and current document under a search; a
recovery opens on the document being edited; SIGTERM cleans up and stale autosave
locks are swept; ``--help`` and the X11 library check run before Qt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QApplication, QLineEdit, QMessageBox

from fastbioner.io.documents import Document, Source, Span
from fastbioner.curate.project import autosave_folder, load_project
from fastbioner_gui import app as app_module
from fastbioner_gui import xcb_check
from fastbioner_gui.dialogs.export_dialog import ALL, ExportDialog
from fastbioner_gui.dialogs.shortcuts import shortcut_rows, shortcuts_html
from fastbioner_gui.main_window import MainWindow
from fastbioner_gui.project import sweep_stale_locks

REPO = Path(__file__).resolve().parents[2]
CTRL = Qt.KeyboardModifier.ControlModifier


def _span(window, text):
    doc = window.workspace.document(window.row)
    return next(s for s in doc.spans if doc.span_text(s) == text)


def _current_span(window):
    table = window.entities.table
    index = table.currentIndex()
    assert index.isValid(), "the entity table has no current row"
    return window.entities.model.span(window.entities.proxy.mapToSource(index).row())


def _answer(monkeypatch, button, asked):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1:]) or button)


# 1: bulk relabel ---------------------------------------------------------------
def test_select_all_then_a_digit_asks_first_and_is_one_undo_step(loaded, qtbot, monkeypatch):
    doc, table = loaded.workspace.document(0), loaded.entities.table
    before, commands = list(doc.spans), loaded.stack.count()
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_A, CTRL)  # select every entity
    assert len(loaded.entities.selected_spans()) == 4
    asked = []
    _answer(monkeypatch, QMessageBox.StandardButton.No, asked)
    qtbot.keyClick(table, Qt.Key.Key_2)  # a stray digit: asked, "No" changes nothing
    assert len(asked) == 1 and doc.spans == before and loaded.stack.count() == commands
    title, text = asked[0][0], asked[0][1]
    assert title == "Relabel several entities?"
    assert text.startswith("Relabel 3 entities as Chemical?") and "1 of them is gold" in text
    assert "1 already Chemical" in text
    _answer(monkeypatch, QMessageBox.StandardButton.Yes, asked)
    qtbot.keyClick(table, Qt.Key.Key_2)
    assert {s.label for s in doc.spans} == {"Chemical"}
    gold = Span(0, 17, "Chemical", concept_id="D016651")
    assert gold in doc.spans  # already Chemical: still gold, not turned "accepted"
    assert loaded.stack.count() == commands + 1  # one undo step for the lot
    loaded.commands["edit.undo"].trigger()
    assert doc.spans == before


def test_a_digit_on_a_gold_entity_of_that_label_changes_nothing(loaded, qtbot):
    gold = Span(0, 17, "Chemical", concept_id="D016651")
    loaded.keys.select(gold)
    loaded.view.setFocus()
    qtbot.keyClick(loaded.view, Qt.Key.Key_2)  # Chemical already
    assert gold in loaded.workspace.document(0).spans and loaded.stack.count() == 0


# 2 and 12: focus after undo and redo; Ctrl+Y; the help page -------------------------
def test_undo_and_redo_keep_the_edited_entity_current_so_f2_and_n_carry_on(loaded, qtbot):
    table = loaded.entities.table
    heart = _span(loaded, "heart failure")
    loaded.keys.select(heart)
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_2)  # relabel the suggestion as Chemical
    relabelled = heart.with_(label="Chemical", source=Source.CURATOR, score=None)
    assert relabelled in loaded.workspace.document(0).spans
    qtbot.keyClick(table, Qt.Key.Key_Z, CTRL)
    assert heart in loaded.workspace.document(0).spans
    assert table.hasFocus() and _current_span(loaded) == heart
    assert loaded.entities.selected_spans() == [heart] and loaded.view.selected_span == heart
    qtbot.keyClick(table, Qt.Key.Key_Y, CTRL)  # Ctrl+Y redoes
    assert relabelled in loaded.workspace.document(0).spans
    assert table.hasFocus() and _current_span(loaded) == relabelled
    qtbot.keyClick(table, Qt.Key.Key_Z, CTRL)
    # F2 edits the concept id of that entity; what is typed goes into the editor.
    qtbot.keyClick(table, Qt.Key.Key_F2)
    assert table.state() == QAbstractItemView.State.EditingState
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit)
    qtbot.keyClicks(editor, "D006333")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: any(s.concept_id == "D006333" for s in loaded.workspace.document(0).spans),
                    timeout=10000)
    assert not any(s.source is Source.MODEL and s.start == heart.start for s in loaded.workspace.document(0).spans)
    # N goes on from there (to "lithium", the next entity), not back to the first.
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_N)
    assert loaded.view.selected_span == _span(loaded, "lithium")
    assert _current_span(loaded) == _span(loaded, "lithium")


def test_tab_into_the_table_lands_on_the_selected_entity(loaded, qtbot):
    lithium = _span(loaded, "lithium")
    loaded.view.setFocus()
    for _ in range(4):  # N from the reading view, to the last entity
        qtbot.keyClick(loaded.view, Qt.Key.Key_N)
    assert loaded.view.selected_span == lithium
    loaded.entities.table.setFocus(Qt.FocusReason.TabFocusReason)
    assert _current_span(loaded) == lithium
    assert loaded.entities.selected_spans() == [lithium]


def test_the_help_lists_f2_and_both_redo_keys(loaded):
    window = loaded
    window.curation.add(0, 5, "Disease")
    window.commands["edit.undo"].trigger()  # "Undo …" and "Redo Add …" in the Edit menu: plain names in the help
    rows = {(menu, command): keys for menu, command, keys in shortcut_rows(window.menuBar())}
    assert rows[("Edit", "Undo")] == "Ctrl+Z"
    assert rows[("Edit", "Redo")] == "Ctrl+Y, Ctrl+Shift+Z"
    assert rows[("Curate", "Edit concept id")] == "F2"
    assert ", Redo<" not in shortcuts_html(window.menuBar())


# 9: first launch, the unsaved-work questions ----------------------------------------
def test_the_first_launch_samples_are_not_modified_until_an_edit(window, qtbot, monkeypatch):
    asked = []
    _answer(monkeypatch, QMessageBox.StandardButton.Cancel, asked)
    app_module.start_session(window, [])
    qtbot.waitUntil(lambda: len(window.workspace) >= 20 and window.row == 0, timeout=30000)
    qtbot.waitUntil(lambda: not window.loader.jobs.running(), timeout=30000)
    assert not window.projects.modified and not window.isWindowModified()
    assert "Untitled[*]" in window.windowTitle() and not asked
    assert window.maybe_save() and not asked  # nothing to save: nothing asked
    window.curation.add(0, 5, "Disease")
    assert window.projects.modified
    assert not window.maybe_save() and asked[0][0] == "Unsaved changes"  # Cancel: stay


def test_first_launch_with_a_model_tagged_samples_are_not_modified(qtbot, tmp_path, monkeypatch):
    from tiny_models import make_tiny_model

    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(make_tiny_model(tmp_path / "default-model")))
    window = MainWindow()
    window.show()
    try:
        app_module.start_session(window, [])
        qtbot.waitUntil(lambda: len(window.workspace) >= 20 and window.workspace.entry(19).tagged_by == "default",
                        timeout=60000)
        # The run's end as the app acts on it (``finished``, then ``applied``): ``busy`` turns
        # false when its result arrives, a moment before its thread has ended.
        qtbot.waitUntil(lambda: window.tagging.job is not None and window.tagging.job.ended, timeout=60000)
        assert window.stack.count() == 1 and not window.projects.modified
    finally:
        window.jobs.cancel_all()
        window.projects.mark_clean()
        window.close()


def test_both_unsaved_work_questions_have_the_same_buttons(loaded, qtbot, monkeypatch):
    seen = []
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, text, buttons, default:
                        seen.append((title, buttons, default)) or QMessageBox.StandardButton.Cancel)
    loaded.curation.add(0, 5, "Disease")
    assert not loaded.maybe_save()
    loaded.projects.claim_autosave_slot()
    loaded.projects.autosave_now()
    loaded.projects._locks[0].unlock()  # as if it had crashed
    fresh = MainWindow()
    try:
        app_module.start_session(fresh, [])  # "Cancel": keep it for later
        assert [t for t, _b, _d in seen] == ["Unsaved changes", "Recover unsaved work?"]
    finally:
        fresh.jobs.cancel_all()
        fresh.projects.close()
        fresh.close()
    B = QMessageBox.StandardButton
    assert seen[0][1:] == seen[1][1:] == (B.Yes | B.No | B.Cancel, B.Yes)


# 13: export ------------------------------------------------------------------------
def _export(dialog, qtbot):
    job = dialog.export()
    assert job is not None
    with qtbot.waitSignal(job.finished, timeout=30000):
        pass
    return dialog.result


def test_switching_format_clears_the_bio_report_and_pubtator_is_in_offset_order(loaded, tmp_path, qtbot):
    loaded.curation.add(0, 26, "Disease", exact=True)  # overlaps two gold spans: BIO drops them
    heart = _span(loaded, "heart failure")
    loaded.curation.accept([heart])
    added = loaded.curation.add(0, 7, "Chemical", exact=True)  # "Lithium" replaces nothing: nested
    dialog = ExportDialog(loaded.workspace, [], loaded.settings, loaded)
    dialog.which_buttons[ALL].setChecked(True)
    dialog.format.setCurrentText("BIO / CoNLL (IOB2)")
    dialog.path.setText(str(tmp_path / "out.conll"))
    _export(dialog, qtbot)
    assert "BIO could not hold" in dialog.report.text() and not dialog.dropped.isHidden()
    dialog.format.setCurrentText("PubTator")
    assert dialog.report.text() == "" and dialog.dropped.isHidden()
    dialog.path.setText(str(tmp_path / "out.pubtator"))
    _export(dialog, qtbot)
    lines = [line.split("\t") for line in (tmp_path / "out.pubtator").read_text().splitlines()
             if line.startswith("6794356\t")]
    starts = [(int(f[1]), int(f[2])) for f in lines]
    assert starts == sorted(starts) and (added.start, added.end) in starts
    assert all(len(f) == 6 for f in lines)
    # Accepting proposed the shipped dictionary's id (issue 53); six columns all the same.
    assert [f[5] for f in lines if f[3] == "heart failure"] == ["D006333"]
    assert [f[5] for f in lines if f[3] == "Lithium"] == [""]  # no concept id: sixth column empty


# 14: the documents panel --------------------------------------------------------------
def _docs(n, first=5000, word="seizures"):
    return [Document.from_parts(str(first + i), f"Doc {i} on {word}.", [(None, "Text.")]) for i in range(n)]


def test_the_count_follows_files_opened_under_a_search_and_clearing_returns_to_the_current(loaded, qtbot):
    panel = loaded.documents
    panel.set_current_row(2)
    assert loaded.row == 2
    panel.search.setText("cocaine")
    assert panel.count.text() == "1 of 3 documents"
    assert loaded.row == 2  # the reading view keeps the document the search hides
    loaded.workspace.add_documents(_docs(4, word="aspirin"))  # none matches the search
    assert panel.count.text() == "1 of 7 documents"
    loaded.workspace.add_documents(_docs(1, first=9000, word="cocaine"))
    assert panel.count.text() == "2 of 8 documents"
    panel.search.clear()
    assert loaded.row == 2 and panel.current_row() == 2
    assert panel.selected_rows() == [2]


def test_a_recovery_opens_on_the_document_being_edited(window, qtbot, monkeypatch):
    from gui_documents import make_documents

    window.projects.claim_autosave_slot()
    window.workspace.add_documents(make_documents())
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    window.documents.set_current_row(1)
    window.curation.add(8, 15, "Disease")
    window.projects.autosave_now()
    window.projects._locks[0].unlock()  # a crash
    fresh = MainWindow()
    fresh.show()
    try:
        _answer(monkeypatch, QMessageBox.StandardButton.Yes, [])
        app_module.start_session(fresh, [])
        qtbot.waitUntil(lambda: fresh.row == 1, timeout=30000)
        assert fresh.documents.current_row() == 1
        assert "autosave_row" not in fresh.workspace.project.info
    finally:
        fresh.projects.mark_clean()
        fresh.projects.close()
        fresh.close()


# 15: SIGTERM and stale locks ------------------------------------------------------------
SIGTERM_CHILD = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from fastbioner_gui import app as app_module

qt = QApplication([])
QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes)  # never shown

def ready():
    window = next((w for w in qt.topLevelWidgets() if type(w).__name__ == "MainWindow"), None)
    if window is None or window.row != 0:
        return
    timer.stop()
    if sys.argv[1] == "edit":
        window.curation.add(0, 7, "Chemical")
        window.projects.autosave_now()
    print("ready", window.projects.autosave_file, window.projects.modified, flush=True)

timer = QTimer()
timer.timeout.connect(ready)
timer.start(20)
sys.exit(app_module.main(["fastbioner-gui", sys.argv[2]]))
"""


@pytest.mark.parametrize("edit", [True, False])
def test_sigterm_ends_the_app_cleanly(tmp_path, edit):
    source = tmp_path / "in.pubtator"
    source.write_text("1|t|Lithium toxicity.\n1|a|Heart failure.\n\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
           "QT_QPA_PLATFORM": "offscreen", "FASTBIONER_DEFAULT_MODEL": str(tmp_path / "no-model")}
    child = subprocess.Popen([sys.executable, "-c", SIGTERM_CHILD, "edit" if edit else "clean", str(source)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = child.stdout.readline().split()
        assert line and line[0] == "ready", child.stderr.read()[-2000:]
        autosave = Path(line[1])
        assert autosave.parent == autosave_folder() and (autosave.parent / "autosave-0.lock").exists()
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=120) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=60)
    assert "Traceback" not in child.stderr.read()
    assert list(autosave.parent.glob("*.lock")) == []  # the lock is released
    if edit:  # work not saved stays, for the next start to offer
        assert line[2] == "True"
        spans = load_project(autosave).entries[0].document.spans
        assert [(s.start, s.end, s.label) for s in spans] == [(0, 7, "Chemical")]
    else:  # opening a file counts as a change: it is kept too
        assert autosave.exists()


LOCK_HOLDER = """
import sys, time
from PySide6.QtCore import QLockFile
lock = QLockFile(sys.argv[1])
assert lock.tryLock(0)
print("locked", flush=True)
time.sleep(600)
"""


def test_stale_autosave_locks_are_swept_at_start(window, tmp_path):
    folder = autosave_folder()
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)])}
    holders = [subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(folder / f"autosave-{n}.lock")], env=env,
                                stdout=subprocess.PIPE, text=True) for n in (3, 7)]
    try:
        assert [h.stdout.readline() for h in holders] == ["locked\n", "locked\n"]
        holders[0].send_signal(signal.SIGKILL)  # dies holding its lock: a stale lock file
        holders[0].wait(timeout=60)
        assert (folder / "autosave-3.lock").exists()
        window.projects.claim_autosave_slot()
        assert not (folder / "autosave-3.lock").exists()  # swept
        assert (folder / "autosave-7.lock").exists()  # a live session's lock stays
        assert (folder / "autosave-0.lock").exists() and window.projects.autosave_file.name == "autosave-0.fbproj"
        assert sweep_stale_locks(folder) == []
    finally:
        for h in holders:
            h.kill()
            h.wait(timeout=60)


# 11 and 3: before Qt --------------------------------------------------------------------
HELP_CHILD = """
import sys
from fastbioner_gui.app import main
try:
    main(["fastbioner-gui", "--help"])
except SystemExit as done:
    print("exit", done.code, "qt-imported" if any(m.startswith("PySide6") for m in sys.modules) else "no-qt")
"""


def test_help_prints_usage_and_exits_0_before_qt_or_a_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "core"), str(REPO)])
    done = subprocess.run([sys.executable, "-c", HELP_CHILD], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.stdout.startswith("usage: fastbioner-gui")
    assert done.stdout.strip().endswith("exit 0 no-qt") and done.stderr == ""
    script = Path(sys.executable).with_name("fastbioner-gui")
    if script.is_file():  # the installed entry point, as a user runs it
        done = subprocess.run([str(script), "--help"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.startswith("usage: fastbioner-gui")


def test_qt_options_go_to_qt_and_files_to_the_app():
    args, qt_argv = app_module.parse_arguments(["fastbioner-gui", "-platform", "offscreen", "a.pubtator",
                                                "--style=Fusion", "b.fbproj"])
    assert args.files == ["a.pubtator", "b.fbproj"]
    assert qt_argv == ["fastbioner-gui", "-platform", "offscreen", "--style=Fusion"]


def test_xcb_platform_detection():
    assert xcb_check.uses_xcb({"DISPLAY": ":0"}, "linux")
    assert xcb_check.uses_xcb({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":0"}, "linux")
    assert not xcb_check.uses_xcb({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}, "linux")
    assert not xcb_check.uses_xcb({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w", "XDG_SESSION_TYPE": "wayland"}, "linux")
    assert not xcb_check.uses_xcb({"DISPLAY": ":0"}, "darwin")
    missing = xcb_check.missing_xcb_packages(lambda lib: lib not in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1"))
    assert missing == ["libxcb-icccm4", "libxcb-keysyms1"]


def test_missing_x11_libraries_are_named_in_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(xcb_check, "missing_xcb_packages", lambda: ["libxcb-icccm4", "libxcb-keysyms1"])
    assert app_module.main(["fastbioner-gui"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "libxcb-icccm4 libxcb-keysyms1" in lines[0] and "system-deps.sh" in lines[0]


def test_system_deps_installs_the_xcb_packages():
    script = (REPO / "scripts" / "system-deps.sh").read_text()
    for package in ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0",
                    "libxkbcommon-x11-0"):
        assert package in script
    for library, package in xcb_check.XCB_LIBRARIES.items():  # the app checks what the script installs
        assert f"[{library}]={package}" in script


def test_tab_from_the_reading_view_goes_to_the_table_and_a_filter_keeps_the_entity(loaded, qtbot):
    toxicity = Span(18, 26, "Disease")
    loaded.keys.select(toxicity)
    loaded.view.setFocus()
    qtbot.keyClick(loaded.view, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is loaded.entities.table  # not its filter field
    assert _current_span(loaded) == toxicity
    panel = loaded.entities
    panel.search.setText("lithium")  # hides it: still the entity the curator is on
    assert loaded.view.selected_span == toxicity
    panel.search.clear()
    assert panel.selected_spans() == [toxicity] and _current_span(loaded) == toxicity


QUESTION_CHILD = """
import os, signal, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from fastbioner_gui import app as app_module

qt = QApplication([])

def asked(*args, **kwargs):  # a start-up question, open when the signal comes
    QTimer.singleShot(0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    box = QMessageBox(QMessageBox.Icon.Question, "Recover unsaved work?", "?",
                      QMessageBox.StandardButton.Cancel)
    return box.exec()

QMessageBox.question = staticmethod(asked)
sys.exit(app_module.main(["fastbioner-gui"]))
"""


def test_sigterm_during_a_start_up_question_ends_the_app(tmp_path):
    folder = autosave_folder()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "autosave-0.fbproj").write_text("left by a crash\n", encoding="utf-8")  # the question is asked
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
           "QT_QPA_PLATFORM": "offscreen", "FASTBIONER_DEFAULT_MODEL": str(tmp_path / "no-model")}
    done = subprocess.run([sys.executable, "-c", QUESTION_CHILD], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert list(folder.glob("*.lock")) == []
    assert (folder / "autosave-0.fbproj").read_text(encoding="utf-8") == "left by a crash\n"  # not answered: kept
