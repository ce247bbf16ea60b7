"""The main window: assembles the panels and controllers and wires their signals
together; its commands, menus and toolbar are built in window_commands, by id
(window_api). Behaviour lives in the controllers (curation, project, loading,
tagging) and, below them, in the core. The features (adjudication, concept lookup,
...) are installed with a :class:`~fastbioner_gui.window_api.WindowServices`: none
of them imports this module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QUndoStack
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMessageBox, QSplitter, QVBoxLayout, QWidget

from fastbioner.io.documents import Source
from fastbioner.base.errors import FastBioNERError
from fastbioner.curate.project import PROJECT_SUFFIX, DocStatus

from . import (adjudication, concept_lookup, improve, learn_while_reviewing, occurrences, relations, review_queue,
               suggestion_nav)
from .curation import CurationController
from .dialogs.load_errors import LoadErrorsDialog
from .dialogs.settings_dialog import SettingsDialog
from .jobs import QUIET_KIND, Job, JobManager
from .keyboard import CurationKeys
from .loading import FileLoader, LoadResult
from .models.workspace import Workspace
from .project import ProjectController
from .settings import AppSettings, load_settings, save_settings, settings_store
from .tagging import TaggingController
from .training import TrainingController
from .widgets.document_view import DocumentView
from .widgets.documents_panel import DocumentsPanel
from .widgets.entity_panel import EntityPanel
from .widgets.job_strip import JobStrip
from .widgets.jobs_panel import JobsPanel
from .widgets.legend import Legend
from .widgets.model_picker import FoundModel, ListingRelay, ModelCard, ModelPicker, list_models
from .window_api import ActionRegistry, Docks, WindowServices
from .window_commands import build_commands, build_toolbar

PROJECT_FILTER = f"FastBioNER projects (*{PROJECT_SUFFIX})"
LAYOUT_VERSION = 1
# Installed in this order, which is their menu items' order: File > Compare… and the
# Adjudicate menu; the concept cell's lookup; Curate > All occurrences… and the
# Relations dock (issue 53); the keys to the next suggestion, the review queue and
# Improve the model (issue 47).
FEATURES = (adjudication, concept_lookup, occurrences, relations, suggestion_nav, review_queue, improve,
            learn_while_reviewing)


class MainWindow(QMainWindow):
    def __init__(self, settings: AppSettings | None = None):
        super().__init__()
        self.settings = settings or load_settings()
        self.workspace = Workspace(self)
        self.stack = QUndoStack(self)
        self.jobs = JobManager(self)
        self.curation = CurationController(self.workspace, self.stack, self)
        self.projects = ProjectController(self.workspace, self.stack, self.settings.autosave_seconds, self)
        self.loader = FileLoader(self.workspace, self.jobs, self)
        self.tagging = TaggingController(self.workspace, self.stack, self.jobs, self.settings, self)
        self.row = -1
        self._splitter_placed = False
        self._terminating = False  # SIGTERM: closing asks nothing (see terminate)
        self._build_widgets()
        # The training flow (dialogs, following runs, offering their models): beside tagging's.
        self.training = TrainingController(self.workspace, self.jobs, self.settings, self.picker,
                                           lambda select: self.refresh_models(select=select), self)
        self.training.message.connect(lambda msg: self.statusBar().showMessage(msg, 10000))
        self.keys = CurationKeys(self.view, self.entities, self.curation, self)
        # The commands by id, their keys and menus, and the toolbar (window_commands).
        self.commands = ActionRegistry(self, (self.view, self.entities.table))
        build_commands(self, self.commands, self.keys)
        build_toolbar(self, self.commands, self.docks)
        self._connect()
        self.features: dict[str, Any] = {}  # by module name: window.features["relations"]
        self.services = WindowServices(  # what a feature is handed, and all it may use of the window
            self, workspace=self.workspace, stack=self.stack, jobs=self.jobs, settings=self.settings,
            projects=self.projects, curation=self.curation, view=self.view, entities=self.entities,
            documents=self.documents, keys=self.keys, commands=self.commands, docks=self.docks, features=self.features,
            current_row=lambda: self.row, current_model=self.picker.current_name, offer_model=self.training.offer,
            undo=self.undo, tagging=self.tagging)
        for feature in FEATURES:
            self.features[feature.__name__.rpartition(".")[2]] = feature.install(self.services)
        self.setAcceptDrops(True)
        self.resize(1400, 860)
        self._restore_layout()
        self._update_title()
        self._update_actions()  # no Tag before a model is chosen
        self.refresh_models()

    # Assembly --------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.view = DocumentView()
        self.view.setAcceptDrops(False)  # drops go to the window: they open files
        self.view.set_labels(self.workspace.labels())
        self.view.low_confidence = self.settings.low_confidence
        self.legend = Legend()
        self.legend.set_labels(self.workspace.labels())
        self.entities = EntityPanel(self.workspace)
        self.entities.model.low_confidence = self.settings.low_confidence
        reading = QWidget()
        box = QVBoxLayout(reading)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.legend)
        box.addWidget(self.view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(reading)
        self.splitter.addWidget(self.entities)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([640, 420])
        self.job_strip = JobStrip(self.jobs)
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.splitter, 1)
        column.addWidget(self.job_strip)
        self.setCentralWidget(central)
        self.docks = Docks(self, self.fit_layout)  # by name: "documents", "model-card", "jobs", the features'
        self.documents = DocumentsPanel(self.workspace)
        documents = self.docks.add("documents", "Documents", self.documents, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.card = ModelCard()
        self.docks.add("model-card", "Model card", self.card, Qt.DockWidgetArea.LeftDockWidgetArea, hidden=True)
        self.jobs_panel = JobsPanel(self.jobs)
        self.docks.add("jobs", "Jobs", self.jobs_panel, Qt.DockWidgetArea.BottomDockWidgetArea, hidden=True)
        # Every column whole where the window has the room (layout_fit narrows it where not).
        self.resizeDocks([documents], [self.documents.comfortable_width()], Qt.Orientation.Horizontal)
        self.picker = ModelPicker()
        self.status_label = QLabel()
        # Room for a large count from the start: a label grown later was clipped beside the wait.
        self.status_label.setMinimumWidth(self.status_label.fontMetrics().horizontalAdvance("00000 documents") + 8)
        self._waiting: dict[str, str] = {}
        self.waiting_label = QLabel()
        self.waiting_label.hide()
        self.statusBar().addPermanentWidget(self.waiting_label)
        self.statusBar().addPermanentWidget(self.status_label)

    def _connect(self) -> None:
        ws = self.workspace
        self.documents.currentRowChanged.connect(self.show_row)
        ws.documentsChanged.connect(self._documents_changed)
        ws.labelsChanged.connect(self._labels_changed)
        ws.projectReset.connect(lambda: self.show_row(-1))
        ws.documentsAdded.connect(self._documents_added)
        # The first document, or after a recovery the one the curator was reading.
        ws.projectReset.connect(lambda: QTimer.singleShot(
            0, lambda: self.documents.set_current_row(self.projects.start_row)))
        v = self.view
        v.spanClicked.connect(lambda span: self.entities.select_span(span))
        v.addRequested.connect(self.curation.add)
        v.relabelRequested.connect(self.curation.relabel)
        v.deleteRequested.connect(self.curation.delete)
        v.acceptRequested.connect(self.curation.accept)
        v.rejectRequested.connect(self.curation.reject)
        self.entities.spanSelected.connect(self.view.select_span)
        self.curation.spanAdded.connect(self._select_new_span)
        self.projects.stateChanged.connect(self._update_title)
        self.projects.autosaveFailed.connect(lambda msg: self.statusBar().showMessage(msg, 10000))
        self.loader.loaded.connect(self._files_loaded)
        self.tagging.message.connect(lambda msg: self.statusBar().showMessage(msg, 10000))
        self.tagging.busyChanged.connect(self._update_actions)
        self.tagging.waiting.connect(lambda text: self.set_waiting("tagging", text))
        self.picker.modelChosen.connect(self._model_chosen)
        self.documents.search.textChanged.connect(self.view.set_highlight)
        self.job_strip.curvesRequested.connect(self.show_curves)
        self.tagging.merged.connect(lambda done, total: self.statusBar().showMessage(
            f"Tagging: {done} of {total} documents have their suggestions", 5000))
        self.jobs.jobFinished.connect(self._job_finished)

    # Reading -------------------------------------------------------------
    def show_row(self, row: int) -> None:
        self.row = row
        self.projects.current_row = row  # the autosave records it for a recovery
        self.curation.set_row(row)
        self.view.show_document(self.workspace.document(row) if row >= 0 else None)
        self.entities.show_document(row)
        self._update_actions()

    def _documents_changed(self, first: int, last: int) -> None:
        if first <= self.row <= last:
            self.view.show_document(self.workspace.document(self.row))
            self._update_actions()

    # Review ----------------------------------------------------------------
    def toggle_reviewed(self) -> None:
        status = self.curation.toggle_reviewed()
        if status is DocStatus.REVIEWED:
            left = len(self.workspace.document(self.row).spans_by(Source.MODEL))
            note = (f"; its {left} undecided suggestion{'s are' if left != 1 else ' is'} not exported by default"
                    if left else "")
            self.statusBar().showMessage(f"{self.workspace.document(self.row).id} reviewed{note}", 10000)
        elif status is DocStatus.IN_REVIEW:
            self.statusBar().showMessage(f"{self.workspace.document(self.row).id} reopened for review", 10000)

    def undo(self) -> None:
        self.keys.history(self.stack.undo)

    def redo(self) -> None:
        self.keys.history(self.stack.redo)

    def next_needing_review(self) -> None:
        if self.documents.next_needing_review() < 0:
            self.statusBar().showMessage("Every document shown is reviewed", 10000)

    def show_shortcuts(self) -> None:
        from .dialogs.shortcuts import ShortcutsDialog

        ShortcutsDialog(self.menuBar(), self).exec()

    def _documents_added(self, first: int, _last: int) -> None:
        if self.row < 0:
            self.documents.set_current_row(first)

    def _labels_changed(self) -> None:
        labels = self.workspace.labels()
        self.view.set_labels(labels)
        self.legend.set_labels(labels)
        self.keys.set_labels(labels)

    def _select_new_span(self, span) -> None:
        self.view.select_span(span)
        self.entities.select_span(span)

    def _update_actions(self) -> None:
        busy = self.tagging.busy
        has_model = bool(self.picker.current_name())
        reviewed = self.row >= 0 and self.workspace.entry(self.row).status is DocStatus.REVIEWED
        self.commands["curate.mark_reviewed"].setText("Reopen document for review" if reviewed
                                                     else "Mark document reviewed")
        self.commands["model.tag_document"].setEnabled(not busy and has_model and self.row >= 0)
        self.commands["model.tag_all"].setEnabled(not busy and has_model and len(self.workspace) > 0)

    def _update_title(self) -> None:
        self.setWindowTitle(f"{self.projects.name()}[*] — FastBioNER Studio")
        self.setWindowModified(self.projects.modified)
        n = len(self.workspace)
        self.status_label.setText(f"{n} document{'s' if n != 1 else ''}")

    # Files ---------------------------------------------------------------
    def open_paths(self, paths: list[str]) -> None:
        projects = [p for p in paths if p.endswith(PROJECT_SUFFIX)]
        others = [p for p in paths if not p.endswith(PROJECT_SUFFIX)]
        if projects:
            self.open_project(projects[0])
        if others:
            self.loader.open(others)

    def open_files_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open abstracts", self.settings.data_folder)
        if paths:
            self.settings.data_folder = str(Path(paths[0]).parent)
            self.open_paths(paths)

    def open_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a folder of abstracts", self.settings.data_folder)
        if folder:
            self.settings.data_folder = folder
            self.loader.open([folder])

    def open_project_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", self.settings.data_folder, PROJECT_FILTER)
        if path:
            self.open_project(path)

    def open_project(self, path: str) -> bool:
        """Open a project; a file that cannot be read is reported (file and line) and the
        window goes on with what it had. True when it opened."""
        if not self.maybe_save():
            return False
        try:
            self.projects.open(path)
        except (FastBioNERError, OSError) as exc:
            QMessageBox.warning(self, "Cannot open project", str(exc))
            return False
        except Exception as exc:
            QMessageBox.warning(self, "Cannot open project",
                                f"{path}: cannot read this project ({type(exc).__name__}: {exc})")
            return False
        return True

    def _files_loaded(self, result: LoadResult) -> None:
        self.statusBar().showMessage(result.summary(), 15000)
        if result.errors or result.duplicates or result.warnings:
            LoadErrorsDialog(result.errors, result.documents - len(result.duplicates), self,
                             result.duplicates, result.warnings).open()

    def save(self) -> bool:
        if self.projects.path is None:
            return self.save_as()
        return self._save_to(self.projects.path)

    def save_as(self) -> bool:
        path, _ = QFileDialog.getSaveFileName(self, "Save project", self.settings.data_folder, PROJECT_FILTER)
        return bool(path) and self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        try:
            saved = self.projects.save(path)
        except (FastBioNERError, OSError) as exc:
            QMessageBox.warning(self, "Cannot save project", str(exc))
            return False
        self.statusBar().showMessage(f"Saved {saved}", 5000)
        store = settings_store()
        store.setValue("session/last_project", str(saved))
        return True

    def maybe_save(self) -> bool:
        """Ask before the working set is replaced or closed. True: go ahead."""
        if not self.projects.modified:
            return True
        from .dialogs.unsaved import Answer, ask_unsaved

        answer = ask_unsaved(self, "Unsaved changes", f"Save the changes to {self.projects.name()} first?",
                             "save them", "discard them", "go back to the work")
        if answer is Answer.YES:
            return self.save()
        return answer is Answer.NO

    def export_dialog(self) -> None:
        from .dialogs.export_dialog import ExportDialog

        ExportDialog(self.workspace, self.documents.selected_rows(), self.settings, self, self.jobs).exec()

    def fetch_dialog(self) -> None:
        from .dialogs.fetch_dialog import FetchDialog

        FetchDialog(self.workspace, self.jobs, self).exec()

    # Models --------------------------------------------------------------
    def refresh_models(self, select: str | None = None) -> Job:
        from fastbioner.models.registry import default_root

        # Start-up says what it waits for (the first scan registers the shipped
        # models: seconds on a busy machine).
        self.set_waiting("models", f"looking for models in {default_root()}…")
        relay = ListingRelay(self)
        relay.found.connect(self._default_found)
        job = self.jobs.start("List models", lambda on_event, cancel: list_models(on_event, cancel, relay.found.emit),
                              kind=QUIET_KIND)
        job.succeeded.connect(lambda listing: self.picker.set_entries(
            listing.entries, select or self.picker.current_name() or listing.default))
        job.failed.connect(lambda message: self.statusBar().showMessage(f"Cannot list models: {message}", 10000))

        def ended() -> None:
            relay.deleteLater()
            self.set_waiting("models", "")
        job.finished.connect(ended)
        self.models_listed = job
        return job

    def _default_found(self, found: FoundModel) -> None:
        """The shipped default is known before the registry scan ends: the picker
        offers it and Tag is enabled at once (the tagging job registers it if the
        scan has not yet)."""
        if not self.picker.current_name():
            self.picker.set_entries([found], found.name)

    def set_waiting(self, what: str, text: str) -> None:
        """Say in the status bar (a label no passing message hides) what the window is
        waiting for; an empty ``text`` ends that wait."""
        self._waiting[what] = text
        shown = "; ".join(t for t in self._waiting.values() if t)
        shown = shown[:1].upper() + shown[1:]
        # At most half the bar, shortened in the middle (a long registry path); all of it on hover.
        room = max(200, self.width() // 2 - self.status_label.sizeHint().width())
        elided = self.waiting_label.fontMetrics().elidedText(shown, Qt.TextElideMode.ElideMiddle, room)
        self.waiting_label.setText(elided)
        self.waiting_label.setToolTip(shown)
        self.waiting_label.setVisible(bool(shown))

    def tag_all_when_ready(self, loading: Job) -> None:
        """First launch: once the samples are read and a model is chosen (the default,
        as soon as it is found: the scan of the registry need not end first), tag them
        all, so the curator sees suggestions at once."""
        started: list[bool] = []
        if not loading.ended:
            self.set_waiting("samples", "opening the sample abstracts…")
            loading.finished.connect(lambda: self.set_waiting("samples", ""))

        def go(*_args) -> None:
            if not started and loading.ended and self.picker.current_name() and len(self.workspace):
                started.append(True)
                self.tag_all()
        loading.finished.connect(go)
        self.models_listed.finished.connect(go)
        self.picker.modelChosen.connect(go)
        go()

    def _model_chosen(self, name: str) -> None:
        self.card.show_model(name, self.picker.manifests.get(name, {}))
        self._update_actions()

    def tag_document(self) -> None:
        if self.row >= 0:
            self.tagging.tag(self.picker.current_name(), [self.row])

    def tag_all(self) -> None:
        rows = self.documents.selected_rows()
        if len(rows) < 2:
            rows = list(range(len(self.workspace)))
        self.tagging.tag(self.picker.current_name(), rows)

    def training_dialog(self, kind: str) -> None:
        self.training.open_dialog(kind)

    def leftovers_dialog(self) -> None:
        self.training.open_leftovers()

    def show_curves(self, job: Job) -> None:
        """Open the Jobs dock on ``job`` (its live curves)."""
        dock = self.docks["jobs"]
        if not dock.isVisible():  # tall enough for the charts' axes, the reading view keeps the rest
            self.resizeDocks([dock], [max(260, int(0.38 * self.height()))], Qt.Orientation.Vertical)
        dock.show()
        dock.raise_()
        self.jobs_panel.show_job(job)

    def _job_finished(self, job: Job) -> None:
        # Tagging and opening say what they did themselves.
        if job.kind in ("tag", "open", QUIET_KIND):
            return
        if job.kind == "train":
            outcome = TrainingController.outcome(job)
        else:
            outcome = {"done": "done", "cancelled": "cancelled", "failed": f"failed: {job.error}"}.get(
                job.state.value, job.state.value)
        self.statusBar().showMessage(f"{job.title}: {outcome}", 10000)

    # Settings, find, layout ------------------------------------------------
    def settings_dialog(self) -> None:
        dialog = SettingsDialog(self.settings, self)
        if dialog.exec():
            new = dialog.result_settings()
            self.settings.__dict__.update(new.__dict__)  # controllers share this object
            save_settings(self.settings)
            self.projects.set_autosave_interval(self.settings.autosave_seconds)
            self.view.low_confidence = self.entities.model.low_confidence = self.settings.low_confidence
            if self.row >= 0:
                self.view.show_document(self.workspace.document(self.row))

    def find(self) -> None:
        self.docks["documents"].show()
        self.documents.search.setFocus()
        self.documents.search.selectAll()

    def _restore_layout(self) -> None:
        store = settings_store()
        geometry = store.value("window/geometry")
        state = store.value("window/state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
            from .layout_fit import fit_to_screen

            fit_to_screen(self)   # saved on a larger screen: never larger than this one
        self._geometry_restored = isinstance(geometry, QByteArray)
        if isinstance(state, QByteArray):
            self.restoreState(state, LAYOUT_VERSION)
        # No job runs at launch: the Jobs dock would open on empty charts.
        self.docks["jobs"].hide()
        # The splitter is set once the window is laid out (see showEvent): before, the
        # window's own resizing would redistribute it.
        splitter = store.value("window/splitter")
        self._splitter_state = splitter if isinstance(splitter, QByteArray) else None

    def save_layout(self) -> None:
        store = settings_store()
        store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/state", self.saveState(LAYOUT_VERSION))
        store.setValue("window/splitter", self.splitter.saveState())
        store.sync()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._splitter_placed:
            self._splitter_placed = True
            if self._geometry_restored:  # with the window manager's frame, known once shown
                from .layout_fit import fit_to_screen

                fit_to_screen(self)
            QTimer.singleShot(0, self._place_splitter)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit_layout()

    def fit_layout(self) -> None:
        """Once the window is laid out: the side panels give way to the reading view
        (at least half the width) when the window is narrowed or a dock opens."""
        if not getattr(self, "_fit_pending", False) and self._splitter_placed:
            self._fit_pending = True
            QTimer.singleShot(0, self._fit_now)

    def _fit_now(self) -> None:
        from .layout_fit import fit

        self._fit_pending = False
        fit(self, self.splitter, lambda fn: QTimer.singleShot(0, fn))

    def _place_splitter(self) -> None:
        if self._splitter_state is not None:
            self.splitter.restoreState(self._splitter_state)
        else:  # first run: reading view and entity table share the width 3:2
            width = self.splitter.width()
            self.splitter.setSizes([3 * width // 5, 2 * width // 5])
            self.fit_layout()  # a split the curator saved is kept as it was (until the window is resized)

    # Drag and drop, closing ------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_paths(paths)

    def terminate(self) -> None:
        """SIGTERM (a logout, a service stop, ``kill``): end without asking. Jobs are
        cancelled (nothing half-written), the layout and settings saved, work not saved
        stays in the autosave for the next start to offer, and the autosave lock is
        released (it used to be left behind, one more per killed session)."""
        from PySide6.QtWidgets import QApplication

        self._terminating = True
        self.jobs.cancel_all()
        self.save_layout()
        save_settings(self.settings)
        self.projects.release()
        QApplication.exit(0)

    @property
    def terminating(self) -> bool:
        """Whether SIGTERM has ended this session (start-up stops asking and opening)."""
        return self._terminating

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._terminating:  # terminate() did the cleaning up
            event.accept()
            return
        running = [j for j in self.jobs.running() if j.kind != QUIET_KIND]
        if running:
            B = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self, "Jobs are running",
                f"{len(running)} job{'s are' if len(running) > 1 else ' is'} still running. "
                "Cancel and quit? (Nothing half-written is kept.)", B.Yes | B.No, B.No)
            if answer != B.Yes:
                event.ignore()
                return
        if not self.maybe_save():
            event.ignore()
            return
        self.jobs.cancel_all()
        self.save_layout()
        save_settings(self.settings)
        self.projects.close()
        event.accept()
