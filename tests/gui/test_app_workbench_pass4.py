"""The workbench, fourth pass (issue 67): a completion popup wide enough for the name
and the id, the saved window fitted to the screen it opens on, one heading per menu in
the shortcuts help, the jobs legend in plain words with colours that stay."""

from __future__ import annotations

from PySide6.QtWidgets import QLineEdit

from fastbioner.io.documents import Document, Source, Span


def test_the_concept_popup_shows_each_offer_whole(window, qtbot):
    docs = [Document("1", "Lithium carbonate and cocaine.",
                     spans=[Span(0, 17, "Chemical", concept_id="D016651"), Span(22, 29, "Chemical", Source.MODEL)])]
    window.workspace.add_documents(docs, origin="test")
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    qtbot.waitUntil(window.features["concept_lookup"].lookup.up_to_date, timeout=30000)  # built in the background
    window.resize(1024, 700)
    entities = window.entities
    assert entities.edit_concept(window.workspace.document(0).spans[1])
    editor = entities.table.findChild(QLineEdit)
    completer = window.features["concept_lookup"].delegate.last_completer
    qtbot.keyClicks(editor, "cocai")
    popup = completer.popup()
    qtbot.waitUntil(popup.isVisible)
    first = completer.items.item(0).text()
    assert " — " in first and "cocaine" in first.lower()
    needed = popup.fontMetrics().horizontalAdvance(first)
    assert popup.viewport().width() >= needed, (popup.viewport().width(), needed, first)
    assert popup.width() > editor.width()


def test_a_window_saved_on_a_larger_screen_fits_the_one_it_opens_on(qtbot):
    from PySide6.QtCore import QRect, QSize

    from fastbioner_gui.layout_fit import fitted_rect
    from fastbioner_gui.main_window import MainWindow

    # The rule: a 1400x860 window (frame 10 px wide, 30 px title) on a 1024x700 screen.
    room = QRect(0, 0, 1024, 700)
    got = fitted_rect(QRect(300, 200, 1410, 890), QSize(1400, 860), room)
    assert (got.width() + 10, got.height() + 30) == (1024, 700) and (got.x(), got.y()) == (0, 0)
    assert fitted_rect(QRect(10, 10, 510, 430), QSize(500, 400), room) == QRect(10, 10, 500, 400)  # fits: as is
    # The window: its saved geometry, from a larger screen, restored onto this one.
    first = MainWindow()
    screen = first.screen().availableGeometry()
    first.setGeometry(screen.x() + 200, screen.y() + 150, screen.width() + 600, screen.height() + 400)
    first.save_layout()
    first.projects.mark_clean()
    first.close()
    again = MainWindow()
    again.show()
    try:
        frame = again.frameGeometry()
        assert screen.contains(frame), (screen, frame)
    finally:
        again.projects.mark_clean()
        again.close()


def test_the_shortcuts_help_heads_each_menu_once(window):
    from fastbioner_gui.dialogs.shortcuts import shortcuts_html

    page = shortcuts_html(window.menuBar())
    assert page.count("<b>Curate</b>") == 1 and "<b>Curate › Boundary</b>" in page


def test_the_jobs_legend_is_in_plain_words_and_a_resumed_run_keeps_its_colours(qtbot):
    from fastbioner.base.jobs import ProgressEvent
    from fastbioner_gui.widgets.curves import Curves

    def colours(order):
        curves = Curves()
        qtbot.addWidget(curves)
        curves.follow([ProgressEvent("distill", step=1, total=4, losses={k: 1.0 for k in order})])
        return curves, {k: box.styleSheet() for k, box in curves.toggles.items()}

    first, before = colours(["loss", "soft", "gold", "hidden-norm"])
    _resumed, after = colours(["hidden-norm", "gold", "loss", "soft"])   # another order on resuming
    assert before == after
    texts = [box.text() for box in first.toggles.values()]
    assert not any("L_" in t or "PKD" in t for t in texts) and "hidden states (normalised)" in texts
    assert "L_ML" in first.toggles["hidden-norm"].toolTip()


def test_interrupted_runs_opened_while_a_run_stops_say_why_and_follow_it(window, qtbot):
    import json
    import threading

    from fastbioner.models.registry import Registry
    from fastbioner.train.leftovers import checkpoints_root
    from fastbioner_gui.dialogs.leftovers_dialog import LeftoversDialog

    latest = checkpoints_root(Registry()) / "my-student" / "latest"
    latest.mkdir(parents=True)

    def saved(step):
        (latest / "state.json").write_text(json.dumps({"state": {"step": step, "total_steps": 300}}))
    saved(48)
    (latest / "weights-student.safetensors").write_bytes(b"\0" * 1000)
    stopped = threading.Event()

    def stopping(on_event, cancel):   # a cancelled run still writing its last checkpoint
        stopped.wait(30)
        saved(60)
    job = window.jobs.start("Distil my-student", stopping, kind="train", model_name="my-student")
    dialog = LeftoversDialog(window.jobs, window)
    qtbot.waitUntil(lambda: dialog.listing.ended and dialog.table.rowCount() == 1, timeout=30000)
    assert not dialog.resume_button.isEnabled() and not dialog.delete_button.isEnabled()
    assert "still stopping" in dialog.delete_button.toolTip() and "still stopping" in dialog.status.text()
    stopped.set()
    qtbot.waitUntil(lambda: job.ended and dialog.listing.ended and dialog.delete_button.isEnabled(), timeout=30000)
    qtbot.waitUntil(lambda: dialog.table.item(0, 2).text().startswith("step 60"), timeout=30000)
    assert "still stopping" not in dialog.status.text()
    dialog.reject()
