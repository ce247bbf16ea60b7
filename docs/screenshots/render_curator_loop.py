"""Render docs/screenshots/curator-loop.png offscreen: the app's side of the curator
loop (docs/guides/curator-loop.md) on NCBI-disease abstracts the shipped model has never seen.

    QT_QPA_PLATFORM=offscreen python docs/screenshots/render_curator_loop.py [--out DIR] [--size WxH] [--improve]

The first 30 abstracts of ../shared/data/ncbi-disease/pubtator/NCBIdevelopset_corpus.txt,
their annotations removed (a curator's own, untagged corpus), are tagged by the
shipped model in the app's own tagging job; the documents panel is sorted by the
model's uncertainty (the Unsure column) and the review queue is open on the least
sure suggestion after two rejections. With ``--out`` the pictures (the window, and
the distillation dialog folded and with Advanced open) go to that folder instead, at
``--size``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEVEL = REPO.parent / "shared" / "data" / "ncbi-disease" / "pubtator" / "NCBIdevelopset_corpus.txt"


def wait(app, until, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not until() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    return until()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--size", default="1600x1000")
    parser.add_argument("--improve", action="store_true",
                        help="also run Model > Improve the model from my reviews on 20 abstracts reviewed as "
                             "NCBI-disease annotated them and render the offer (minutes of CPU)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    if not DEVEL.is_file():
        print(f"{DEVEL} is not there", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="fastbioner-curator-loop-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from fastbioner.io.formats import read_documents
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from fastbioner_gui.main_window import MainWindow

    docs = list(itertools.islice(read_documents(DEVEL), 30))
    gold = [list(doc.spans) for doc in docs]
    for doc in docs:
        doc.spans = []
    app = QApplication([])
    window = MainWindow()
    window.resize(width, height)
    window.show()
    window.workspace.add_documents(docs, origin=str(DEVEL))
    if not wait(app, lambda: window.picker.current_name(), 300):
        print("no model found", file=sys.stderr)
        return 1
    window.tag_all()
    job = window.tagging.job
    if not wait(app, lambda: job.ended, 900):
        print("tagging did not end", file=sys.stderr)
        return 1
    window.features["suggestion_nav"].sort_action.trigger()
    window.features["review_queue"].action.trigger()
    queue = window.features["review_queue"].queue
    wait(app, lambda: queue.current is not None, 5)
    queue.reject_current()  # two of the model's least sure suggestions decided
    queue.reject_current()
    window.resize(width, height)
    wait(app, lambda: False, 0.5)  # let the layout settle (docks, splitter)
    # The documents panel wide enough for its Unsure column (what it is sorted by).
    window.resizeDocks([window.docks["documents"], window.features["review_queue"].dock],
                       [430 if width > 1200 else 300, min(360, width // 4)],
                       Qt.Orientation.Horizontal)
    wait(app, lambda: False, 0.5)
    out = args.out
    picture = window.grab()
    if out is None:
        target = HERE / "curator-loop.png"
    else:
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"curator-loop-{width}x{height}.png"
    picture.save(str(target))
    print(f"wrote {target}")
    if out is not None:  # the distillation dialog with the reviewed documents, folded and opened
        for row in range(3):
            window.workspace.entry(row).status = window.workspace.entry(row).status.__class__("reviewed")
        dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, [], window)
        dialog.show()
        wait(app, lambda: False, 0.3)
        dialog.grab().save(str(out / f"distill-{width}x{height}-folded.png"))
        dialog.rows.advanced.setChecked(True)
        dialog.fit_to_screen()
        wait(app, lambda: False, 0.3)
        dialog.grab().save(str(out / f"distill-{width}x{height}-advanced.png"))
        print(f"dialog {dialog.width()}x{dialog.height()} with Advanced open; screen {width}x{height}")
        dialog.reject()
    if args.improve:
        improve_offer(app, window, gold, out or HERE)
    window.jobs.cancel_all()
    window.projects.mark_clean()
    window.close()
    return 0


def improve_offer(app, window, gold, folder: Path) -> None:
    """Model > Improve the model from my reviews on the first 20 abstracts, reviewed
    as NCBI-disease annotated them (every mention type as Disease): the offer of the
    new model, with its before/after scores on the 5 held back."""
    from fastbioner.io.documents import Source
    from fastbioner.curate.project import DocStatus

    ws = window.workspace
    for row in range(20):
        ws.set_spans(row, [s.with_(label="Disease", source=Source.GOLD) for s in gold[row]], DocStatus.REVIEWED)
    started = time.monotonic()
    job = window.features["improve"].start()
    if job is None or not wait(app, lambda: job.ended, 1800):
        print("the improvement did not run", file=sys.stderr)
        return
    print(f"improve: {job.state.value} in {time.monotonic() - started:.0f} s")
    if job.error:
        print(job.error, file=sys.stderr)
        return
    for line in job.result.notes:
        print(f"  {line}")
    wait(app, lambda: window.training.new_model_offer is not None and window.training.new_model_offer.isVisible(), 30)
    offer = window.training.new_model_offer
    wait(app, lambda: False, 0.3)
    offer.grab().save(str(folder / "improve-offer.png"))
    print(f"wrote {folder / 'improve-offer.png'}; the picker keeps {window.picker.current_name()}")


if __name__ == "__main__":
    sys.exit(main())
