"""Tagging a corpus into a folder of Parquet shards, as a job (progress, cancel),
with work proportional to what changed.

The unit of work is a document. A run:

1. recognises each input the folder has seen by its size and SHA-256 (its stored
   scan is used, nothing is parsed) and parses the others once, into a spool of
   their documents (:mod:`.work`); a bad input is reported and skipped;
2. resolves PubMed's update semantics (:mod:`.updates`) over every input the folder
   has ever taken (:mod:`.state`), PubMed files ordered by file number, so
   deletions and revisions apply to every shard whatever this run lists;
3. finds each current document's tagged row where one exists with the same text
   and fingerprint (:class:`.state.RowIndex`) and tags only the others (in chunks,
   each checkpointed as it comes: an interrupted run loses at most a chunk);
4. rewrites only the shards whose documents changed, into the folder's next snapshot,
   and publishes it in one step (:mod:`.view`: ``current`` always links to a snapshot
   holding exactly the current documents, once each); and records what this run
   superseded and deleted, with its speed figures, under ``_history/``, and the whole
   folder in ``_summary.json``.

The engine is ``local`` (this process) or ``ray`` (parsing tasks and a pool of
Tagger actors, :mod:`.ray_engine`, imported only when chosen); both run the same
parsing and tagging functions, so they write the same shards.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from fastbioner import __version__
from fastbioner.base.config import ConfigError, Settings
from fastbioner.base.errors import FastBioNERError, InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.infer.inference import TaggerConfig, resolve_model
from fastbioner.base.jobs import CancelToken, Cancelled, EventCallback, ProgressReporter, run_job
from fastbioner.infer.tagging import CHUNK_DOCUMENTS
from fastbioner.models.modeling import pick_device
from fastbioner.models.precision import checks_from_manifest, choose_precision, default_token_budget
from fastbioner.scale.local import LocalEngine
from fastbioner.scale.ray_engine import RayEngine
from fastbioner.scale.shards import (DOC_SCHEMA, SCHEMA, SCHEMA_VERSION, ChunkResult, file_record, fingerprint,
                     batches_invariantly, release_freed_memory, row_document, write_rows)
from fastbioner.scale.state import HISTORY_DIR, FolderState, InputRecord, RowIndex, codes_of, keep_old_version
from fastbioner.scale.preflight import default_threads, expand_inputs, folder_lock, refuse_object_store
from fastbioner.scale.updates import InputScan, _Codes, resolve
from fastbioner.scale.view import SUMMARY_FILE, View, refuse_foreign
from fastbioner.scale.work import ModelRef, file_digest

# import_ray is looked up when a run starts (tests replace it to stand for a missing Ray).

ENGINES = ("local", "ray")


@dataclass
class CorpusOptions(Settings):
    """How a corpus run is split and where it runs."""

    engine: str = "local"             # local | ray
    input_format: str | None = None   # None: from each file's name or content
    chunk_documents: int = CHUNK_DOCUMENTS  # documents per tagging call (and per Ray task message); a
                                            # checkpoint per chunk. Changes no output.
    address: str | None = None        # Ray: the cluster's address (None: start Ray on this machine)
    workers: int | None = None        # Ray: Tagger actors (None: one per GPU share, else CPUs - 1)
    gpus_per_worker: float = 0.0      # Ray: GPUs per actor (0: CPU actors)

    def validate(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r}; choose one of {', '.join(ENGINES)}")
        if self.chunk_documents < 1:
            raise ConfigError("chunk_documents must be at least 1")
        if self.workers is not None and self.workers < 1:
            raise ConfigError("workers must be at least 1")
        if self.gpus_per_worker < 0:
            raise ConfigError("gpus_per_worker cannot be negative")


@dataclass
class CorpusSummary:
    """The folder after a run (shards, documents, entities: all of it), what this run
    did, and its speed; written as ``_summary.json`` beside the shards."""

    out_dir: str
    engine: str
    model: str
    workers: int
    inputs: int = 0                 # inputs the folder holds (every run's)
    inputs_given: int = 0           # listed this run
    inputs_parsed: int = 0          # parsed this run (the others recognised by size and SHA-256)
    shards: list[dict[str, Any]] = field(default_factory=list)   # input, shard, documents, status
    documents: int = 0              # rows in all shards: the folder's current documents
    entities: dict[str, int] = field(default_factory=dict)       # over all shards
    documents_tagged: int = 0       # by this run
    documents_kept: int = 0         # current documents whose tagged row was reused (not tagged again)
    sentences_tagged: int = 0
    tokens_tagged: int = 0
    entities_tagged: int = 0
    startup_seconds: float = 0.0    # loading the model (every worker), before tagging starts
    tagging_seconds: float = 0.0    # wall time of this run's tagging stage
    worker_seconds: float = 0.0     # time the workers spent in the tagger, summed
    deleted_pmids: list[str] = field(default_factory=list)   # every PMID any input deletes
    deleted_dropped: int = 0        # documents left out because their PMID was deleted
    superseded: int = 0             # older copies left out for a later one
    removed_now: dict[str, int] = field(default_factory=dict)  # rows this run took out: superseded, deleted
    failures: list[dict[str, str]] = field(default_factory=list)  # input, error
    missing_inputs: list[str] = field(default_factory=list)  # earlier inputs whose file is gone
    fingerprint: dict[str, Any] = field(default_factory=dict)  # what the spans depend on
    device: dict[str, Any] = field(default_factory=dict)  # what one worker runs: device, precision, threads
    run: int = 0
    snapshot: str = ""              # what ``current`` links to after this run (relative to the folder)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_tagged / self.tagging_seconds if self.tagging_seconds > 0 else 0.0

    @property
    def tokens_per_s_per_worker(self) -> float:
        return self.tokens_tagged / self.worker_seconds if self.worker_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(tokens_per_s=round(self.tokens_per_s, 1),
                 tokens_per_s_per_worker=round(self.tokens_per_s_per_worker, 1))
        return d

    def lines(self) -> list[str]:
        written = sum(s["status"] == "written" for s in self.shards)
        failed = sum(s["status"] == "failed" for s in self.shards)
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.entities.items())) or "none"
        out = [
            f"{len(self.shards)} shard(s) in {self.out_dir}: {written} written, "
            f"{len(self.shards) - written - failed} unchanged" + (f", {failed} failed" if failed else ""),
            f"{self.documents} document(s), entities: {sum(self.entities.values())} ({types})",
            f"PubMed updates: {len(self.deleted_pmids)} PMID(s) deleted ({self.deleted_dropped} "
            f"document(s) left out), {self.superseded} document(s) superseded by a later copy",
            f"inputs: {self.inputs_given} given, {self.inputs_parsed} parsed, {self.inputs} in the folder",
            f"tagged now: {self.documents_tagged} document(s), {self.tokens_tagged} token(s), "
            f"{self.tokens_per_s:,.0f} tokens/s ({self.engine}, {self.workers} worker(s); "
            f"{self.tokens_per_s_per_worker:,.0f} tokens/s per busy worker); "
            f"{self.documents_kept} document(s) unchanged",
        ]
        out += [f"missing: {p} (an earlier input; its shard is kept)" for p in self.missing_inputs]
        out += [f"failed: {f['error']}" for f in self.failures]
        return out


def make_engine(options: CorpusOptions, model: ModelRef, config: TaggerConfig):
    if options.engine == "ray":
        return RayEngine(model, config, address=options.address, workers=options.workers,
                         gpus_per_worker=options.gpus_per_worker)

    return LocalEngine(model, config)


def output_fingerprint(ref: ModelRef, config: TaggerConfig, options: CorpusOptions) -> dict[str, Any]:
    """Everything a document's spans depend on besides its text: the model's files,
    the project's version, the precision and device kind it runs in, how documents are
    batched, and the tagger settings that change output. Not threads nor chunk size
    (spans are batch-invariant, see :func:`.shards.tag_chunk`), not the engine."""
    _, _, manifest = resolve_model(ref.folder)
    if options.engine == "ray":
        device = torch.device("cuda" if options.gpus_per_worker > 0 else "cpu")
    else:
        device = pick_device(config.device)
    precision = choose_precision(config.precision, device, checks_from_manifest(manifest))
    return {"schema_version": SCHEMA_VERSION, "model_sha256": ref.digest, "project_version": __version__,
            "precision": precision.value, "device": device.type,
            "batching": "by-width" if batches_invariantly(precision.value, device.type) else "per-document",
            "token_budget": config.token_budget or default_token_budget(device, precision),
            "max_batch_size": config.max_batch_size, "max_length": config.max_length,
            "window_overlap": config.window_overlap, "context": config.context, "model_engine": config.engine}


@dataclass
class _Plan:
    """One input's current documents (positions in file order) and where each row is."""

    record: InputRecord
    scan: InputScan
    positions: np.ndarray
    # Both set by _update once the row index is built:
    reuse: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # row to reuse (-1: tag)
    text: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # row holding the text (-1: none)
    rewrite: bool = False


