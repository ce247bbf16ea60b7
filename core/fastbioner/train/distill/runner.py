"""The distillation job: a teacher from the registry, a student, a method, the
shared training loop, and a registered student with its compression figures.

``distill(config, name, on_event=..., cancel=...)`` follows the job protocol: a
cancelled or failed run registers nothing (the model is built in a registry staging
folder and renamed into place only when complete), checkpoints live in the
registry's ``.checkpoints/<name>`` until then so ``resume=True`` continues, and a
disk teacher cache is deleted however the job ends.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from fastbioner.train.checkpoints import has_checkpoint
from fastbioner.models.encoding import WordEncoder
from fastbioner.base import threads
from fastbioner.base.errors import InputError, ModelError
from fastbioner.io.fileio import atomic_write
from fastbioner.infer.evaluation import EvaluationReport
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.labels import TaggedSentence
from fastbioner.models.losses import make_token_loss
from fastbioner.models.modeling import (
    load_token_classifier,
    load_tokenizer,
    model_labels,
    model_shape,
    pick_device,
    tagger_labels,
)
from fastbioner.models.folder import folder_size, safetensors_files
from fastbioner.train import distributed
from fastbioner.train import runs
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.models.shipped import model_entry
from fastbioner.models.manifest import Manifest, now_iso
from fastbioner.io.formats import read_tagged_files
from fastbioner.train.training import Trainer, TrainingResult, diverged_at, move_to, seed_everything
from fastbioner.train.distill.alignment import SubwordAligner, same_vocabulary
from fastbioner.train.distill.augment import replace_mentions
from fastbioner.train.distill.calibration import Calibration, calibrate, fit_projections
from fastbioner.train.distill.capture import prepare_for_capture
from fastbioner.train.distill.config import (
    DistillConfig,
    StudentConfig,
)
from fastbioner.train.distill.data import EncodedData, PairedBatches, UnlabeledText, encode, read_unlabeled
from fastbioner.train.distill.ensemble import TeacherEnsemble, load_logits, logits_key, save_logits, word_logits
from fastbioner.train.distill.methods import TOKEN_LEVEL_TERMS, Method
from fastbioner.train.distill.objective import DistillationObjective, ObjectiveParts
from fastbioner.models.architectures.convolutional import ConvTagger
from fastbioner.models.architectures.recurrent import RecurrentTagger
from fastbioner.train.distill.students import (
    convolutional_student, copy_head, freeze, hidden_width, order_head, parameter_count, projection_for,
    recurrent_student, same_labels, student_from_teacher, truncate_layers, uniform_layer_map,
)
from fastbioner.train.distill.teacher_cache import (
    SHARED_CACHE_FOLDER, LiveTeacher, TeacherCache, shared_cache_key, teacher_needs,
)


@dataclass
class DistillResult:
    entry: ModelEntry | None              # None on the ranks other than 0 of a multi-process run
    report: EvaluationReport | None       # devel scores of the registered weights
    training: TrainingResult
    compression: dict[str, Any]
    teacher_cache: dict[str, Any]
    notes: list[str]
    # The live teacher's calls (--teacher-cache none) as (time.monotonic() at the start,
    # seconds): for a run-time estimate, which takes them out of its measured steps; not
    # saved with the model.
    teacher_calls: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class BuiltStudent:
    model: torch.nn.Module
    tokenizer: Any
    mapping: list[int]       # teacher layer (1-based) of each student layer
    base: str                # what it was built from, for the manifest


def build_student(cfg: StudentConfig, teacher, teacher_tokenizer, labels: Sequence[str],
                  registry: Registry) -> BuiltStudent:
    m = teacher.config.num_hidden_layers
    if cfg.source == "teacher":
        if cfg.layers is None:
            raise ValueError("a student cut from the teacher needs its number of layers")
        student = student_from_teacher(teacher, cfg.layers)
        return BuiltStudent(student, teacher_tokenizer, uniform_layer_map(m, cfg.layers),
                            f"teacher layers {uniform_layer_map(m, cfg.layers)}")
    if cfg.small:
        embeddings_from, tokenizer, where = None, teacher_tokenizer, "the teacher's embeddings"
        if cfg.embeddings != "teacher":
            ref = model_path(cfg.embeddings, registry)
            embeddings_from, tokenizer, where = load_token_classifier(ref), load_tokenizer(ref), cfg.embeddings
        crf = "+CRF" if cfg.crf else ""
        if cfg.convolutional:
            student = convolutional_student(teacher, cfg.conv_width, cfg.conv_layers, cfg.conv_kernel, cfg.crf,
                                            cfg.dropout, embeddings_from)
            shape = f"cnn {cfg.conv_layers}x{cfg.conv_width} (window {cfg.conv_kernel})"
            # Its blocks' outputs stand for layers: matched to the teacher's as a
            # transformer student's are (hidden terms only; it has no attention).
            mapping = uniform_layer_map(m, cfg.conv_layers)
        else:
            student = recurrent_student(teacher, cfg.rnn_hidden, cfg.rnn_layers, cfg.source[2:],
                                        cfg.crf, cfg.dropout, embeddings_from)
            shape, mapping = cfg.source, []
        return BuiltStudent(student, tokenizer, mapping, f"{shape}{crf} over {where}")
    ref = model_path(cfg.source, registry)
    own = tagger_labels(ref)
    # A tagger already trained for these labels (a registered student refined further,
    # a MiniLM fine-tuned on the corpus) keeps its own head; a base encoder, or a tagger
    # of other labels, gets a fresh one and then the teacher's when the widths match.
    keeps_head = own is not None and sorted(own) == sorted(labels)
    if keeps_head:
        student = load_token_classifier(ref)
        order_head(student, list(labels))
    else:
        student = load_token_classifier(ref, labels=list(labels))
    if cfg.layers is not None:
        truncate_layers(student, cfg.layers)
    if not keeps_head:
        copy_head(student, teacher)
    n = student.config.num_hidden_layers
    return BuiltStudent(student, load_tokenizer(ref), uniform_layer_map(m, n),
                        f"{cfg.source} ({n} layers{', its own tagging head' if keeps_head else ''})")


def model_path(ref: str, registry: Registry) -> str:
    """A registry name's folder; anything else (a folder, a hub id) as it is."""
    with contextlib.suppress(ModelError):
        return str(registry.resolve(ref).path)
    return ref


