"""What every training run shares, teacher fine-tuning and distillation alike:
claiming a name, the fingerprint a resumed run must match, the training data's
records, the manifest's resolved settings and training block, picking the devel
report of the selected weights, and installing the model atomically.

``teacher.py`` and ``distill/runner.py`` only say what differs (the model, the
objective, the batches, what goes into the manifest beyond this).
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from fastbioner.io.formats import expand_paths
from fastbioner.models.modeling import save_model
from fastbioner.train import distributed
from fastbioner.train.checkpoints import clear_checkpoints, has_checkpoint
from fastbioner.base.config import Settings
from fastbioner.base.errors import InputError, ModelError
from fastbioner.infer.evaluation import EvaluationReport, score_tags
from fastbioner.infer.inference import scoring_tagger
from fastbioner.base.jobs import ProgressReporter
from fastbioner.io.labels import TaggedSentence
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.models.manifest import Manifest, data_record, write_manifest
from fastbioner.train.leftovers import record_run
from fastbioner.train.training import TrainingResult

# Settings a resumed run may change: where and how fast it runs, how it is watched.
# (cpu_bf16 is as much a setting of where it runs as device, which brings CUDA's own
# mixed precision with it.)
RUN_ONLY = {"training": ("device", "threads", "cpu_bf16", "eval_batch_size", "checkpoint_every_steps",
                         "early_stopping_patience"),
            "": ("teacher_cache", "cache_memory_mb")}
# Settings that name files: the manifest keeps their names (checksums in training_data).
FILE_SETTINGS = ("train_files", "dev_file", "unlabeled_files")


def checkpoint_folder(registry: Registry, name: str) -> Path:
    return registry.root / ".checkpoints" / name


def claim_run(registry: Registry, name: str, *, overwrite: bool, resume: bool, restart: bool,
              record: tuple[str, Any] | None = None) -> Path:
    """Check that a training run may register ``name`` and return its checkpoint
    folder: an existing model needs ``overwrite``, an interrupted run's checkpoint
    needs ``resume`` (continue) or ``restart`` (discarded here). ``record`` (kind,
    config) is written beside the checkpoints, so the app can list an interrupted run
    and resume it (:mod:`fastbioner.train.leftovers`)."""
    registry.check_name(name)
    if registry.exists(name) and not overwrite:
        raise ModelError(f"a model named {name!r} already exists; choose another name or delete it")
    ckpt = checkpoint_folder(registry, name)
    if has_checkpoint(ckpt) and not (resume or restart):
        raise ModelError(f"an interrupted run of {name!r} left a checkpoint in {ckpt}; "
                         f"resume it (--resume) or discard it (--restart)")
    if restart and distributed.is_main():  # one rank of a multi-process run clears, not each
        clear_checkpoints(ckpt)
    if record is not None and distributed.is_main():
        record_run(ckpt, *record)
    return ckpt


def document_keys(sentences: Sequence[TaggedSentence], context: str, where: str) -> list[Any] | None:
    """The document of each sentence when the settings ask for document or packed
    context (the ``-DOCSTART-`` ids of a CoNLL file), else None."""
    if context not in ("document", "packed"):
        return None
    keys = [s.doc_id for s in sentences]
    if sentences and all(k is None for k in keys):
        raise InputError(f"{context} context needs document boundaries (-DOCSTART- lines); convert the "
                         "PubTator or BioC file with `fastbioner convert FILE OUT.conll`", where)
    return keys


def data_records(train: Sequence[str], dev: str | None, unlabeled: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The training data as the manifest and the fingerprint record it: each file's
    name, role and SHA-256 (an unlabelled folder: each file read from it)."""
    records = [data_record(p, "train") for p in train]
    records += [data_record(p, "unlabeled") for p in expand_paths(unlabeled)]
    if dev:
        records.append(data_record(dev, "dev"))
    return records