def tag_corpus(inputs: Sequence[str | Path], out_dir: str | Path, model: str | Path,
               config: TaggerConfig | None = None, options: CorpusOptions | None = None, *,
               on_event: EventCallback | None = None, cancel: CancelToken | None = None) -> CorpusSummary:
    """Bring ``out_dir`` up to date with ``inputs`` (and every input it took before):
    see the module's doc. Events: ``scan`` (step = files recognised or parsed), then
    ``tag`` (step = documents tagged, metrics ``tokens_per_s`` and ``entities``). A
    bad input or a shard that fails is in ``failures`` while the others complete. A
    cancel keeps the tagged chunks (under ``_state/``) and no partial shard; run again
    to resume."""
    config = config or TaggerConfig()
    options = options or CorpusOptions()
    config.validate()
    options.validate()
    refuse_object_store(out_dir, "outputs")
    out_dir = Path(out_dir)
    paths = expand_inputs(inputs)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("is a file, expected an output folder", out_dir)
    refuse_foreign(out_dir)
    ref = ModelRef.resolve(model)
    if options.engine == "ray":
        from fastbioner.scale.ray_engine import import_ray

        import_ray()   # a missing extra is said before the folder is made
    if options.engine == "local" and config.threads is None:
        config = replace(config, threads=default_threads())
    parts = output_fingerprint(ref, config, options)
    fp = fingerprint(parts)

    state = FolderState.load(out_dir)
    if not paths and not state.inputs:
        raise InputError("no input files to tag")

    def job(reporter: ProgressReporter) -> CorpusSummary:
        with folder_lock(out_dir):
            engine = make_engine(options, ref, config)
            try:
                return _Run(engine, FolderState.load(out_dir), reporter, ref, parts, fp, options).run(paths)
            finally:
                state.clear_run_files()
                engine.close()

    return run_job(job, on_event, cancel)