def usable_method(method: Method, student: BuiltStudent, notes: list[str]) -> Method:
    """Drop the terms this student cannot have: a recurrent student has no layers to
    match; a convolutional one has blocks whose outputs match the teacher's hidden
    states (through W_h), but no attention and no embedding output of the teacher's
    kind. (Another tokenizer is checked per batch instead: MiniLM and MPNet share
    their wordpieces.)"""
    if isinstance(student.model, (RecurrentTagger, ConvTagger)):
        kept = ("hidden", "hidden-norm") if isinstance(student.model, ConvTagger) else ()
        dropped = [t.name for t in method.terms if t.name in TOKEN_LEVEL_TERMS and t.name not in kept]
        if dropped:
            what = "no attention or embedding output to match" if kept else "no transformer layers"
            notes.append(f"{type(student.model).__name__}: {what}, so {', '.join(dropped)} term(s) dropped")
            method = replace(method, terms=tuple(t for t in method.terms if t.name not in dropped))
            method.check_learnable()
    return method


def resolved_config(config: DistillConfig, method: Method) -> DistillConfig:
    """The config with every method setting it left to the method filled in, as the
    run used it (the manifest's copy): schedule, b, alpha, temperature, calibration,
    attention form, W_h's rate."""
    mc = config.method
    resolved = replace(mc, schedule=method.schedule.name, b=method.schedule.b, alpha=method.schedule.alpha,
                       temperature=method.temperature, calibrate=method.calibrate, attention=method.attention,
                       projection_lr=mc.projection_lr or config.training.learning_rate)
    return replace(config, method=resolved)


