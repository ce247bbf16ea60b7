"""Files: open files and folders (and drops) in the background, a readable error
dialog naming file and line while the other files load, and export that reads back."""

from __future__ import annotations

import json

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from fastbioner.io.documents import Source
from fastbioner.io.formats import read_documents, write_documents
from fastbioner_gui.dialogs.export_dialog import ALL, REVIEWED, ExportDialog
from fastbioner_gui.dialogs.load_errors import LoadErrorsDialog
from gui_documents import make_documents


def _write_inputs(folder):
    folder.mkdir()
    write_documents(make_documents()[:2], folder / "good.pubtator")
    lines = [json.dumps({"id": "9", "text": "Aspirin helps."}), "{broken", ""]
    (folder / "bad.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (folder / "README.md").write_text("not a corpus", encoding="utf-8")
    return folder


def test_open_folder_loads_good_files_and_names_the_bad_line(window, tmp_path, qtbot):
    folder = _write_inputs(tmp_path / "in")
    with qtbot.waitSignal(window.loader.loaded, timeout=10000) as blocker:
        window.loader.open([folder])
    result = blocker.args[0]
    assert len(window.workspace) == 2 and window.row == 0
    assert window.workspace.entry(0).origin.endswith("good.pubtator")
    assert window.workspace.document(1).spans  # PubTator mentions came with it
    assert len(result.errors) == 1 and f"{folder / 'bad.jsonl'}:2:" in result.errors[0]
    dialogs = window.findChildren(LoadErrorsDialog)
    assert dialogs and dialogs[-1].isVisible()
    assert "bad.jsonl:2:" in dialogs[-1].details.toPlainText()
    assert "2 documents" in dialogs[-1].summary.text()
    dialogs[-1].close()


def test_dropped_files_open(window, tmp_path, qtbot):
    folder = _write_inputs(tmp_path / "in")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder / "good.pubtator"))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.loader.loaded, timeout=10000):
        window.dropEvent(event)
    assert [window.workspace.document(i).id for i in range(len(window.workspace))] == ["6794356", "1000"]


def _export(dialog, qtbot):
    """Press Save and wait for the background export."""
    job = dialog.export()
    assert job is not None
    with qtbot.waitSignal(job.finished, timeout=30000):
        pass
    return dialog.result


def test_export_bio_reports_overlaps_and_reads_back(loaded, tmp_path, qtbot):
    loaded.curation.add(0, 26, "Disease", exact=True)  # overlaps "Lithium carbonate" and "toxicity"
    dialog = ExportDialog(loaded.workspace, [], loaded.settings, loaded)
    dialog.format.setCurrentText("BIO / CoNLL (IOBES)")
    dialog.which_buttons[ALL].setChecked(True)
    dialog.path.setText(str(tmp_path / "out.conll"))
    result = _export(dialog, qtbot)
    assert result is not None and result.left_out == 2
    assert "2 overlapping span(s) BIO could not hold" in dialog.report.text()
    # each dropped span named, with its document
    listed = dialog.dropped.toPlainText()
    assert not dialog.dropped.isHidden()
    assert "6794356: 'Lithium carbonate' (Chemical, gold, 0..17): overlaps a longer span" in listed
    assert "6794356: 'toxicity' (Disease, gold, 18..26)" in listed
    back = list(read_documents(tmp_path / "out.conll"))
    assert len(back) == 3
    text = (tmp_path / "out.conll").read_text(encoding="utf-8")
    assert "S-Chemical" in text and "E-Disease" in text  # IOBES, and the longest span kept
    first = back[0]
    assert [(first.span_text(s), s.label) for s in first.spans][0] == ("Lithium carbonate toxicity", "Disease")


def test_export_takes_reviewed_documents_and_accepted_or_gold_entities_by_default(loaded, tmp_path, qtbot):
    ws = loaded.workspace
    heart = next(s for s in ws.document(0).spans if ws.document(0).span_text(s) == "heart failure")
    loaded.curation.accept([heart])  # one suggestion accepted, the other left undecided
    loaded.documents.set_current_row(1)
    loaded.curation.add(8, 15, "Disease")  # document 1 edited, but not marked reviewed
    dialog = ExportDialog(ws, [], loaded.settings, loaded)
    assert dialog.which_buttons[REVIEWED].isChecked()
    assert "Includes 0 reviewed documents" in dialog.includes.text() and "Ctrl+M" in dialog.includes.text()
    assert dialog.export() is None
    dialog.close()
    loaded.documents.set_current_row(0)
    loaded.commands["curate.mark_reviewed"].trigger()
    dialog = ExportDialog(ws, [], loaded.settings, loaded)
    assert dialog.includes.text() == ("Includes 1 reviewed document with 3 gold and accepted entities; "
                                      "leaves out 1 suggested.")
    dialog.format.setCurrentText("JSONL (lossless)")
    dialog.per_document.setChecked(True)
    dialog.path.setText(str(tmp_path / "reviewed"))
    assert _export(dialog, qtbot).documents == 1
    files = sorted(p.name for p in (tmp_path / "reviewed").iterdir())
    assert files == ["6794356.jsonl"]
    doc = next(read_documents(tmp_path / "reviewed" / files[0]))
    assert doc.spans == ws.document(0).spans_by(Source.GOLD, Source.CURATOR) and len(doc.spans) == 3


