"""Render docs/screenshots/fetch-dialog.png offscreen: File > Fetch from PubMed after a
fetch by PMIDs, one of them already open and one that PubMed does not have.

    QT_QPA_PLATFORM=offscreen python docs/screenshots/render_fetch_dialog.py

No network is reached: the real PubMed records of ../shared/data/pubmed-xml are served
by the tests' E-utilities stand-in (tests/eutils_fake.py) on 127.0.0.1, and the app's
own fetch job asks it for them as it would ask NCBI. The first record is opened in the
workspace before the fetch (so the report says it was left as it is), and 424242 is a
PMID the stand-in does not have.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RECORDS = REPO.parent / "shared" / "data" / "pubmed-xml"
FETCHED = 5     # records asked for, the first of them already open
MISSING = "424242"


def main() -> int:
    files = sorted(RECORDS.glob("*.xml"))[:FETCHED]
    if len(files) < FETCHED:
        print(f"{RECORDS} does not hold {FETCHED} PubMed XML records", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="fastbioner-fetch-shot-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    os.environ["FASTBIONER_DEFAULT_MODEL"] = str(work / "no-default-model")  # no model is needed here
    os.environ.pop("NCBI_API_KEY", None)  # the note as a new user reads it
    # The tests' stand-in, loaded from its file (the tests folder is not a package).
    spec = importlib.util.spec_from_file_location("eutils_fake", REPO / "tests" / "eutils_fake.py")
    eutils_fake = sys.modules["eutils_fake"] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(eutils_fake)
    from PySide6.QtWidgets import QApplication

    from fastbioner_gui.dialogs.fetch_dialog import FetchDialog
    from fastbioner_gui.main_window import MainWindow

    records, docs = eutils_fake.real_records(files)
    try:
        with eutils_fake.FakeEutils({}, records=records) as server:
            os.environ["FASTBIONER_EUTILS_URL"] = server.url
            app = QApplication([])
            window = MainWindow()
            window.workspace.add_documents(docs[:1], origin=str(files[0]))
            dialog = FetchDialog(window.workspace, window.jobs, window)
            dialog.pmids.setPlainText(" ".join(d.id for d in docs) + f"\n{MISSING}")
            dialog.show()
            job = dialog.start()
            end = time.monotonic() + 60
            while job is not None and job.running and time.monotonic() < end:
                app.processEvents()
                time.sleep(0.02)
            for _ in range(20):   # the report laid out
                app.processEvents()
            print(dialog.report.text())
            out = HERE / "fetch-dialog.png"
            dialog.grab().save(str(out))
            print(f"wrote {out.relative_to(REPO)} ({dialog.width()}x{dialog.height()})")
            dialog.close()  # the window is not closed: it would ask to save the fetched abstracts
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