def _teacher_source(config: DistillConfig, method: Method, built: BuiltStudent, teacher, teacher_path: Path,
                    data: EncodedData, registry: Registry, device: torch.device, reporter: ProgressReporter,
                    cleanup: contextlib.ExitStack, notes: list[str], soft_from_ensemble: bool = False):
    needs = teacher_needs(method, built.mapping, built.model, teacher, method.capture_kind)
    if not method.reads_teacher(soft_from_ensemble):
        # og, or soft labels from several teachers combined with nothing else read from
        # the first: no pass over the training text to cache (a packed MPNet teacher's
        # over the default model's text took one core 29 minutes).
        return None, {"mode": "unused"}
    mode = config.teacher_cache
    width = hidden_width(teacher)
    heads = getattr(teacher.config, "num_attention_heads", 1)
    labels = teacher.config.num_labels
    estimate = TeacherCache.estimate_bytes(data.teacher_windows, needs, labels, width, heads)
    if mode == "none":
        # The size a cache would have had: what `--estimate` (which runs the teacher live) reports.
        return LiveTeacher(teacher, needs), {"mode": "none", "cache_bytes": estimate}
    mode = config.cache_place(estimate)
    folder = None
    info: dict[str, Any] = {"mode": mode}
    if mode == "disk":
        registry.root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".teacher-cache-", dir=registry.root))
        cleanup.callback(shutil.rmtree, folder, True)
    elif mode == "shared":
        key, about = shared_cache_key(safetensors_files(teacher_path), data.teacher_windows, needs,
                                      device.type)
        folder = registry.root / SHARED_CACHE_FOLDER / key
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(folder / "made-from.json") as fh:
            json.dump(about, fh, indent=1)
        info["key"] = key
    cache = TeacherCache(data.teacher_windows, needs, labels, width, heads, folder, shared=mode == "shared")
    cleanup.callback(cache.close)
    cache.check_disk_space()
    cache.fill(teacher.to(device), data.teacher_encoder, data.teacher_windows,
               config.training.eval_batch_size, reporter, device)
    if cache.reused:
        info["reused"] = True
        # Named by its key, not its folder: the note is saved in the model's manifest,
        # which travels to other machines (the folder is the registry's .teacher-cache-shared/KEY).
        notes.append(f"teacher cache (shared): {cache.nbytes / 2**20:.0f} MiB read from the registry's "
                     f"shared cache {info['key']}")
    else:
        notes.append(f"teacher cache ({mode}): {cache.nbytes / 2**20:.0f} MiB built in "
                     f"{cache.build_seconds:.1f} s")
    info["bytes"] = cache.nbytes
    return cache, info


def _cache_figures(source, info: dict[str, Any], epochs_run: float) -> dict[str, Any]:
    """Time the cache saved, estimated as (epochs - 1) teacher passes of the
    cache's own build time minus the time spent reading it."""
    if isinstance(source, TeacherCache) and source.reused:  # built by an earlier run: nothing to weigh
        info.update(fetch_seconds=round(source.fetch_seconds, 2))
    elif isinstance(source, TeacherCache):
        saved = source.build_seconds * (epochs_run - 1) - source.fetch_seconds
        info.update(build_seconds=round(source.build_seconds, 2), fetch_seconds=round(source.fetch_seconds, 2),
                    estimated_saved_seconds=round(saved, 1))
    elif isinstance(source, LiveTeacher):
        # Not rounded: a run-time estimate extrapolates from a few tiny steps, where
        # the teacher's share can be well under 10 ms.
        info.update(teacher_seconds=source.seconds)
    return info


