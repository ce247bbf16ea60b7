"""Continue training a tagger on a curator's reviewed documents (``fastbioner
fine-tune``), with the shared training loop (:mod:`fastbioner.train.training`).

``fine_tune(model, config, name, on_event=..., cancel=...)`` is a job: a cancelled
or failed run registers nothing. What it decides:

- The label set: the starting model's labels plus rows for any type the reviewed
  documents add (appended: the old rows keep their weights; a CRF's transitions
  grow with zeros). With ``drop_other_labels`` it is the reviewed types alone (their
  rows copied from the model where it had them).
- What each word learns (a soft target per word, one cross-entropy): a word inside a
  reviewed entity learns its tag. Any other word learns that it is *not* one of the
  reviewed types, and, for the model's other types, what the starting model said:
  its distribution with the reviewed types' mass removed and renormalised. So a
  Disease-only review corrects Disease and keeps Chemical as it was (self-
  distillation on the same text). A CRF model learns the most likely tag of that
  target through its own likelihood.
- Early stopping and the before/after figures: on ``dev_file``, else on the held-back
  reviewed documents (:mod:`fastbioner.train.review_split`: fixed by their text,
  remembered in the manifest and the ``split_file``, never sharing an id or a text
  with a trained one), scored on the reviewed types only (the model's other types
  are not the reviewer's).
- Never worse: the start and the result are compared document by document with a
  paired bootstrap; a result worse beyond doubt raises :class:`WorseModel` and
  registers nothing, unless ``keep_worse``.
- What an update keeps: every word's target mixes in the starting model's own
  distribution with weight ``distill_docs / (distill_docs + N)`` (N trained
  documents), ``l2sp`` pulls the weights toward the starting ones, and ``lr_docs``
  scales the rate down for few documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
from torch import nn

from fastbioner.base import threads
from fastbioner.models import packing

from fastbioner.train import runs
from fastbioner.models.encoding import IGNORE_INDEX, WindowBatches, WordEncoder
from fastbioner.base.errors import FastBioNERError, InputError, ModelError
from fastbioner.infer.evaluation import EvaluationReport, score_tags
from fastbioner.train.finetune_config import FineTuneConfig
from fastbioner.train import review_split
from fastbioner.train.review_split import Comparison, Memory
from fastbioner.io.formats import read_tagged_files
from fastbioner.infer.inference import position_limit, read_labels, scoring_tagger
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.labels import TaggedSentence, bio_labels, entity_types, from_iob2, split_tag
from fastbioner.models.loading import model_kind
from fastbioner.models.modeling import load_token_classifier, load_tokenizer, model_shape, pick_device, tagger_labels
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.models.manifest import Manifest, now_iso
from fastbioner.train.training import Trainer, TrainingResult, seed_everything

# students imports transformers: imported when layers are frozen, which only a transformer needs.


@dataclass
class FineTuneResult:
    entry: ModelEntry
    training: TrainingResult
    labels: list[str]                     # the new model's labels
    added_labels: list[str]               # labels the starting model did not have
    kept_types: list[str]                 # the model's types kept by self-distillation
    reviewed_types: list[str]
    documents: int                        # reviewed documents trained on
    held_back: int                        # of the reviewed documents, held back (0: see dev_source)
    dev_source: str                       # "dev file NAME", "N held-back documents" or "none"
    before: EvaluationReport | None = None  # the starting model on the dev/held-back slice
    after: EvaluationReport | None = None   # the new model on the same
    notes: list[str] = field(default_factory=list)
    comparison: Comparison | None = None    # before and after per document, with its bootstrap interval
    distil_weight: float = 0.0              # the starting model's share of each word's target


def _key(label_type: str) -> str:
    return re.sub(r"[\s_\-]+", "", label_type).lower()


def check_label_clash(reviewed: Sequence[str], model_types: Sequence[str], where: str) -> None:
    """A reviewed type that differs from one of the model's only in case, spaces,
    hyphens or underscores (``disease`` against ``Disease``) is almost surely the same
    type misspelt: refused, as training it would add a second, competing type."""
    ours = {_key(t): t for t in model_types}
    for t in reviewed:
        if t == "O" or re.match(r"^[BIESLU]-", t):
            raise InputError(f"entity type {t!r} looks like a tag, not a type (a type is named without B-/I- "
                             f"and is never 'O'); rename it (fastbioner convert --map-label {t}=NAME)", where)
        theirs = ours.get(_key(t))
        if theirs is not None and theirs != t:
            raise InputError(f"entity type {t!r} clashes with the model's {theirs!r} (they differ only in "
                             f"spelling); rename it (fastbioner convert --map-label {t}={theirs}) or "
                             f"name it differently", where)


def _head(model) -> nn.Linear | None:
    head = getattr(model, "classifier", None)
    if head is None and getattr(model, "net", None) is not None:
        head = getattr(model.net, "classifier", None)
    return head if isinstance(head, nn.Linear) else None


def _crf(model):
    crf = getattr(model, "crf", None)
    return crf if isinstance(crf, nn.Module) else None


@torch.no_grad()
def relabel_head(model, old: list[str], new: list[str]) -> None:
    """Give ``model`` a head for ``new`` labels: a label it had keeps its row (weights,
    bias, CRF start/end/transitions), a new one gets a fresh row (small random
    weights, zero bias, zero transitions)."""
    if old == new:
        return
    head = _head(model)
    if head is None:
        raise ModelError("this model's tagging head cannot be resized (not a linear layer); fine-tune it "
                         "on its own labels, or train a new model with train-teacher")
    std = float(getattr(model.config, "initializer_range", 0.02) or 0.02)
    rows = [old.index(l) if l in old else -1 for l in new]
    weight = torch.empty(len(new), head.in_features).normal_(0.0, std)
    bias = torch.zeros(len(new))
    for r, src in enumerate(rows):
        if src >= 0:
            weight[r] = head.weight[src]
            bias[r] = head.bias[src]
    grown = nn.Linear(head.in_features, len(new)).to(head.weight.device)
    grown.weight.copy_(weight)
    grown.bias.copy_(bias)
    if getattr(model, "classifier", None) is head:
        model.classifier = grown
    else:
        model.net.classifier = grown
    crf = _crf(model)
    if crf is not None:
        index = torch.tensor([max(s, 0) for s in rows])
        known = torch.tensor([s >= 0 for s in rows])
        crf.start.data = torch.where(known, crf.start.data[index], 0.0)
        crf.end.data = torch.where(known, crf.end.data[index], 0.0)
        both = known[:, None] & known[None, :]
        crf.transitions.data = torch.where(both, crf.transitions.data[index][:, index], 0.0)
        crf.num_tags = len(new)
    model.config.num_labels = len(new)
    model.config.id2label = dict(enumerate(new))
    model.config.label2id = {l: i for i, l in enumerate(new)}


def freeze_lower_layers(model, layers: int) -> None:
    """Embeddings and the lowest ``layers`` transformer layers stop learning."""
    if layers <= 0:
        return
    from fastbioner.train.distill.students import layer_list

    try:
        _, _, stack = layer_list(model)
    except Exception:
        raise ModelError("--freeze-layers: this model has no transformer layers to freeze") from None
    if layers > len(stack):
        raise ModelError(f"--freeze-layers {layers}: the model has only {len(stack)} layers")
    model.get_input_embeddings().requires_grad_(False)
    for block in list(stack)[:layers]:
        block.requires_grad_(False)


@torch.no_grad()
def start_probabilities(model, encoder: WordEncoder, windows, batch_size: int, device,
                        cancel: CancelToken | None) -> list[np.ndarray]:
    """The starting model's label distribution at each labelled position of each
    window (in position order), computed once before training."""
    model.eval()
    out: list[np.ndarray] = [np.zeros((0, 0), np.float32)] * len(windows)
    order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
    for b in range(0, len(order), batch_size):
        if cancel is not None:
            cancel.check()
        idx = order[b:b + batch_size]
        batch = encoder.collate([windows[i] for i in idx], idx).to(device)
        probs = model(**batch.model_inputs()).logits.float().softmax(-1)
        for r, i in enumerate(idx):
            keep = batch.gold[r] != IGNORE_INDEX
            out[i] = probs[r][keep].cpu().numpy()
    return out


def soft_targets(windows, labels: list[str], reviewed: set[str], old_labels: list[str],
                 old_probs: list[np.ndarray] | None) -> list[torch.Tensor]:
    """Per window, a target distribution over ``labels`` at each labelled position:
    a word inside a reviewed entity, its tag; any other word, the starting model's
    distribution over its labels of unreviewed types (and O), renormalised, or O
    alone when nothing is kept (``old_probs`` None)."""
    o = labels.index("O")
    unreviewed = [j for j, l in enumerate(labels) if l == "O" or split_tag(l)[1] not in reviewed]
    old_cols = [old_labels.index(labels[j]) if labels[j] in old_labels else -1 for j in unreviewed]
    out = []
    for w, window in enumerate(windows):
        gold = np.array([l for l in window.labels if l != IGNORE_INDEX], dtype=np.int64)
        target = np.zeros((len(gold), len(labels)), dtype=np.float32)
        outside = gold == o
        target[~outside, gold[~outside]] = 1.0
        if old_probs is None:
            target[outside, o] = 1.0
        else:
            rows = old_probs[w][outside]
            kept = np.stack([rows[:, c] if c >= 0 else np.zeros(len(rows), np.float32) for c in old_cols], 1) \
                if len(rows) else np.zeros((0, len(unreviewed)), np.float32)
            total = kept.sum(1, keepdims=True)
            # The starting model sure of a reviewed type where the reviewer says none: O.
            fallback = np.zeros_like(kept)
            fallback[:, unreviewed.index(o)] = 1.0
            kept = np.where(total > 1e-6, kept / np.maximum(total, 1e-6), fallback)
            block = np.zeros((len(rows), len(labels)), np.float32)
            block[:, unreviewed] = kept
            target[outside] = block
        out.append(torch.from_numpy(target))
    return out


class ReviewObjective:
    """Cross-entropy against the per-word soft targets (a CRF model: its likelihood of
    the targets' most likely tags), plus ``l2sp`` times the squared distance of the
    weights from the starting ones (L2-SP: every weight the start had, the resized
    head's rows excepted)."""

    def __init__(self, model, targets: list[torch.Tensor], l2sp: float = 0.0):
        self.model = model
        self.targets = targets
        self.crf = getattr(model, "gold_loss", None) is not None and _crf(model) is not None
        self.l2sp = l2sp
        self.anchor: list[tuple[nn.Parameter, torch.Tensor]] = []

    def anchor_to(self, start: dict[str, torch.Tensor]) -> None:
        """Remember the starting weights (call after the head is resized: ``start`` is
        the state before, so a resized head's parameters are left free)."""
        if self.l2sp <= 0:
            return
        for key, param in self.model.named_parameters():
            old = start.get(key)
            if param.requires_grad and old is not None and old.shape == param.shape and param.is_floating_point():
                self.anchor.append((param, old.detach().clone().to(param.device, torch.float32)))

    def __call__(self, batch, step: int, total_steps: int):
        logits = self.model(**batch.model_inputs()).logits
        target = torch.cat([self.targets[i] for i in batch.indices]).to(logits.device)
        mask = batch.labels != IGNORE_INDEX
        if self.crf:
            labels = batch.labels.clone()
            labels[mask] = target.argmax(-1)
            loss = self.model.gold_loss(logits, labels)
        else:
            loss = -(target * logits[mask].float().log_softmax(-1)).sum(-1).mean()
        parts = {"loss": float(loss.detach())}
        if self.anchor:
            penalty = torch.stack([((p.float() - p0) ** 2).sum() for p, p0 in self.anchor]).sum()
            loss = loss + self.l2sp * penalty
            parts["l2sp"] = float(penalty.detach())
        return loss, parts


def distil_everywhere(targets: list[torch.Tensor], old_probs: list[np.ndarray], labels: list[str],
                      old_labels: list[str], weight: float) -> list[torch.Tensor]:
    """Each word's target mixed with the starting model's own distribution (over the
    new labels; a label it lacked gets none): ``(1 - weight) * target + weight * start``.
    Every type is distilled, the reviewed ones too, so a few reviews move the model
    only as far as they outweigh what it knew."""
    if weight <= 0:
        return targets
    cols = [old_labels.index(l) if l in old_labels else -1 for l in labels]
    out = []
    for target, probs in zip(targets, old_probs):
        start = np.zeros((len(probs), len(labels)), np.float32)
        for j, c in enumerate(cols):
            if c >= 0:
                start[:, j] = probs[:, c]
        out.append((1 - weight) * target + weight * torch.from_numpy(start))
    return out


def distil_weight(docs_per_half: float, trained_documents: int) -> float:
    """The starting model's share of each target: ``K / (K + N)`` for ``N`` trained
    documents (``K`` = ``docs_per_half``: with K documents, half each); 0 when K is 0."""
    if docs_per_half <= 0:
        return 0.0
    return docs_per_half / (docs_per_half + max(trained_documents, 0))


def _scheme_tags(sentences: Sequence[TaggedSentence], scheme: str) -> list[list[str]]:
    return [list(s.tags) if scheme == "IOB2" else from_iob2(list(s.tags), scheme) for s in sentences]


@dataclass
class Scored:
    report: EvaluationReport
    counts: np.ndarray   # per document: true positives, false positives, false negatives


def score_reviewed(model, tokenizer, encoding: dict, sentences: Sequence[TaggedSentence], reviewed: set[str],
                   documents, cancel) -> Scored:
    """Scores on ``sentences`` counting only the reviewed types (the model's other
    types are read as O: the reviewer did not annotate them), overall and per document."""
    tagger = scoring_tagger(model, tokenizer, encoding.get("max_length", 256), encoding.get("window_overlap", 32),
                            encoding.get("context", "sentence"))
    predicted = tagger.predict_words([s.words for s in sentences], cancel, documents=documents)
    gold = [review_split.reviewed_only(s.tags, reviewed) for s in sentences]
    tags = [review_split.reviewed_only(p.tags, reviewed) for p in predicted]
    counts = review_split.document_counts(gold, tags, review_split.units(sentences), reviewed)
    return Scored(score_tags(gold, tags), counts)


def _distinct_files(files: Sequence[str]) -> tuple[list[str], list[str]]:
    """The input files, each once (the same file named twice, by any path or link)."""
    seen: list[tuple[int, int]] = []
    out, notes = [], []
    for f in files:
        try:
            st = Path(f).stat()
            key = (st.st_dev, st.st_ino)
        except OSError:
            out.append(f)  # reading it says what is wrong
            continue
        if key in seen:
            notes.append(f"{Path(f).name} given twice: read once")
            continue
        seen.append(key)
        out.append(f)
    return out, notes


class WorseModel(FastBioNERError):
    """The update scored worse than its start, beyond doubt: not registered."""

    def __init__(self, comparison: Comparison, name: str):
        self.comparison = comparison
        super().__init__(f"{name} not registered: it is worse than the model it started from. "
                         f"{comparison.line()}; fine-tune --keep-worse registers it anyway")


def _check_documents(dev: list[TaggedSentence], reviewed_sentences: list[TaggedSentence], settings: FineTuneConfig,
                     memory: Memory):
    """(train, check, documents, held back, memory after, source words, notes)."""
    if dev:
        train_docs, notes = review_split.documents(reviewed_sentences)
        train = [reviewed_sentences[i] for d in train_docs for u in d.units for i in u]
        train, dropped = review_split.drop_shared(train, dev)
        trained = len(review_split.units(train)) if dropped else len(train_docs)  # the documents left
        return train, dev, trained, 0, memory, f"dev file {Path(settings.dev_file or '').name}", notes + dropped
    split = review_split.split_reviews(reviewed_sentences, settings.holdout_share, settings.holdout_min, memory)
    return split.train, split.held, split.documents, split.held_back, split.memory, "your documents", split.notes


def _where(source: str, documents: int, mentions: int, held: int) -> str:
    """"10 of your documents (96 mentions)", "dev file devel.tsv (100 documents, 787 mentions)"."""
    if held:
        return f"{held} of your documents ({mentions} mention{'s' if mentions != 1 else ''})"
    return f"{source} ({documents} documents, {mentions} mention{'s' if mentions != 1 else ''})"


def fine_tune(model_ref: str, config: FineTuneConfig, name: str, *, registry: Registry | None = None,
              overwrite: bool = False, on_event: Optional[EventCallback] = None,
              cancel: Optional[CancelToken] = None) -> FineTuneResult:
    """Continue training ``model_ref`` (registry name or folder) on ``config.train_files``
    and register the result as ``name``; raises :class:`WorseModel` (nothing registered)
    when the result is worse than the start beyond doubt, unless ``config.keep_worse``."""
    config.validate()
    registry = registry or Registry()
    ckpt = runs.claim_run(registry, name, overwrite=overwrite, resume=False, restart=True)

    def job(reporter: ProgressReporter) -> FineTuneResult:
        reporter.stage("prepare", message="reading the reviewed documents")
        where = config.train_files[0]
        files, notes = _distinct_files(config.train_files)
        reviewed_sentences = read_tagged_files(files)
        reviewed = entity_types(t for s in reviewed_sentences for t in s.tags)
        if not reviewed:
            raise InputError("no entities in the reviewed documents: nothing to learn from", where)
        dev = read_tagged_files([config.dev_file]) if config.dev_file else []

        entry = registry.resolve(model_ref)
        folder = Path(entry.path)
        if tagger_labels(folder) is None:
            raise ModelError(f"{model_ref}: not a trained tagger (no tagging head); fine-tune a model made by "
                             f"train-teacher, distill or shipped with fastbioner")
        settings = config.for_model(model_kind(folder))  # the learning rate, when open, by kind
        # A shipped or exported folder is named by its manifest (the folder's own name
        # is "default-model"); a registered model by its registry name.
        start_name = entry.name if entry.registered else (entry.manifest.name or entry.name)
        check_label_clash(reviewed, [], where)  # a type named like a tag, before any model is read
        reporter.emit(message=f"loading {start_name}")
        model = load_token_classifier(folder)
        tokenizer = load_tokenizer(folder)
        old_labels, scheme = read_labels(model, str(model_ref))
        old_types = entity_types(old_labels)
        check_label_clash(reviewed, old_types, where)
        if settings.drop_other_labels:
            labels = bio_labels(reviewed, scheme)
            kept_types: list[str] = []
        else:
            labels = old_labels + [l for l in bio_labels(reviewed, scheme) if l not in old_labels]
            kept_types = [t for t in old_types if t not in reviewed]
        added = [l for l in labels if l not in old_labels]
        encoding = dict((entry.manifest.config or {}).get("encoding") or {})
        enc_max = min(int(encoding.get("max_length", 256)), position_limit(model))
        encoding.update(max_length=enc_max)
        context = encoding.get("context", "sentence")

        tc = settings.training
        seed_everything(tc.seed)
        if context != "sentence" and all(s.doc_id is None for s in [*reviewed_sentences, *dev]):
            # The model was trained reading whole documents, but these files mark none
            # (a BIO .tsv): read them sentence by sentence, as the tagger reads such a
            # file, rather than refuse a curator's reviewed sentences.
            # The saved model keeps its documents' setting: it still tags whole documents.
            context = "sentence"
            notes.append(f"{start_name} reads whole documents, but the reviewed file(s) mark none (no -DOCSTART- "
                         "lines): trained and scored sentence by sentence; convert PubTator or BioC with "
                         "`fastbioner convert` to keep the documents")
        # What earlier updates of this model (its manifest) and of this project (the
        # split file) held back and trained on: never redrawn.
        memory = Memory.from_dict((entry.manifest.config or {}).get("review_split"))
        if settings.split_file:
            memory = memory.merged(review_split.read_split_file(settings.split_file))
        train, check_sentences, n_docs, n_held, memory, source, split_notes = _check_documents(
            dev, reviewed_sentences, settings, memory)
        notes += split_notes
        dev_source = f"{n_held} held-back document(s)" if n_held else (source if dev else "none")
        if not check_sentences:
            notes.append(f"{n_docs} reviewed document(s), fewer than {2 * settings.holdout_min}: none held "
                         f"back, so no early stopping and no before/after scores (all {tc.epochs} "
                         f"epoch(s) run; pass --dev to score)")
        if settings.split_file:
            review_split.write_split_file(settings.split_file, memory)
        check_docs = runs.document_keys(check_sentences, context, where) if check_sentences else None

        before = None
        if check_sentences:
            reporter.stage("evaluate", message="scoring the starting model")
            before = score_reviewed(model, tokenizer, encoding, check_sentences, set(reviewed), check_docs,
                                    reporter.cancel)

        # Windows are encoded against the new labels; targets of the old labels come
        # from the starting model, read before its head changes.
        encoder = WordEncoder(tokenizer, labels, enc_max, encoding.get("window_overlap", 32), "first")
        tags = _scheme_tags(train, scheme)
        windows, _, _ = packing.encode(encoder, context, [s.words for s in train], tags,
                                       runs.document_keys(train, context, where))
        if not windows:
            raise InputError("no reviewed sentences left to train on", where)
        device = pick_device(tc.device)
        # 0: the cores less what other work keeps busy
        torch.set_num_threads(threads.choose(tc.threads or None).threads)
        weight = distil_weight(settings.distill_docs, n_docs - n_held)
        if settings.lr_docs > 0 and n_docs - n_held < settings.lr_docs:
            # few documents, a small step: the rate scaled by the share of K documents they are
            tc = replace(tc, learning_rate=tc.learning_rate * (n_docs - n_held) / settings.lr_docs)
            settings = replace(settings, training=tc)
            notes.append(f"learning rate {tc.learning_rate:.2g}: {n_docs - n_held} trained documents, fewer than "
                         f"{settings.lr_docs:g} (--lr-docs)")
        old_probs = None
        if kept_types or weight > 0:
            reporter.stage("prepare", message="reading the starting model's predictions")
            model.to(device)
            old_probs = start_probabilities(model, encoder, windows, tc.eval_batch_size, device, reporter.cancel)
        targets = soft_targets(windows, labels, set(reviewed), old_labels, old_probs if kept_types else None)
        if old_probs is not None:
            targets = distil_everywhere(targets, old_probs, labels, old_labels, weight)
        start_state = {k: v.detach().clone() for k, v in model.state_dict().items()} if settings.l2sp > 0 else {}
        relabel_head(model, old_labels, labels)
        freeze_lower_layers(model, settings.freeze_layers)
        objective = ReviewObjective(model, targets, settings.l2sp)
        objective.anchor_to(start_state)
        del start_state

        reports: list[Scored] = []

        def evaluate() -> dict[str, float]:
            reports.append(score_reviewed(model, tokenizer, encoding, check_sentences, set(reviewed),
                                          check_docs, reporter.cancel))
            return reports[-1].report.metrics()

        batches = WindowBatches(encoder, windows, tc.batch_size, seed=tc.seed)
        data = runs.data_records(files, settings.dev_file)
        trainer = Trainer({"model": model}, objective, batches, tc,
                          evaluate=evaluate if check_sentences else None, checkpoint_dir=None,
                          check=reporter.check)
        result = trainer.run(reporter)
        after: Scored | None = None
        comparison = None
        if check_sentences and before is not None:
            if tc.keep_weights == "last":  # the last scoring, if it was of the final weights
                final = bool(reports) and bool(result.history) and result.history[-1]["step"] == result.steps
                after = reports[-1] if final else None
            else:
                after = next((r for r in reports if r.report.metrics() == result.best_metrics), None)
            if after is None:
                after = score_reviewed(model, tokenizer, encoding, check_sentences, set(reviewed), check_docs,
                                       reporter.cancel)
            for report in (before.report, after.report):
                report.source = {"model": name, "file": dev_source}
            mentions = int(before.counts[:, 0].sum() + before.counts[:, 2].sum())
            comparison = review_split.compare(before.counts, after.counts,
                                              _where(source, len(before.counts), mentions, n_held))
            if comparison.worse and not settings.keep_worse:
                raise WorseModel(comparison, name)
            if comparison.worse:
                notes.append(f"kept although worse (--keep-worse): {comparison.interval()}")
        before_report = before.report if before else None
        after_report = after.report if after else None

        def manifest_for(folder_: Path) -> Manifest:
            start = entry.manifest
            cfg = {**runs.manifest_config(settings), "encoding": encoding, "fine_tuned_from": start_name,
                   "starting_labels": old_labels, "reviewed_types": reviewed, "kept_types": kept_types,
                   "distil_weight": weight, "review_split": memory.to_dict(),
                   "comparison": comparison.to_dict() if comparison else None}
            return Manifest(kind=start.kind or "student", base_model=start_name, labels=labels, config=cfg,
                            training_data=data, metrics=after_report.to_dict() if after_report else {},
                            training=runs.training_record(result, before=before_report.to_dict()
                                                          if before_report else None,
                                                          held_back=n_held, dev_source=dev_source),
                            parent=start.parent, method="fine-tune", created=now_iso(), **model_shape(model))

        installed = runs.install(registry, name, model, tokenizer, manifest_for, overwrite=overwrite,
                                 reporter=reporter, checkpoint=ckpt)
        return FineTuneResult(installed, result, labels, added, kept_types, list(reviewed), n_docs, n_held,
                              dev_source, before_report, after_report, notes, comparison, weight)

    return run_job(job, on_event, cancel)
