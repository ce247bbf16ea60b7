"""Render the README's screenshots offscreen from a real session: the sample abstracts
tagged by a registered model, the distillation dialog, and the jobs panel during a
small real distillation run.

    QT_QPA_PLATFORM=offscreen python docs/screenshots/render.py MODEL_FOLDER [--no-run | --main-only]
    QT_QPA_PLATFORM=offscreen python docs/screenshots/render.py --dialog-only
    QT_QPA_PLATFORM=offscreen python docs/screenshots/render.py --jobs-chain

MODEL_FOLDER: a fine-tuned Chemical/Disease teacher (e.g. the registry's
minilm-bc5cdr). It is imported into a private FASTBIONER_HOME; the run uses 400
training and 200 devel sentences of ../shared/data/bc5cdr/iob. ``--no-run`` renders
the main window and the dialog only (the run takes minutes on a busy CPU);
``--main-only`` the main window alone (tagging only: any model that tags Chemical
and Disease will do, e.g. ``assets/default-model``). ``--dialog-only`` needs no
model: it renders the distillation dialog as a new user meets it (no teacher in the
registry, so a teacher is fine-tuned first from the first installed base encoder, on
the sample abstracts), with the run time measured. ``--jobs-chain`` needs no model
either: it renders the jobs panel during a new user's chained run (a teacher
fine-tuned from the first installed base encoder on 400 training sentences, then
distilled into a student), once the student's distillation is 60% done, so both
parts show on the curves' step axis.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Where the PNGs go: here, unless FASTBIONER_SHOTS_OUT names another folder (to render
# one screenshot without replacing the others).
OUT = Path(os.environ.get("FASTBIONER_SHOTS_OUT") or HERE)
DATA = REPO.parent / "shared" / "data" / "bc5cdr" / "iob"


def first_sentences(src: Path, n: int, dest: Path) -> Path:
    blocks = src.read_text(encoding="utf-8").strip().split("\n\n")[:n]
    dest.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return dest


def wait(app, until, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not until() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def dialog_only() -> int:
    """The distillation dialog of a new user: a fresh registry holding only the shipped
    default model (registered on first use), which the dialog offers as the teacher of a
    student of fewer of its layers, on the sample abstracts (gold entities) as the
    curated training data; no base encoder needed."""
    work = Path(tempfile.mkdtemp(prefix="fastbioner-shots-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    from PySide6.QtWidgets import QApplication

    from fastbioner.io.documents import Source
    from fastbioner.curate.export import ExportSettings, export_documents
    from fastbioner.io.formats import read_any
    from fastbioner.models.shipped import sample_files
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from fastbioner_gui.main_window import MainWindow

    curated = work / "curated-samples.conll"
    export_documents(list(read_any(sample_files())), curated,
                     ExportSettings("BIO / CoNLL (IOB2)", (Source.GOLD, Source.CURATOR)))
    dev = first_sentences(DATA / "devel.tsv", 200, work / "devel.tsv")
    app = QApplication([])
    window = MainWindow()
    window.refresh_models()
    wait(app, lambda: bool(window.picker.manifests), 300)
    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, window.training.teachers(),
                            window, manifests=window.picker.manifests)
    dialog.train_files.add_paths([str(curated)])
    dialog.dev_file.setText(str(dev))
    dialog.device.setCurrentText("cpu")
    dialog.show()
    estimate = dialog.estimate()  # the distillation, measured from a few real steps
    wait(app, lambda: estimate is not None and estimate.ended, 900)
    wait(app, lambda: False, 0.5)
    dialog.grab().save(str(OUT / "distill-dialog.png"))
    dialog.reject()
    window.projects.mark_clean()
    window.close()
    print(f"{OUT / 'distill-dialog.png'}: {dialog.estimate_label.text()}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def jobs_chain() -> int:
    """The jobs panel during a chained run of a new user (no teacher registered)."""
    work = Path(tempfile.mkdtemp(prefix="fastbioner-shots-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    os.environ["FASTBIONER_DEFAULT_MODEL"] = str(work / "no-default-model")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from fastbioner.models.shipped import sample_files
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from fastbioner_gui.main_window import MainWindow

    train = first_sentences(DATA / "train.tsv", 400, work / "train.tsv")
    dev = first_sentences(DATA / "devel.tsv", 200, work / "devel.tsv")
    app = QApplication([])
    window = MainWindow()
    window.resize(1500, 900)
    window.show()
    loading = window.loader.open(sample_files())
    wait(app, lambda: loading.ended, 120)
    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, [], window, manifests={})
    dialog.jobStarted.connect(window.training.follow)
    dialog.train_files.add_paths([str(train)])
    dialog.dev_file.setText(str(dev))
    dialog.device.setCurrentText("cpu")
    dialog.epochs.setValue(2)
    dialog.rows.teacher_name.setText("my-teacher")
    dialog.name.setText("my-student")
    dialog.estimate_first.setChecked(False)
    config = dialog.build_config()
    config.training.eval_every_steps = 10  # a devel F1 curve in a short run
    dialog.form.config = lambda train: config
    job = dialog.start()
    window.show_curves(job)
    window.resizeDocks([window.docks["jobs"]], [430], Qt.Orientation.Vertical)

    def far_enough() -> bool:
        e = job.last_event
        return e is not None and e.stage == "student: distill" and e.total and e.step >= 0.6 * e.total

    wait(app, lambda: job.ended or far_enough(), 3600)
    wait(app, lambda: False, 0.6)
    window.grab().save(str(OUT / "jobs-panel.png"))
    job.cancel()
    job.wait(120000)
    window.projects.mark_clean()
    window.close()
    print(f"{OUT / 'jobs-panel.png'}; last event: {job.events[-1] if job.events else None}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main() -> int:
    if "--dialog-only" in sys.argv:
        return dialog_only()
    if "--jobs-chain" in sys.argv:
        return jobs_chain()
    model_folder = Path(sys.argv[1])
    work = Path(tempfile.mkdtemp(prefix="fastbioner-shots-"))
    os.environ["FASTBIONER_HOME"] = str(work / "home")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from fastbioner.models.registry import Registry
    from fastbioner.models.shipped import sample_files
    from fastbioner_gui.dialogs.training_dialog import TrainingDialog
    from fastbioner_gui.main_window import MainWindow

    if "--main-only" in sys.argv:  # the model only tags: keep the name it was built under
        import json

        name = json.loads((model_folder / "fastbioner.json").read_text(encoding="utf-8")).get("name") or "tagger"
    else:
        name = "minilm-bc5cdr"
    teacher = Registry().import_folder(model_folder, name).name
    app = QApplication([])
    window = MainWindow()
    window.resize(1500, 900)
    window.show()
    window.loader.open(sample_files())
    wait(app, lambda: len(window.workspace) > 0 and window.picker.findData(teacher) >= 0, 120)
    window.picker.setCurrentIndex(window.picker.findData(teacher))
    window.tag_all()
    wait(app, lambda: window.tagging.job is not None and window.tagging.job.ended, 300)
    window.docks["jobs"].hide()
    window.docks["model-card"].show()
    window.documents.set_current_row(0)
    doc = window.workspace.document(0)
    start = doc.text.index("newborn infant")
    # A review under way: the second abstract reviewed, the first in review (one
    # curator's entity and one accepted suggestion), the rest tagged.
    window.documents.set_current_row(1)
    window.curation.accept(None)
    window.toggle_reviewed()
    window.documents.set_current_row(0)
    window.curation.add(start, start + 14, "Disease")  # one curated edit, on the undo stack
    suggestion = next((s for s in doc.sorted_spans() if s.source.value == "model"), None)
    if suggestion is not None:
        window.curation.accept([suggestion])
    window.entities.select_span(doc.sorted_spans()[0], notify=True)
    wait(app, lambda: False, 1.0)
    window.grab().save(str(OUT / "main-window.png"))
    if "--main-only" in sys.argv:
        window.projects.mark_clean()
        window.close()
        shutil.rmtree(work, ignore_errors=True)
        return 0

    train = first_sentences(DATA / "train.tsv", 400, work / "train.tsv")
    dev = first_sentences(DATA / "devel.tsv", 200, work / "devel.tsv")
    dialog = TrainingDialog("distill", window.workspace, window.jobs, window.settings, [teacher], window)
    dialog.jobStarted.connect(window.training.follow)
    dialog.train_files.add_paths([str(train)])
    dialog.dev_file.setText(str(dev))
    dialog.rows.layers.setCurrentText("3")
    dialog.epochs.setValue(3)
    dialog.device.setCurrentText("cpu")
    dialog.name.setText("minilm-bc5cdr-fastbioner-3L")
    dialog.show()
    estimate = dialog.estimate()  # the run time, measured from a few real steps
    wait(app, lambda: estimate is not None and estimate.ended, 600)
    wait(app, lambda: False, 0.5)
    dialog.grab().save(str(OUT / "distill-dialog.png"))
    if "--no-run" in sys.argv:
        window.projects.mark_clean()
        window.close()
        shutil.rmtree(work, ignore_errors=True)
        return 0
    config = dialog.build_config()
    config.training.eval_every_steps = 10
    dialog.form.config = lambda train: config  # evaluate often, for a devel F1 curve in a short run
    dialog.estimate_first.setChecked(False)  # measured above already
    job = dialog.start()
    window.docks["model-card"].hide()
    window.docks["jobs"].show()
    window.resizeDocks([window.docks["jobs"]], [430], __import__("PySide6.QtCore").QtCore.Qt.Orientation.Vertical)
    def far_enough() -> bool:
        e = job.last_event
        return (e is not None and e.stage.endswith(("distill", "train")) and e.total
                and e.step >= 0.6 * e.total)

    wait(app, lambda: job.ended or far_enough(), 1800)
    wait(app, lambda: False, 0.6)
    window.grab().save(str(OUT / "jobs-panel.png"))
    job.cancel()
    job.wait(120000)
    window.projects.mark_clean()
    window.close()
    print(f"screenshots in {OUT}; last event: {job.events[-1] if job.events else None}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