@dataclass
class PreparedRun:
    teacher_entry: ModelEntry
    teacher: torch.nn.Module
    built: BuiltStudent
    labels: list[str]
    method: Method                 # as this student can use it (terms it cannot have dropped)
    data: EncodedData
    data_files: list[dict]
    train: list[TaggedSentence]
    dev: list[TaggedSentence]
    device: torch.device
    source: Any                    # TeacherCache, LiveTeacher or None
    cache_info: dict[str, Any]
    parts: ObjectiveParts
    objective: DistillationObjective


def prepare_run(config: DistillConfig, method: Method, registry: Registry, reporter: ProgressReporter,
                cleanup: contextlib.ExitStack, notes: list[str], keep_in: Path | None = None) -> PreparedRun:
    """Everything a distillation run trains with, built but not trained: the teacher
    and its outputs (cached or live; their clean-up on ``cleanup``), the student, the
    data and the objective. ``distill`` trains it; ``experiments/loss_scales.py``
    measures its loss terms. ``keep_in``: the run's checkpoint folder, where several
    teachers' soft labels are kept for a resumed run."""
    reporter.stage("prepare", message=f"loading the teacher {config.teacher}")
    t_entry = model_entry(config.teacher, registry)  # the shipped default before its first scan too
    teacher = freeze(load_token_classifier(t_entry.path))
    t_tok = load_tokenizer(t_entry.path)
    labels = model_labels(teacher)
    # Seeded before anything random is built (a recurrent student, W_h), so the
    # same seed gives the same student.
    seed_everything(config.training.seed)
    built = build_student(config.student, teacher, t_tok, labels, registry)
    same_labels(built.model, teacher)
    shared = same_vocabulary(built.tokenizer, t_tok)
    run_method = usable_method(method, built, notes)
    for model in (teacher, built.model):
        prepare_for_capture(model, run_method.capture_kind if run_method.uses("attention") else None)

    reporter.emit(message="reading the training data")
    train = read_tagged_files(config.train_files)
    _check_tags(train, labels, config.train_files[0])
    dev = read_tagged_files([config.dev_file]) if config.dev_file else []
    unlabeled = read_unlabeled(config.unlabeled_files, config.unlabeled_limit,
                               config.unlabeled_format) if config.unlabeled_files else UnlabeledText()
    data_files = runs.data_records(config.train_files, config.dev_file, config.unlabeled_files)
    enc = config.encoding
    t_encoder = WordEncoder(t_tok, labels, enc.max_length, enc.window_overlap, enc.label_mode)
    s_encoder = None if shared else WordEncoder(built.tokenizer, labels, enc.max_length,
                                                enc.window_overlap, enc.label_mode)
    # Mention-replaced copies are labelled text too (their tags hold by construction);
    # ``train`` stays the data as given.
    augmented = replace_mentions(train, config.mention_copies, config.mention_rate, config.training.seed)
    labelled = list(train) + augmented
    data = encode(t_encoder, s_encoder, [(s.words, s.tags) for s in labelled], unlabeled,
                  runs.document_keys(labelled, enc.context, config.train_files[0]), enc.context)
    if config.mention_copies:
        notes.append(f"{len(augmented)} mention-replaced training sentences ({config.mention_copies} "
                     f"cop{'y' if config.mention_copies == 1 else 'ies'} of the documents in which a "
                     f"mention was replaced, each mention at {config.mention_rate:g})")
    if unlabeled:
        notes.append(f"{len(unlabeled)} unlabelled sentences with confidence-weighted soft labels")

    device = pick_device(config.training.device)
    # Before the teachers' passes (the cache fill, the ensemble), not only the training's:
    # the rule's count (fastbioner.base.threads) from the first tensor operation on.
    torch.set_num_threads(threads.choose(config.training.threads or None).threads)
    ensemble = None
    if config.extra_teachers and run_method.uses("soft"):
        # Soft labels per word of the sequences the windows index (with packed context a
        # document's sentences joined), so ``Window.sentence`` finds them.
        ensemble = _ensemble(config, run_method, t_entry, teacher, t_tok, labels, data.sequences,
                             registry, device, reporter, notes, keep_in)
    source, cache_info = _teacher_source(config, run_method, built, teacher, t_entry.path, data, registry,
                                         device, reporter, cleanup, notes, soft_from_ensemble=ensemble is not None)
    parts = ObjectiveParts(
        projection_for(built.model, teacher) if run_method.uses("hidden", "hidden-norm") else None,
        projection_for(built.model, teacher) if run_method.uses("embedding") else None)
    # A student with a CRF (recurrent, or a CRF teacher's layers) learns the gold labels as sequences.
    has_crf = getattr(built.model, "crf", None) not in (None, False)
    student: Any = built.model  # a student with a CRF has gold_loss (a method, not a tensor or module)
    gold = student.gold_loss if has_crf else make_token_loss(config.loss, len(labels), data.label_ids)
    objective = DistillationObjective(
        built.model, run_method, source, built.mapping, gold, parts, config.method.scale_by_t2,
        run_method.attention, None if shared else SubwordAligner(t_tok, built.tokenizer), ensemble=ensemble)
    return PreparedRun(t_entry, teacher, built, labels, run_method, data, data_files, train, dev, device,
                       source, cache_info, parts, objective)