class _Run:
    def __init__(self, engine, state: FolderState, reporter: ProgressReporter, ref: ModelRef,
                 parts: dict[str, Any], fp: str, options: CorpusOptions):
        self.engine, self.state, self.reporter = engine, state, reporter
        self.ref, self.parts, self.fp, self.options = ref, parts, fp, options
        self.out_dir = state.out_dir
        self.summary = CorpusSummary(str(self.out_dir), engine.name, ref.name, engine.workers,
                                     fingerprint=dict(parts))
        self.codes = _Codes()
        self.spooled: set[str] = set()
        self.status: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.checkpoints: list[Path] = []   # this shard's tagged chunks, until it is written
        self.token = uuid.uuid4().hex[:12]

    # -- 1. inputs --------------------------------------------------------------------

    def run(self, paths: list[str]) -> CorpusSummary:
        state, reporter, summary = self.state, self.reporter, self.summary
        summary.inputs_given = len(paths)
        reporter.stage("scan", total=len(paths), message=f"reading {len(paths)} input file(s)")
        scans: dict[str, InputScan] = {}
        to_parse: list[tuple[str, str, int]] = []   # name, path, mtime_ns
        taken: set[str] = set()
        for done, given in enumerate(paths, 1):
            path = os.path.abspath(given)
            name = f"?{path}"   # until identified
            try:
                name, known = state.identify(path, taken)
                taken.add(name)
                stat = os.stat(path)
                # The same path, size and modification time as when it was hashed: the
                # same bytes, without reading 40 MB again (1,300 baseline files each run).
                unchanged = known is not None and (known.path, known.size, known.mtime_ns) == \
                    (path, stat.st_size, stat.st_mtime_ns)
                if not unchanged and known is not None and known.size == stat.st_size:
                    unchanged = file_digest(path)[1] == known.sha256
            except OSError as exc:
                self._fail(name, given, f"{given}: cannot read: {exc.strerror or exc}")
                continue
            scan = state.load_scan(name, path) if unchanged else None
            if scan is not None and known is not None:  # known: unchanged says so
                scans[name] = scan
                known.path, known.mtime_ns = path, stat.st_mtime_ns
                reporter.emit(step=done, message=f"{Path(path).name} (seen before)")
            else:
                to_parse.append((name, path, stat.st_mtime_ns))
        for i, scan_or_error in self.engine.parse(
                [(p, str(state.spool_path(n))) for n, p, _ in to_parse], self.options.input_format,
                reporter.cancel):
            name, path, mtime_ns = to_parse[i]
            if isinstance(scan_or_error, BaseException):
                self._fail(name, path, str(scan_or_error))
            else:
                state.inputs[name] = InputRecord(name, path, scan_or_error.size, scan_or_error.sha256,
                                                 state.order_of(name, path), mtime_ns)
                state.save_scan(name, scan_or_error)
                scans[name] = scan_or_error
                self.spooled.add(name)
                summary.inputs_parsed += 1
            reporter.emit(step=len(scans) + len(self.errors), message=Path(path).name)
        state.save()
        for record in state.ordered():   # earlier runs' inputs, listed this time or not
            if record.name not in scans:
                scan = state.load_scan(record.name, record.path)
                if scan is not None:
                    scans[record.name] = scan
            if not Path(record.path).is_file():
                summary.missing_inputs.append(record.path)
        ordered = [r for r in state.ordered() if r.name in scans]
        return self._update(ordered, [scans[r.name] for r in ordered])

    def _fail(self, name: str, path: str, error: str) -> None:
        self.errors[name] = error
        self.summary.failures.append({"input": path, "error": error})

    # -- 2./3. what to tag ----------------------------------------------------------------

    def _update(self, ordered: list[InputRecord], scans: list[InputScan]) -> CorpusSummary:
        summary, reporter, state = self.summary, self.reporter, self.state
        self.view = view = View(self.out_dir, set(state.inputs))
        resolution = resolve(scans)
        summary.inputs = len(ordered)
        summary.deleted_pmids = resolution.deleted_pmids
        summary.deleted_dropped, summary.superseded = resolution.deleted_dropped, resolution.superseded
        plans: list[_Plan] = []
        codes, hashes = [], []
        for record, scan, keep in zip(ordered, scans, resolution.keep):
            positions = np.nonzero(keep)[0]
            plans.append(_Plan(record, scan, positions))
            codes.append(self.codes.array(scan)[positions])
            assert scan.hashes is not None  # a scan a run makes or loads has them
            hashes.append(scan.hashes[positions])
        # A shard that holds exactly its input's current documents, same text, same
        # fingerprint, is left alone: most of the folder on a daily run, compared shard
        # by shard, so that only the changed documents go into the index below.
        changed = [not self._in_place(plan, c, h) for plan, c, h in zip(plans, codes, hashes)]
        for plan, ch in zip(plans, changed):
            if not ch and not view.same_as_live(plan.record.name):   # an interrupted run wrote it
                self.status[plan.record.name] = "written"
        wanted = [c for c, ch in zip(codes, changed) if ch]
        index = RowIndex(self.codes, np.concatenate(wanted) if wanted else np.zeros(0, np.int64))
        shard_src: dict[str, int] = {}   # an unfinished snapshot's shard, indexed, that this run replaces
        for plan, ch in zip(plans, changed):
            if ch:
                name = plan.record.name
                live = view.live_shard(name)
                if live is not None:
                    index.add(live)   # the published view: never written to, readable all run long
                if (view.work / name).is_file() and not view.same_as_live(name):
                    src = index.add(view.work / name)
                    if src is not None:
                        shard_src[name] = src
        for folder in (state.replaced_dir, state.pending_dir):   # an interrupted run's rows
            for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():
                index.add(path)
        kept = 0
        for plan, c, h, ch in zip(plans, codes, hashes, changed):
            if ch:
                plan.reuse, plan.text = index.locate(c, h, self.fp)
            else:
                plan.reuse = plan.text = np.zeros(len(plan.positions), dtype=np.int64)
            plan.rewrite = ch and plan.record.name not in self.errors
            kept += int((plan.reuse >= 0).sum())
        all_codes = np.sort(np.concatenate(codes)) if codes else np.zeros(0, np.int64)
        del codes, hashes
        summary.documents_kept = kept
        total = sum(int((p.reuse < 0).sum()) for p in plans if p.rewrite)
        if total:
            reporter.stage("load", message=f"loading {self.ref.name} ({self.engine.workers} worker(s))")
            t_load = time.perf_counter()
            self.engine.start()
            summary.startup_seconds = time.perf_counter() - t_load
            summary.device = {k: v for k, v in self.engine.describe().items() if k != "model"}
            self._check_fingerprint(summary.device)
        reporter.stage("tag", total=total, message=f"tagging {total} document(s) "
                                                   f"into {sum(p.rewrite for p in plans)} shard(s)")
        t0 = time.perf_counter()
        removed: dict[str, list[str]] = {"superseded": [], "deleted": []}
        for plan, ch in zip(plans, changed):
            if not plan.rewrite:
                if ch:   # its input failed: the shard stays as readers know it
                    view.restore(plan.record.name)
                continue
            shard = view.work / plan.record.name
            try:
                table = self._rows(plan, index, t0)
                live = view.live_shard(plan.record.name)
                old_ids = pq.read_table(live, columns=["pmid"]).column("pmid").to_pylist() if live else []
                old_version = keep_old_version(shard, state.replaced_dir) if plan.record.name in shard_src else None
                if old_version is not None:   # rows still to be read from it stay readable
                    index.sources[shard_src[plan.record.name]] = old_version
                write_rows(shard, table, {"fingerprint": self.fp, "input": Path(plan.record.path).name,
                                          "input_sha256": plan.record.sha256, "model_name": self.ref.name})
                self.status[plan.record.name] = "written"
                for checkpoint in self.checkpoints:   # in the shard now
                    checkpoint.unlink(missing_ok=True)
                self.checkpoints.clear()
                now = set(table.column("pmid").to_pylist())
                gone = [id_ for id_ in old_ids if id_ not in now]
                gone_codes = np.array([self.codes.code(id_) for id_ in gone], dtype=np.int64)
                at = np.minimum(np.searchsorted(all_codes, gone_codes), max(len(all_codes) - 1, 0))
                current = (all_codes[at] == gone_codes) if len(all_codes) else np.zeros(len(gone), bool)
                for id_, elsewhere in zip(gone, current.tolist()):
                    removed["superseded" if elsewhere else "deleted"].append(id_)
                del table
                release_freed_memory()   # memory follows the current shard, not the run
            except Cancelled:
                raise
            except Exception as exc:
                self.checkpoints.clear()   # kept on disk: a rerun reuses them
                message = str(exc) if isinstance(exc, FastBioNERError) else \
                    f"{plan.record.path}: tagging failed: {type(exc).__name__}: {exc}"
                self._fail(plan.record.name, plan.record.path, message)
                view.restore(plan.record.name)
        summary.tagging_seconds = time.perf_counter() - t0
        view.publish()   # one rename: readers see this run's whole update, or none of it
        summary.removed_now = {k: len(v) for k, v in removed.items()}
        if not self.errors:   # every checkpointed chunk is in a shard now
            for folder in (state.pending_dir, state.replaced_dir):
                for path in folder.glob("*.parquet") if folder.is_dir() else ():
                    path.unlink(missing_ok=True)
        return self._finish(ordered, removed)

    def _in_place(self, plan: _Plan, codes: np.ndarray, hashes: np.ndarray) -> bool:
        """Whether the input's shard holds exactly these documents (ids and text hashes,
        in order) under the current fingerprint."""
        shard = self.view.work / plan.record.name
        record = file_record(shard) if shard.is_file() else None
        if record is None or record.get("fingerprint") != self.fp or record.get("documents") != len(codes):
            return False
        table = pq.read_table(shard, columns=["pmid", "text_hash"])
        return bool(np.array_equal(codes_of(self.codes, table.column("pmid")), codes) and
                    np.array_equal(table.column("text_hash").to_numpy(), hashes))

    def _check_fingerprint(self, device: dict[str, Any]) -> None:
        """The workers run what the fingerprint says (a Ray cluster's hardware may differ
        from this machine's view of it)."""
        got = {"precision": device.get("precision"), "device": str(device.get("device", "")).split(":")[0]}
        want = {k: self.parts[k] for k in got}
        if got != want:
            raise FastBioNERError(f"the workers run {got['precision']} on {got['device']}, this machine "
                                  f"expected {want['precision']} on {want['device']}: give --precision "
                                  f"(and --device) explicitly")

    # -- 3. tagging ------------------------------------------------------------------------

    def _rows(self, plan: _Plan, index: RowIndex, t0: float) -> pa.Table:
        """The shard's rows in file order: reused rows, and the others tagged (each chunk
        checkpointed under ``_state/pending/`` as it comes)."""
        tag_mask = plan.reuse < 0
        parts, order = [], []
        if (~tag_mask).any():
            parts.append(index.read(plan.reuse[~tag_mask]).select(SCHEMA.names))
            order.append(np.nonzero(~tag_mask)[0])
        if tag_mask.any():
            stem = Path(plan.record.name).stem
            for n, chunk in enumerate(self.engine.tag(self._documents(plan, index, tag_mask),
                                                      self.reporter.cancel)):
                self._count(chunk, t0)
                table = pa.Table.from_batches([chunk.batch], schema=SCHEMA)
                # Named by this run's token, so no run overwrites a checkpoint it indexed.
                checkpoint = self.state.pending_dir / f"{stem}.{self.token}.{n:06d}.parquet"
                write_rows(checkpoint, table, {"fingerprint": self.fp})
                self.checkpoints.append(checkpoint)
                parts.append(table)
            order.append(np.nonzero(tag_mask)[0])
        if not parts:
            return SCHEMA.empty_table()
        table = pa.concat_tables(parts)
        positions = np.concatenate(order)
        if np.all(positions[1:] > positions[:-1]):
            # Already in file order (a new input, every row tagged): taking would copy the
            # whole shard once more at its largest moment.
            return table
        return table.take(pa.array(np.argsort(positions, kind="stable")))

    def _documents(self, plan: _Plan, index: RowIndex, tag_mask: np.ndarray) -> Iterator[list]:
        """The documents to tag, in file order, in chunks: from this run's spool, else
        from a row that holds their text, else by parsing the input (once)."""
        name = plan.record.name
        wanted = plan.positions[tag_mask]
        from_rows = plan.text[tag_mask]
        if name not in self.spooled and (from_rows < 0).any():
            self._parse_again(plan)
        size = self.options.chunk_documents
        if name in self.spooled:
            yield from _chunks(_spool_documents(self.state.spool_path(name), wanted), size)
        else:   # the rows that hold their text: each source read once (one shard's rows)
            rows = index.read(from_rows)
            for k in range(0, rows.num_rows, size):
                yield [row_document(r) for r in rows.slice(k, size).to_pylist()]

    def _parse_again(self, plan: _Plan) -> None:
        """An input recognised by its hash whose documents are in no shard (a run stopped
        before writing it, or a shard removed by hand): parse it now."""
        record = plan.record
        for _, scan in self.engine.parse([(record.path, str(self.state.spool_path(record.name)))],
                                            self.options.input_format, self.reporter.cancel):
            if isinstance(scan, BaseException):
                raise scan
            if scan.sha256 != record.sha256:
                raise InputError("changed while it was being tagged: run again", record.path)
        self.spooled.add(record.name)
        self.summary.inputs_parsed += 1

    def _count(self, chunk: ChunkResult, t0: float) -> None:
        s = self.summary
        s.documents_tagged += chunk.documents
        s.sentences_tagged += chunk.sentences
        s.tokens_tagged += chunk.tokens
        s.worker_seconds += chunk.seconds
        s.entities_tagged += sum(chunk.entities.values())
        elapsed = time.perf_counter() - t0
        self.reporter.emit(step=s.documents_tagged, message=f"{s.documents_tagged} documents",
                           metrics={"tokens_per_s": round(s.tokens_tagged / elapsed, 1) if elapsed > 0 else 0.0,
                                    "entities": s.entities_tagged})

    # -- 4. the folder ---------------------------------------------------------------------

    def _finish(self, ordered: list[InputRecord], removed: dict[str, list[str]]) -> CorpusSummary:
        summary, state = self.summary, self.state
        summary.snapshot = os.path.relpath(self.view.work, self.out_dir)
        for record in ordered:
            shard = self.view.work / record.name
            info = file_record(shard) if shard.is_file() else None
            status = "failed" if record.name in self.errors else self.status.get(record.name, "unchanged")
            summary.shards.append({"input": record.path, "shard": record.name,
                                   "documents": info["documents"] if info else 0, "status": status})
            if info:
                summary.documents += info["documents"]
                for label, n in info["entities"].items():
                    summary.entities[label] = summary.entities.get(label, 0) + n
        summary.entities = dict(sorted(summary.entities.items()))
        state.runs += 1
        summary.run = state.runs
        state.save()
        run_record = {"run": state.runs, "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "engine": summary.engine, "workers": summary.workers, "device": summary.device,
                      "inputs_given": summary.inputs_given, "inputs_parsed": summary.inputs_parsed,
                      "documents_tagged": summary.documents_tagged, "tokens_tagged": summary.tokens_tagged,
                      "tagging_seconds": round(summary.tagging_seconds, 3),
                      "tokens_per_s": round(summary.tokens_per_s, 1),
                      "failures": summary.failures, "superseded": removed["superseded"],
                      "deleted": removed["deleted"]}
        with atomic_write(self.out_dir / HISTORY_DIR / f"run-{state.runs:05d}.json") as fh:
            fh.write(json.dumps(run_record, indent=1) + "\n")
        with atomic_write(self.out_dir / SUMMARY_FILE) as fh:
            fh.write(json.dumps(summary.to_dict(), indent=2) + "\n")
        return summary


def _spool_documents(spool: Path, wanted: np.ndarray) -> Iterator:
    """The spool's documents at positions ``wanted`` (sorted), read a row group at a time."""
    offset = 0
    for batch in pq.ParquetFile(spool).iter_batches(columns=DOC_SCHEMA.names):
        n = batch.num_rows
        lo, hi = np.searchsorted(wanted, [offset, offset + n])
        if hi > lo:
            picked = batch.take(pa.array(wanted[lo:hi] - offset))
            yield from (row_document(r) for r in picked.to_pylist())
        offset += n


def _chunks(items: Iterator, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