def fingerprint(config: Settings, data: list[dict[str, Any]]) -> dict[str, Any]:
    """What a resumed run must share with the interrupted one: every setting but
    the run-only ones (``RUN_ONLY``), and the data by checksum (not by path, so a
    moved file still resumes)."""
    cfg = config.to_dict()
    for section, keys in RUN_ONLY.items():
        target = cfg.get(section, {}) if section else cfg
        for key in keys:
            target.pop(key, None)
    for key in FILE_SETTINGS:
        cfg.pop(key, None)
    return {"config": cfg, "data": [d["sha256"] for d in data]}


def manifest_config(config: Settings) -> dict[str, Any]:
    """The fully resolved settings as the manifest keeps them: files by name (their
    checksums are in ``training_data``), nothing left unset (``None`` is dropped:
    reloading fills the default, which is what ``None`` meant)."""
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    cfg = copy.deepcopy(config.to_dict())
    for key in FILE_SETTINGS:
        value = cfg.get(key)
        if isinstance(value, list):
            cfg[key] = [Path(v).name for v in value]
        elif value:
            cfg[key] = Path(value).name
    return clean(cfg)


def training_record(result: TrainingResult, **extra: Any) -> dict[str, Any]:
    """The manifest's ``training`` block: what happened, as the loop reports it."""
    return {"steps": result.steps, "total_steps": result.total_steps, "best_step": result.best_step,
            "stopped_early": result.stopped_early, "epoch_seconds": result.epoch_seconds,
            "seconds": result.seconds, "resumed_from": result.resumed_from, "history": result.history,
            **extra}


def score_devel(model, tokenizer, encoding, dev: Sequence[TaggedSentence], documents, cancel=None, *,
                bf16: bool = False) -> EvaluationReport:
    """Devel scores as the model will tag in use (the inference Tagger, so a CRF model
    is scored on its Viterbi paths), windowed and with the context it trains with.
    ``bf16``: under CPU bf16 autocast, for the scorings that pick a ``--cpu-bf16`` run's
    weights (about as costly as its training steps at three scorings an epoch); the
    weights picked are scored again in fp32 for the figures the run reports."""
    tagger = scoring_tagger(model, tokenizer, encoding.max_length, encoding.window_overlap, encoding.context)
    with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
        predicted = tagger.predict_words([s.words for s in dev], cancel, documents=documents)
    return score_tags([s.tags for s in dev], [p.tags for p in predicted])


def selecting_in_bf16(training, device: torch.device) -> bool:
    """Whether a run's devel scorings run under bf16 autocast: a CPU run trained so."""
    return training.cpu_bf16 and device.type == "cpu"


def selected_report(reports: list[EvaluationReport], result: TrainingResult,
                    rescore: Callable[[], EvaluationReport], reporter: ProgressReporter,
                    source: dict[str, str]) -> EvaluationReport:
    """The devel report of the weights the run kept: the evaluation that picked
    them, or (when that happened before a resume, or was a bf16 scoring: pass no
    ``reports``) a fresh scoring of them."""
    report = next((r for r in reports if r.metrics() == result.best_metrics), None)
    if report is None:
        reporter.stage("evaluate", message="scoring the selected weights on devel")
        report = rescore()
    report.source = source
    return report


def install(registry: Registry, name: str, model, tokenizer, manifest_for: Callable[[Path], Manifest], *,
            overwrite: bool, reporter: ProgressReporter, checkpoint: Path) -> ModelEntry:
    """Save the model and its manifest into a staging folder and rename it into
    the registry; a cancel up to the rename leaves nothing registered. The run's
    checkpoints go once the model is in place. ``manifest_for(folder)`` may read
    the saved folder (its size, say)."""
    reporter.stage("save", message=f"registering {name}")
    with registry.staging() as folder:
        save_model(model.to("cpu"), tokenizer, folder)
        write_manifest(folder, manifest_for(folder))
        reporter.check()  # a cancel now still leaves nothing registered
        entry = registry.install(folder, name, overwrite=overwrite)
    clear_checkpoints(checkpoint)
    return entry