def _ensemble(config: DistillConfig, method: Method, t_entry: ModelEntry, teacher, t_tok, labels: Sequence[str],
              words: Sequence[Sequence[str]], registry: Registry, device, reporter: ProgressReporter,
              notes: list[str], keep_in: Path | None = None) -> TeacherEnsemble:
    """Every teacher's word-level soft labels on the training sentences, combined.
    Each teacher's word logits are kept in ``keep_in`` (the run's checkpoint folder)
    and read back by a resumed run made of the same teacher weights and sentences: one
    packed MPNet teacher's pass over the default model's training and unlabelled text
    took one core 29 minutes, which a cancel or a session's end would otherwise cost
    again, for every teacher."""
    enc = config.encoding
    settings = {"labels": list(labels), "max_length": enc.max_length, "overlap": enc.window_overlap}

    def first_teacher():
        return teacher, t_tok

    def extra_teacher(entry: ModelEntry):
        def load():
            model = freeze(load_token_classifier(entry.path))
            if model_labels(model) != list(labels):
                raise ModelError(f"teacher {entry.name} tags {', '.join(model_labels(model))}; the first teacher "
                                 f"tags {', '.join(labels)}: several teachers must share their labels")
            return model, load_tokenizer(entry.path)
        return load

    entries = [(t_entry, first_teacher)] + [(e, extra_teacher(e)) for e in map(registry.resolve,
                                                                               config.extra_teachers)]
    names, logits, kept = [], [], []
    for entry, load in entries:
        key = logits_key(safetensors_files(Path(entry.path)), settings, words)
        stored = keep_in / f"soft-labels-{entry.name}.npz" if keep_in else None
        values = load_logits(stored, key) if stored else None
        if values is None:
            model, tokenizer = load()
            values = word_logits(model, tokenizer, labels, words, enc.max_length, enc.window_overlap,
                                 config.training.eval_batch_size, reporter, device, entry.name)
            if stored and distributed.is_main():
                save_logits(stored, key, values)
            del model
        else:
            kept.append(entry.name)
        names.append(entry.name)
        logits.append(values)
    ensemble = TeacherEnsemble.build(names, logits, method.temperature, config.teacher_combination)
    notes.append(f"soft labels of {len(names)} teachers ({', '.join(names)}) combined by "
                 f"{config.teacher_combination}" + (f"; those of {', '.join(kept)} read back from the run's "
                                                    "checkpoint" if kept else ""))
    return ensemble


