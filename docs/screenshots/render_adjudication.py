"""Render docs/screenshots/adjudication.png offscreen: two annotators' versions of the
same BC5CDR abstracts compared in the app, with a few differences already settled.

    QT_QPA_PLATFORM=offscreen python docs/screenshots/render_adjudication.py [MINE THEIRS]

Without files: "alice" is the gold annotation of the first 12 abstracts of
../shared/data/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt and "bob" the shipped
default model's tagging of them (made here with ``fastbioner tag``), a stand-in for a
second curator.
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


def main(argv: list[str]) -> int:
    work = Path(tempfile.mkdtemp(prefix="fastbioner-adjudication-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    os.environ["FASTBIONER_DEFAULT_MODEL"] = os.environ.get("FASTBIONER_DEFAULT_MODEL", "")
    if not os.environ["FASTBIONER_DEFAULT_MODEL"]:
        del os.environ["FASTBIONER_DEFAULT_MODEL"]
    from fastbioner.cli.main import main as cli
    from fastbioner.io.formats import read_documents, write_documents

    if len(argv) == 2:
        mine, theirs = Path(argv[0]), Path(argv[1])
    else:
        mine, theirs = work / "alice.pubtator", work / "bob.pubtator"
        write_documents(itertools.islice(read_documents(DEVEL), 12), mine)
        if cli(["tag", str(mine), "--out", str(theirs), "--format", "pubtator", "--quiet"]) != 0:
            return 1
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from fastbioner_gui.main_window import MainWindow

    app = QApplication([])
    window = MainWindow()
    window.resize(1500, 940)
    window.show()
    window.workspace.add_documents(read_documents(mine), origin=str(mine))
    window.projects.save(work / f"{mine.stem}.fbproj")   # mine is named after the project
    wait(app, lambda: window.row == 0, 30)
    adj = window.features["adjudication"]
    job = adj.compare_with(str(theirs))
    wait(app, lambda: job.ended and adj.session.active, 60)
    window.resizeDocks([window.docks["documents"]], [560], Qt.Orientation.Horizontal)
    window.resizeDocks([adj.dock], [300], Qt.Orientation.Vertical)
    # The document whose differences are of the most kinds, two of them settled.
    rows = adj.session.items
    row = max(rows, key=lambda r: (len({d.kind for d in rows[r]}), len(rows[r])))
    window.documents.set_current_row(row)
    wait(app, lambda: adj.panel.row == row, 10)
    adj.panel.queue.setFocus()
    for choice in ("theirs", "both"):
        adj.panel.decide(choice)
    wait(app, lambda: False, 0.5)
    out = HERE / "adjudication.png"
    window.grab().save(str(out))
    print(f"{out}: {adj.session.summary()}")
    window.projects.mark_clean()
    window.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