def test_export_runs_in_the_background_on_a_snapshot_and_reports_failures(loaded, tmp_path, qtbot):
    dialog = ExportDialog(loaded.workspace, [], loaded.settings, loaded, loaded.jobs)
    dialog.format.setCurrentText("JSONL (lossless)")
    dialog.which_buttons[ALL].setChecked(True)
    for box in dialog.sources.values():
        box.setChecked(True)
    dialog.path.setText(str(tmp_path / "all.jsonl"))
    before = list(loaded.workspace.document(0).spans)
    job = dialog.export()
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Save).isEnabled()
    loaded.curation.add(0, 26, "Disease", exact=True)  # an edit after Save is not in this export
    with qtbot.waitSignal(job.finished, timeout=30000):
        pass
    assert dialog.result is not None and "3 document" in dialog.report.text()
    assert next(read_documents(tmp_path / "all.jsonl")).spans == before
    assert dialog.buttons.button(dialog.buttons.StandardButton.Save).isEnabled()
    # bad destinations: one line naming the path, no traceback, nothing written
    (tmp_path / "blocker").write_text("a file, not a folder", encoding="utf-8")
    dialog.path.setText(str(tmp_path / "blocker" / "out.jsonl"))
    assert dialog.export() is None
    assert f"{tmp_path / 'blocker'} is a file, not a folder" in dialog.report.text()
    dialog.path.setText(str(tmp_path / "missing" / "out.jsonl"))
    assert dialog.export() is None and "does not exist" in dialog.report.text()
    assert "Error" not in dialog.report.text() and not (tmp_path / "missing").exists()
    dialog.path.setText(str(tmp_path / ("x" * 300 + ".jsonl")))
    assert dialog.export() is None and "name too long" in dialog.report.text()


def test_a_write_failure_is_one_line(loaded, tmp_path, qtbot, monkeypatch):
    """A failure only the writer meets (the disk fills up) is one line naming the file."""
    import errno

    from fastbioner_gui.dialogs import export_dialog

    def full(docs, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(export_dialog, "export_documents", full)
    dialog = ExportDialog(loaded.workspace, [], loaded.settings, loaded, loaded.jobs)
    dialog.which_buttons[ALL].setChecked(True)
    dialog.path.setText(str(tmp_path / "out.conll"))
    job = dialog.export()
    with qtbot.waitSignal(job.finished, timeout=30000):
        pass
    report = dialog.report.text()
    assert f"Export failed: cannot write {tmp_path / 'out.conll'}: No space left on device" in report
    assert "OSError" not in report and dialog.result is None


def test_the_same_pmid_twice_is_reported_not_added(window, tmp_path, qtbot):
    folder = _write_inputs(tmp_path / "in")
    with qtbot.waitSignal(window.loader.loaded, timeout=10000):
        window.loader.open([folder / "good.pubtator"])
    assert len(window.workspace) == 2
    with qtbot.waitSignal(window.loader.loaded, timeout=10000) as blocker:
        window.loader.open([folder / "good.pubtator"])  # the same file again
    assert len(window.workspace) == 2
    assert blocker.args[0].duplicates == ["6794356 (good.pubtator)", "1000 (good.pubtator)"]
    assert "2 already open, not added again" in window.statusBar().currentMessage()
    dialog = window.findChildren(LoadErrorsDialog)[-1]
    assert dialog.isVisible() and "6794356 (good.pubtator)" in dialog.details.toPlainText()
    assert "2 documents already open" in dialog.summary.text()
    dialog.close()


def test_a_repaired_file_warns_in_the_app(window, tmp_path, qtbot):
    iob1 = tmp_path / "old.conll"
    iob1.write_text("Lithium\tI-Chemical\ntoxicity\tO\n.\tO\n", encoding="utf-8")  # I- after nothing: IOB1
    with qtbot.waitSignal(window.loader.loaded, timeout=10000) as blocker:
        window.loader.open([iob1])
    result = blocker.args[0]
    assert len(window.workspace) == 1 and not result.errors
    assert len(result.warnings) == 1 and "old.conll" in result.warnings[0] and "repaired" in result.warnings[0]
    assert "1 warning" in window.statusBar().currentMessage()
    dialog = window.findChildren(LoadErrorsDialog)[-1]
    assert "Warnings:" in dialog.details.toPlainText() and "old.conll" in dialog.details.toPlainText()
    dialog.close()


def test_a_failed_open_names_the_files(window, tmp_path, qtbot):
    (tmp_path / "bad.jsonl").write_text("{broken\n", encoding="utf-8")
    with qtbot.waitSignal(window.loader.loaded, timeout=10000):
        window.loader.open([tmp_path / "bad.jsonl"])
    message = window.statusBar().currentMessage()
    assert message.startswith("Could not open bad.jsonl: ") and f"{tmp_path / 'bad.jsonl'}:1:" in message
    assert "Loaded 0" not in message
    with qtbot.waitSignal(window.loader.loaded, timeout=10000):
        window.loader.open([tmp_path / "missing.pubtator", tmp_path / "bad.jsonl"])
    assert window.statusBar().currentMessage().startswith("Could not open missing.pubtator and 1 more: ")
    for dialog in window.findChildren(LoadErrorsDialog):
        dialog.close()
