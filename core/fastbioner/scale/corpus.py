"""Tagging a corpus of many files into Parquet shards, as a job (progress, cancel).

``tag_corpus`` scans the inputs (ids and PubMed deletions), resolves PubMed's
update semantics (:mod:`.updates`), skips shards already complete with the same
fingerprint (resume), then has an engine read and tag the rest, writing each shard
atomically as its last chunk arrives (:mod:`.shards`), and finally a summary
(``_summary.json`` in the output folder). The engine is ``local`` (this process) or
``ray`` (reading tasks and a pool of Tagger actors, :mod:`.ray_engine`, imported only
when chosen); both run the same reading and tagging functions (:mod:`.work`), so
they write the same shards.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..config import ConfigError, Settings
from ..errors import InputError
from ..fileio import atomic_write
from ..formats import format_for_path
from ..inference import TaggerConfig
from ..jobs import CancelToken, EventCallback, ProgressReporter, run_job
from .shards import SCHEMA_VERSION, ChunkResult, fingerprint, shard_fingerprint, shard_paths, shard_record, write_shard
from .updates import resolve
from .work import ModelRef, ShardJob

ENGINES = ("local", "ray")
SUMMARY_FILE = "_summary.json"  # "_" first: Parquet readers of the folder (pyarrow, Spark) skip it


@dataclass
class CorpusOptions(Settings):
    """How a corpus run is split and where it runs."""

    engine: str = "local"             # local | ray
    input_format: str | None = None   # None: from each file's name or content
    chunk_documents: int = 64         # documents per tagging call (and per Ray task message)
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
    """What a corpus run did; written as ``_summary.json`` beside the shards."""

    out_dir: str
    engine: str
    model: str
    workers: int
    inputs: int = 0
    shards: list[dict[str, Any]] = field(default_factory=list)   # input, shard, documents, status
    documents: int = 0              # rows in all shards (skipped ones included)
    entities: dict[str, int] = field(default_factory=dict)       # over all shards
    documents_tagged: int = 0       # by this run
    sentences_tagged: int = 0
    tokens_tagged: int = 0
    entities_tagged: int = 0
    startup_seconds: float = 0.0    # loading the model (every worker), before tagging starts
    tagging_seconds: float = 0.0    # wall time of this run's tagging stage
    worker_seconds: float = 0.0     # time the workers spent in the tagger, summed
    deleted_pmids: list[str] = field(default_factory=list)
    deleted_dropped: int = 0
    superseded: int = 0
    device: dict[str, Any] = field(default_factory=dict)  # what one worker runs: device, precision, threads

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
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.entities.items())) or "none"
        return [
            f"{len(self.shards)} shard(s) in {self.out_dir}: {written} written, "
            f"{len(self.shards) - written} already complete (skipped)",
            f"{self.documents} document(s), entities: {sum(self.entities.values())} ({types})",
            f"PubMed updates: {len(self.deleted_pmids)} PMID(s) deleted ({self.deleted_dropped} "
            f"document(s) left out), {self.superseded} document(s) superseded by a later copy",
            f"tagged now: {self.documents_tagged} document(s), {self.tokens_tagged} token(s), "
            f"{self.tokens_per_s:,.0f} tokens/s ({self.engine}, {self.workers} worker(s); "
            f"{self.tokens_per_s_per_worker:,.0f} tokens/s per busy worker)",
        ]


def expand_inputs(inputs: Sequence[str | Path]) -> list[str]:
    """Files as given, folders as their document files sorted by name (PubMed's file
    names sort oldest first); hidden files skipped."""
    out: list[str] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            out.extend(str(f) for f in sorted(p.rglob("*"))
                       if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
                       and format_for_path(f) is not None)
        elif p.is_file():
            out.append(str(p))
        else:
            raise InputError("no such file", p)
    if not out:
        raise InputError("no input files to tag")
    return out


def make_engine(options: CorpusOptions, model: ModelRef, config: TaggerConfig):
    if options.engine == "ray":
        from .ray_engine import RayEngine  # Ray is an optional extra: imported only here

        return RayEngine(model, config, address=options.address, workers=options.workers,
                         gpus_per_worker=options.gpus_per_worker)
    from .local import LocalEngine

    return LocalEngine(model, config)


def tag_corpus(inputs: Sequence[str | Path], out_dir: str | Path, model: str | Path,
               config: TaggerConfig | None = None, options: CorpusOptions | None = None, *,
               on_event: EventCallback | None = None, cancel: CancelToken | None = None) -> CorpusSummary:
    """Tag every kept document of ``inputs`` (oldest first) into one Parquet shard per
    input under ``out_dir``. Events: ``scan`` (step = files scanned), then ``tag``
    (step = documents tagged, metrics ``tokens_per_s`` and ``entities``). A cancel
    leaves the shards completed so far and no partial one; run again to resume."""
    config = config or TaggerConfig()
    options = options or CorpusOptions()
    config.validate()
    options.validate()
    out_dir = Path(out_dir)
    paths = expand_inputs(inputs)
    shards = shard_paths(paths, out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("is a file, expected an output folder", out_dir)
    ref = ModelRef.resolve(model)

    def job(reporter: ProgressReporter) -> CorpusSummary:
        engine = make_engine(options, ref, config)
        try:
            return _run(engine, reporter)
        finally:
            engine.close()

    def _run(engine, reporter: ProgressReporter) -> CorpusSummary:
        reporter.stage("scan", total=len(paths), message=f"reading {len(paths)} input file(s)")
        scans = []
        for scan in engine.scan(paths, options.input_format, reporter.cancel):
            scans.append(scan)
            reporter.emit(step=len(scans), message=Path(scan.path).name)
        resolution = resolve(scans)
        summary = CorpusSummary(str(out_dir), engine.name, ref.name, engine.workers, inputs=len(paths),
                                deleted_pmids=resolution.deleted_pmids,
                                deleted_dropped=resolution.deleted_dropped, superseded=resolution.superseded)
        settings = {"model": ref.digest, "tagger": config.to_dict(), "chunk_documents": options.chunk_documents,
                    "schema_version": SCHEMA_VERSION}
        pending: list[tuple[ShardJob, dict[str, Any]]] = []
        status: dict[str, str] = {}
        for scan, keep, shard in zip(scans, resolution.keep, shards):
            record = {"input": Path(scan.path).name, "input_sha256": scan.sha256, "model_name": ref.name,
                      "fingerprint": fingerprint(dict(settings, input=scan.sha256,
                                                      keep=hashlib.sha256(keep.tobytes()).hexdigest()))}
            if shard.is_file() and shard_fingerprint(shard) == record["fingerprint"]:
                status[str(shard)] = "skipped"
                continue
            pending.append((ShardJob(scan.path, options.input_format, keep, options.chunk_documents,
                                     str(shard)), record))
        total = sum(int(j.keep.sum()) for j, _ in pending)
        if pending:
            reporter.stage("load", message=f"loading {ref.name} ({engine.workers} worker(s))")
            t_load = time.perf_counter()
            engine.start()
            summary.startup_seconds = time.perf_counter() - t_load
            summary.device = engine.describe()
        reporter.stage("tag", total=total, message=f"tagging {total} document(s) into {len(pending)} shard(s)")
        t0 = time.perf_counter()
        if pending:
            stream = engine.stream([j for j, _ in pending], reporter.cancel)
            for index, (shard_job, record) in enumerate(pending):
                stats = write_shard(Path(shard_job.shard), _chunks_of(stream, index, summary, reporter, t0),
                                    record, check=reporter.check)
                summary.sentences_tagged += stats.sentences
                status[shard_job.shard] = "written"
        summary.tagging_seconds = time.perf_counter() - t0
        for scan, shard in zip(scans, shards):
            info = shard_record(shard)
            summary.shards.append({"input": scan.path, "shard": shard.name, "documents": info["documents"],
                                   "status": status[str(shard)]})
            summary.documents += info["documents"]
            for label, n in info["entities"].items():
                summary.entities[label] = summary.entities.get(label, 0) + n
        summary.entities = dict(sorted(summary.entities.items()))
        with atomic_write(out_dir / SUMMARY_FILE) as fh:
            fh.write(json.dumps(summary.to_dict(), indent=2) + "\n")
        return summary

    return run_job(job, on_event, cancel)


def _chunks_of(stream: Iterator[tuple[int, ChunkResult | None]], index: int, summary: CorpusSummary,
               reporter: ProgressReporter, t0: float) -> Iterator[ChunkResult]:
    """The chunks of shard ``index`` from the engine's ordered stream, counted as they
    pass (progress and the run's totals)."""
    for got, chunk in stream:
        if got != index:  # pragma: no cover - the engines keep shard order
            raise RuntimeError(f"engine returned shard {got} while shard {index} was open")
        if chunk is None:
            return
        summary.documents_tagged += chunk.documents
        summary.tokens_tagged += chunk.tokens
        summary.worker_seconds += chunk.seconds
        summary.entities_tagged += sum(chunk.entities.values())
        elapsed = time.perf_counter() - t0
        reporter.emit(step=summary.documents_tagged,
                      message=f"{summary.documents_tagged} documents",
                      metrics={"tokens_per_s": round(summary.tokens_tagged / elapsed, 1) if elapsed > 0 else 0.0,
                               "entities": summary.entities_tagged})
        yield chunk
