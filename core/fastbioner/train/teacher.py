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
from typing import Optional

from fastbioner.base.config import TeacherConfig
from fastbioner.models.encoding import WindowBatches, WordEncoder
from fastbioner.base.errors import InputError, ModelError
from fastbioner.infer.evaluation import EvaluationReport
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.labels import bio_labels, entity_types
from fastbioner.models.losses import make_token_loss
from fastbioner.models.modeling import (
    check_weights,
    is_local_reference,
    load_token_classifier,
    load_tokenizer,
    model_shape,
)
from fastbioner.train import distributed
from fastbioner.models import packing
from fastbioner.train import runs
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.models.manifest import Manifest, now_iso
from fastbioner.io.formats import read_tagged_files
from fastbioner.train.training import Trainer, TrainingResult, seed_everything

# The CRF head's tagger imports transformers' model classes: imported only for a CRF head.


class TokenClassificationObjective:
    """The teacher's objective: a gold-label loss on the model's logits."""

    def __init__(self, model, loss_fn):
        self.model = model
        self.loss_fn = loss_fn

    def use_modules(self, wrapped) -> None:
        """Train through the (DDP-wrapped) model from now on (the Trainer's call)."""
        self.model = wrapped.get("model", self.model)

    def __call__(self, batch, step: int, total_steps: int):
        logits = self.model(**batch.model_inputs()).logits
        loss = self.loss_fn(logits, batch.labels)
        return loss, {"loss": float(loss.detach())}


@dataclass
class TeacherResult:
    entry: ModelEntry | None         # None on the ranks other than 0 of a multi-process run
    report: EvaluationReport | None  # devel scores of the registered weights
    training: TrainingResult


def base_folder(ref: str, registry: Registry) -> str:
    """A registry name's folder (a base encoder `fastbioner transfer-embeddings --register`
    installed, say); a folder or a Hugging Face id as given."""
    if not is_local_reference(ref) and "/" not in ref and registry.exists(ref):
        return str(registry.get(ref).path)
    return ref


def _new_tagger(config: TeacherConfig, labels: list[str], base: str):
    """The base encoder with a fresh tagging head: linear, or linear and a CRF."""
    if config.head == "linear":
        return load_token_classifier(base, labels=labels)
    from fastbioner.models.architectures.transformer_crf import TransformerCRFTagger

    if is_local_reference(base):
        check_weights(base)
    try:
        return TransformerCRFTagger.from_encoder(base, labels)
    except Exception as exc:
        raise ModelError(f"{config.base_model}: cannot load the encoder ({str(exc).splitlines()[0][:200]})") from None


def train_teacher(config: TeacherConfig, name: str, *, registry: Registry | None = None,
                  resume: bool = False, restart: bool = False, overwrite: bool = False,
                  on_event: Optional[EventCallback] = None,
                  cancel: Optional[CancelToken] = None) -> TeacherResult:
    """Fine-tune ``config.base_model`` on ``config.train_files`` and register it as
    ``name``. With a ``dev_file`` the weights of the best devel F1 are kept (and
    early stopping applies); without, those of the last step."""
    config.validate()
    registry = registry or Registry()
    ckpt = runs.claim_run(registry, name, overwrite=overwrite, resume=resume, restart=restart,
                          record=("teacher", config))

    def job(reporter: ProgressReporter) -> TeacherResult:
        reporter.stage("prepare", message="reading the training data")
        train = read_tagged_files(config.train_files)
        dev = read_tagged_files([config.dev_file]) if config.dev_file else []
        labels = bio_labels(entity_types(t for s in train for t in s.tags))
        if len(labels) == 1:
            raise InputError("no entities in the training data", config.train_files[0])
        data = runs.data_records(config.train_files, config.dev_file)
        reporter.emit(message=f"loading {config.base_model}")
        # Seeded before the model is built: its new tagging head is initialised at random,
        # so the same seed gives the same weights.
        seed_everything(config.training.seed)
        base = base_folder(config.base_model, registry)
        tokenizer = load_tokenizer(base)
        model = _new_tagger(config, labels, base)
        enc = config.encoding
        encoder = WordEncoder(tokenizer, labels, enc.max_length, enc.window_overlap, enc.label_mode)
        windows, _, _ = packing.encode(encoder, enc.context, [s.words for s in train], [s.tags for s in train],
                                       runs.document_keys(train, enc.context, config.train_files[0]))
        dev_documents = runs.document_keys(dev, enc.context, config.dev_file) if dev and config.dev_file else None
        tc = config.training
        batches = WindowBatches(encoder, windows, tc.batch_size, seed=tc.seed)
        # A CRF head trains on the likelihood of the word label sequence instead.
        loss_fn = model.gold_loss if config.head == "crf" else \
            make_token_loss(config.loss, len(labels), (i for w in windows for i in w.labels or ()))  # all labelled

        reports: list[EvaluationReport] = []

        def evaluate_dev(bf16: bool = False) -> dict[str, float]:
            reports.append(runs.score_devel(model, tokenizer, enc, dev, dev_documents, reporter.cancel, bf16=bf16))
            return reports[-1].metrics()

        trainer = Trainer({"model": model}, TokenClassificationObjective(model, loss_fn), batches, tc,
                          evaluate=(lambda: evaluate_dev(bf16)) if dev else None, checkpoint_dir=ckpt, resume=resume,
                          fingerprint=runs.fingerprint(config, data), check=reporter.check)
        bf16 = runs.selecting_in_bf16(tc, trainer.device)  # read by evaluate_dev's calls, all after this
        result = trainer.run(reporter)

        if not distributed.is_main():  # rank 0 alone scores and registers
            return TeacherResult(None, None, result)
        report = None
        if dev:
            assert config.dev_file is not None  # dev holds its sentences

            def rescore() -> EvaluationReport:
                evaluate_dev()
                return reports[-1]
            report = runs.selected_report([] if bf16 else reports, result, rescore, reporter,
                                          {"model": name, "file": Path(config.dev_file).name})

        def manifest_for(folder: Path) -> Manifest:
            return Manifest(kind="teacher", base_model=str(config.base_model), labels=labels,
                            config=runs.manifest_config(config), training_data=data,
                            metrics=report.to_dict() if report else {},
                            training=runs.training_record(result), created=now_iso(), **model_shape(model))

        entry = runs.install(registry, name, model, tokenizer, manifest_for, overwrite=overwrite,
                             reporter=reporter, checkpoint=ckpt)
        return TeacherResult(entry, report, result)

    return run_job(job, on_event, cancel)
