"""Render docs/screenshots/curation-tools.png offscreen: annotate all occurrences, the
concept cell's completion and the Relations dock, over BC5CDR abstracts.

    QT_QPA_PLATFORM=offscreen python docs/screenshots/render_curation_tools.py

The first 8 abstracts of ../shared/data/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt,
with their chemical mentions turned into model suggestions without concept ids (what
tagging gives): one is accepted (its id is proposed from the concept dictionary),
the All occurrences dialog is open on another, the concept cell of a third is being
typed into, and the Relations dock shows the document's CID relations. The dialog
and the completion list are separate windows: they are painted onto the window's
picture where they stand.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEVEL = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"


def wait(app, until, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not until() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def main() -> int:
    if not DEVEL.is_file():
        print(f"{DEVEL} is not there", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="fastbioner-curation-tools-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    os.environ["FASTBIONER_DEFAULT_MODEL"] = str(work / "no-default-model")   # no model is needed here
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QPainter
    from PySide6.QtWidgets import QApplication, QLineEdit

    from fastbioner.io.documents import Source
    from fastbioner.io.formats import read_documents
    from fastbioner_gui.main_window import MainWindow

    docs = list(itertools.islice(read_documents(DEVEL), 8))
    for doc in docs:
        doc.spans = [s.with_(source=Source.MODEL, score=0.9, concept_id=None) if s.label == "Chemical" else s
                     for s in doc.spans]
    app = QApplication([])
    window = MainWindow()
    window.resize(1500, 940)
    window.show()
    window.workspace.add_documents(docs, origin=str(DEVEL))
    wait(app, lambda: window.row == 0, 30)
    wait(app, window.features["concept_lookup"].lookup.up_to_date, 30)   # built in the background
    # The document with the most relations.
    row = max(range(len(docs)), key=lambda r: (len(docs[r].relations), -r))
    window.documents.set_current_row(row)
    wait(app, lambda: window.row == row, 10)
    doc = window.workspace.document(row)
    chemicals = [s for s in doc.sorted_spans() if s.source is Source.MODEL]
    # Accept the first suggestion: the dictionary proposes its id.
    window.keys.select(chemicals[0])
    window.view.setFocus()
    window.keys.accept_current()
    accepted_message = window.statusBar().currentMessage()
    window.features["relations"].focus_panel()
    window.resizeDocks([window.docks["documents"]], [330], Qt.Orientation.Horizontal)
    window.resizeDocks([window.features["relations"].dock], [220], Qt.Orientation.Vertical)
    wait(app, lambda: False, 0.3)
    # Type a name into the concept cell of another suggestion.
    others = [s for s in window.workspace.document(row).sorted_spans() if s.source is Source.MODEL]
    target = others[-1]
    window.entities.edit_concept(target)
    editor = window.entities.table.findChild(QLineEdit)
    typed = doc.span_text(target)[:4].lower()
    editor.setText(typed)
    editor.textEdited.emit(typed)
    completer = window.features["concept_lookup"].delegate.last_completer
    wait(app, lambda: completer.popup().isVisible(), 5)
    shot = window.grab()
    popup = completer.popup()
    painter = QPainter(shot)
    # Under the cell, kept inside the window (offscreen, the list's own place is arbitrary).
    under = editor.mapTo(window, QPoint(0, editor.height()))
    painter.drawPixmap(QPoint(min(under.x(), shot.width() - popup.width() - 8), under.y()), popup.grab())
    window.entities.table.closePersistentEditor(window.entities.table.currentIndex())
    popup.hide()
    # All occurrences of the second suggestion, over the whole project.
    window.keys.select(others[0])
    window.view.setFocus()
    dialog = window.features["occurrences"].make_dialog()
    dialog.scope.setCurrentIndex(1)
    dialog.case.setCurrentIndex(1)
    dialog.show()
    wait(app, lambda: dialog.isVisible(), 5)
    wait(app, lambda: False, 0.3)
    picture = dialog.grab()
    # Over the reading view's empty lower part.
    corner = window.view.mapTo(window, QPoint(24, window.view.height() - picture.height() - 16))
    painter.drawPixmap(corner, picture)
    painter.end()
    out = HERE / "curation-tools.png"
    shot.save(str(out))
    print(f"{out}: row {row} ({doc.id}), {len(doc.relations)} relations; {accepted_message}; "
          f"completion for {typed!r}: {completer.offered()[:3]}; occurrences: {dialog.current.describe()}")
    dialog.close()
    window.projects.mark_clean()
    window.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
