"""Teacher fine-tuning: a Hugging Face encoder plus a tagging head, trained on BIO
files with the shared training loop, selected on devel F1, registered with its
manifest.

``train_teacher(config, name, on_event=..., cancel=...)`` is a job: a cancelled or
failed run registers nothing. Its checkpoints live in the registry's
``.checkpoints/<name>`` folder until the model is installed, so ``resume=True``
continues a run cut short by a cancel or a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .checkpoints import clear_checkpoints, has_checkpoint
from .config import TeacherConfig
from .encoding import WindowBatches, WordEncoder
from .errors import InputError, ModelError
from .evaluation import EvaluationReport, score_tags
from .inference import scoring_tagger
from .jobs import CancelToken, EventCallback, ProgressReporter, run_job
from .labels import TaggedSentence, bio_labels, entity_types
from .losses import make_token_loss
from .modeling import load_token_classifier, load_tokenizer, model_shape, save_model
from .registry import Manifest, ModelEntry, Registry, data_record, now_iso, write_manifest
from .training import Trainer, TrainingResult, seed_everything


class TokenClassificationObjective:
    """The teacher's objective: a gold-label loss on the model's logits."""

    def __init__(self, model, loss_fn):
        self.model = model
        self.loss_fn = loss_fn

    def __call__(self, batch, step: int, total_steps: int):
        logits = self.model(**batch.model_inputs()).logits
        loss = self.loss_fn(logits, batch.labels)
        return loss, {"loss": float(loss.detach())}


@dataclass
class TeacherResult:
    entry: ModelEntry
    report: EvaluationReport | None  # devel scores of the registered weights
    training: TrainingResult


def read_bio_files(paths: Sequence[str | Path]) -> list[TaggedSentence]:
    from .formats.conll import read_tagged_sentences

    sentences: list[TaggedSentence] = []
    for path in paths:
        sentences.extend(read_tagged_sentences(path))
    return sentences


def checkpoint_folder(registry: Registry, name: str) -> Path:
    return registry.root / ".checkpoints" / name


def claim_run(registry: Registry, name: str, *, overwrite: bool, resume: bool, restart: bool) -> Path:
    """Check that a training run (teacher or student) may register ``name`` and return
    its checkpoint folder: an existing model needs ``overwrite``, an interrupted run's
    checkpoint needs ``resume`` (continue) or ``restart`` (discarded here)."""
    registry.check_name(name)
    if registry.exists(name) and not overwrite:
        raise ModelError(f"a model named {name!r} already exists; choose another name or delete it")
    ckpt = checkpoint_folder(registry, name)
    if has_checkpoint(ckpt) and not (resume or restart):
        raise ModelError(f"an interrupted run of {name!r} left a checkpoint in {ckpt}; "
                         f"resume it (--resume) or discard it (--restart)")
    if restart:
        clear_checkpoints(ckpt)
    return ckpt


def _fingerprint(config: TeacherConfig, data: list[dict]) -> dict:
    """Settings a resumed run must share with the interrupted one (device and
    evaluation batch size may change; the data may not)."""
    cfg = config.to_dict()
    for key in ("device", "threads", "eval_batch_size", "checkpoint_every_steps",
                "early_stopping_patience"):
        cfg["training"].pop(key, None)
    return {"config": cfg, "data": [d["sha256"] for d in data]}


def train_teacher(config: TeacherConfig, name: str, *, registry: Registry | None = None,
                  resume: bool = False, restart: bool = False, overwrite: bool = False,
                  on_event: Optional[EventCallback] = None,
                  cancel: Optional[CancelToken] = None) -> TeacherResult:
    """Fine-tune ``config.base_model`` on ``config.train_files`` and register it as
    ``name``. With a ``dev_file`` the weights of the best devel F1 are kept (and
    early stopping applies); without, those of the last step."""
    config.validate()
    registry = registry or Registry()
    ckpt = claim_run(registry, name, overwrite=overwrite, resume=resume, restart=restart)

    def job(reporter: ProgressReporter) -> TeacherResult:
        reporter.stage("prepare", message="reading the training data")
        train = read_bio_files(config.train_files)
        dev = read_bio_files([config.dev_file]) if config.dev_file else []
        labels = bio_labels(entity_types(t for s in train for t in s.tags))
        if len(labels) == 1:
            raise InputError("no entities in the training data", config.train_files[0])
        data = [data_record(p, "train") for p in config.train_files]
        if config.dev_file:
            data.append(data_record(config.dev_file, "dev"))
        reporter.emit(message=f"loading {config.base_model}")
        # Seeded before the model is built: its new tagging head is initialised at random,
        # so the same seed gives the same weights.
        seed_everything(config.training.seed)
        tokenizer = load_tokenizer(config.base_model)
        model = load_token_classifier(config.base_model, labels=labels)
        enc = config.encoding
        encoder = WordEncoder(tokenizer, labels, enc.max_length, enc.window_overlap, enc.label_mode)
        windows = encoder.encode([s.words for s in train], [s.tags for s in train])
        tc = config.training
        batches = WindowBatches(encoder, windows, tc.batch_size, seed=tc.seed)
        loss_fn = make_token_loss(config.loss, len(labels), (i for w in windows for i in w.labels))

        reports: list[EvaluationReport] = []

        def evaluate_dev() -> dict[str, float]:
            tagger = scoring_tagger(model, tokenizer, enc.max_length, enc.window_overlap)
            predicted = tagger.predict_words([s.words for s in dev], reporter.cancel)
            reports.append(score_tags([s.tags for s in dev], [p.tags for p in predicted]))
            return reports[-1].metrics()

        trainer = Trainer({"model": model}, TokenClassificationObjective(model, loss_fn), batches, tc,
                          evaluate=evaluate_dev if dev else None, checkpoint_dir=ckpt, resume=resume,
                          fingerprint=_fingerprint(config, data), check=reporter.check)
        result = trainer.run(reporter)

        report = None
        if dev:
            report = next((r for r in reports if r.metrics() == result.best_metrics), None)
            if report is None:  # the best evaluation happened before a resume
                reporter.stage("evaluate", message="scoring the selected weights on devel")
                evaluate_dev()
                report = reports[-1]
            report.source = {"model": name, "file": str(config.dev_file)}

        reporter.stage("save", message=f"registering {name}")
        manifest = Manifest(kind="teacher", base_model=str(config.base_model), labels=labels,
                            config=config.to_dict(), training_data=data,
                            metrics=report.to_dict() if report else {},
                            training={"steps": result.steps, "total_steps": result.total_steps,
                                      "best_step": result.best_step, "stopped_early": result.stopped_early,
                                      "epoch_seconds": result.epoch_seconds, "seconds": result.seconds,
                                      "resumed_from": result.resumed_from, "history": result.history},
                            created=now_iso(),
                            **{k: v for k, v in model_shape(model).items()})
        with registry.staging() as folder:
            save_model(model.to("cpu"), tokenizer, folder)
            write_manifest(folder, manifest)
            reporter.check()  # a cancel now still leaves nothing registered
            entry = registry.install(folder, name, overwrite=overwrite)
        clear_checkpoints(ckpt)
        return TeacherResult(entry, report, result)

    return run_job(job, on_event, cancel)