def distill(config: DistillConfig, name: str, *, registry: Registry | None = None,
            resume: bool = False, restart: bool = False, overwrite: bool = False,
            on_event: Optional[EventCallback] = None, cancel: Optional[CancelToken] = None) -> DistillResult:
    """Distil ``config.teacher`` into a student registered as ``name``."""
    config.validate()
    method = config.method.to_method()
    registry = registry or Registry()
    ckpt = runs.claim_run(registry, name, overwrite=overwrite, resume=resume, restart=restart,
                          record=("distill", config))

    def job(reporter: ProgressReporter) -> DistillResult:
        notes: list[str] = []
        with contextlib.ExitStack() as cleanup:
            run = prepare_run(config, method, registry, reporter, cleanup, notes, keep_in=ckpt)
            t_entry, teacher, built, labels, run_method = (run.teacher_entry, run.teacher, run.built,
                                                           run.labels, run.method)
            data, data_files, dev, device, source = run.data, run.data_files, run.dev, run.device, run.source
            cache_info, parts, objective = run.cache_info, run.parts, run.objective
            reports: list[EvaluationReport] = []

            bf16 = runs.selecting_in_bf16(config.training, device)

            def evaluate_dev(in_bf16: bool = bf16) -> dict[str, float]:
                reports.append(_score(built, dev, config, reporter, in_bf16))
                return reports[-1].metrics()

            tc = config.training
            live = isinstance(source, LiveTeacher)
            batches = PairedBatches(data, tc.batch_size, tc.seed)
            setup = _start_objective(objective, batches, config, device, ckpt, resume, reporter, notes)
            projection_lr = config.method.projection_lr
            trainer = Trainer({"student": built.model, **parts.modules()}, objective, batches, tc,
                              evaluate=evaluate_dev if dev else None,
                              frozen=[teacher] if live else [], checkpoint_dir=ckpt, resume=resume,
                              fingerprint=runs.fingerprint(config, data_files), check=reporter.check,
                              learning_rates={n: projection_lr for n in parts.modules()} if projection_lr else None)
            result = trainer.run(reporter, stage="distill")
            cache_info = _cache_figures(source, cache_info, result.steps / trainer.steps_per_epoch)
            fell = diverged_at(result.history)
            if fell is not None:
                notes.append(f"training diverged: devel F1 fell below 10% at step {fell} after scoring above "
                             f"50%; the weights kept are step {result.best_step}'s. A lower learning rate "
                             f"(now {tc.learning_rate:g}) should avoid it.")

        if not distributed.is_main():  # rank 0 alone scores and registers
            return DistillResult(None, None, result, {}, cache_info, notes)
        report = None
        if dev:
            assert config.dev_file is not None  # dev holds its sentences
            report = runs.selected_report([] if bf16 else reports, result,
                                          lambda: _score(built, dev, config, reporter, False),
                                          reporter, {"model": name, "file": Path(config.dev_file).name})
        figures: dict[str, Any] = {}

        def manifest_for(folder: Path) -> Manifest:
            figures["compression"] = _compression(built.model, teacher, folder, t_entry)
            return Manifest(
                kind="student", base_model=built.base, labels=list(labels),
                config=runs.manifest_config(resolved_config(config, run_method)), training_data=data_files,
                metrics=report.to_dict() if report else {},
                training=runs.training_record(
                    result, layer_map=built.mapping, terms=list(run_method.term_names),
                    term_weights={t.name: t.coefficient for t in run_method.terms}, **setup,
                    teacher_cache=cache_info, notes=notes,
                    **({"ensemble": objective.ensemble.describe()} if objective.ensemble else {})),
                parent=t_entry.name, method=method.name, compression=figures["compression"], created=now_iso(),
                **model_shape(built.model))

        entry = runs.install(registry, name, built.model, built.tokenizer, manifest_for, overwrite=overwrite,
                             reporter=reporter, checkpoint=ckpt)
        calls = list(source.timed_calls) if isinstance(source, LiveTeacher) else []
        return DistillResult(entry, report, result, figures["compression"], cache_info, notes, calls)

    return run_job(job, on_event, cancel)


def _start_objective(objective: DistillationObjective, batches: PairedBatches, config: DistillConfig,
                     device, ckpt: Path, resume: bool, reporter: ProgressReporter,
                     notes: list[str]) -> dict[str, Any]:
    """Before the first step: fit W_h by least squares and calibrate the matching
    terms, each on the first batches of the first epoch, with the student in eval
    mode (no dropout), so the same seed gives the same start. A resumed run reads
    the calibration its first start saved beside the checkpoints."""
    mc = config.method
    out: dict[str, Any] = {}
    k = mc.calibration_batches
    first = None

    def first_batches():
        nonlocal first
        if first is None:
            first = [move_to(b, device) for _, b in zip(range(k), batches.epoch(0))]
        return first

    student = objective.student.to(device)
    for part in objective.parts.modules().values():
        part.to(device)
    was_training = student.training
    student.eval()
    try:
        if mc.projection_init == "lstsq" and objective.parts.modules() and not (resume and has_checkpoint(ckpt)):
            reporter.emit(message="fitting W_h by least squares")
            fitted = fit_projections(objective, first_batches())
            out["projection_fit_mse"] = {n: round(v, 6) for n, v in fitted.items()}
            notes.append("W_h fitted by least squares on the first batches: "
                         + ", ".join(f"{n} MSE {v:.4f}" for n, v in fitted.items()))
        if objective.method.calibrate != "none":
            saved = Calibration.load(ckpt) if resume else None
            if saved is None:
                reporter.emit(message=f"calibrating the matching terms on {k} batches")
                params = [p for m in (student, *objective.parts.modules().values())
                          for p in m.parameters() if p.requires_grad]
                total = batches_total(batches, config)
                saved = calibrate(objective, first_batches(), params, total, mc.calibration_ratio, mc.term_ratios)
                saved.save(ckpt)
            objective.scales = dict(saved.scales)
            out["calibration"] = saved.to_dict()
            own = "".join(f", {n} x {r:g}" for n, r in saved.ratios.items())
            notes.append("calibrated term scales (weighted gradient norm = the "
                         f"{saved.reference} term's x {saved.ratio:g}{own}): "
                         + ", ".join(f"{n} x{v:.4g}" for n, v in saved.scales.items()))
    finally:
        student.train(was_training)
    return out


def batches_total(batches: PairedBatches, config: DistillConfig) -> int:
    """Optimisation steps of the whole run, as the Trainer counts them."""
    tc = config.training
    total = -(-len(batches) // tc.grad_accum_steps) * tc.epochs
    return min(total, tc.max_steps) if tc.max_steps else total


def _check_tags(train: list[TaggedSentence], labels: Sequence[str], where: str) -> None:
    known = set(labels)
    for s in train:
        for tag in s.tags:
            if tag not in known:
                raise InputError(f"tag {tag!r} is not among the teacher's labels ({', '.join(labels)})",
                                 where, s.line or None)


def _score(built: BuiltStudent, dev: list[TaggedSentence], config: DistillConfig, reporter: ProgressReporter,
           bf16: bool) -> EvaluationReport:
    enc = config.encoding
    return runs.score_devel(built.model, built.tokenizer, enc, dev,
                            runs.document_keys(dev, enc.context, str(config.dev_file)), reporter.cancel, bf16=bf16)


def _compression(student, teacher, student_folder: Path, teacher_entry: ModelEntry) -> dict[str, Any]:
    p_s, p_t = parameter_count(student), parameter_count(teacher)
    size_s = folder_size(student_folder)
    size_t = teacher_entry.manifest.size_bytes or folder_size(teacher_entry.path)
    return {"teacher": teacher_entry.name, "teacher_parameters": p_t, "student_parameters": p_s,
            "parameter_ratio": round(p_s / p_t, 4), "smaller_by": round(1 - p_s / p_t, 4),
            "teacher_size_bytes": size_t, "student_size_bytes": size_s,
            "size_ratio": round(size_s / size_t, 4) if size_t else None}
