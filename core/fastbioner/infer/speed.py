"""Measured tagging speed and precision checks, recorded in a model's manifest.

:func:`benchmark_model` tags the same documents in float32 and in every reduced
precision the hardware offers, timed side by side, and for each mode records
tokens per second, milliseconds per abstract, entity agreement with float32 and,
given a BIO devel file, devel F1 and the F1 points lost against float32. The
record goes into the manifest's ``speed`` field; ``speed["modes"]`` holds the
per-mode checks that :func:`fastbioner.models.precision.choose_precision` reads, so
``--precision auto`` knows which modes are safe, and the app can show the figures.

Tokens are the word tokens of :mod:`fastbioner.io.text` (the same count whatever the
model's subword tokenizer), so tokens per second compare across models.
"""

from __future__ import annotations

import contextlib
import copy
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Mapping, Sequence

import torch

from fastbioner.infer.evaluation import score_tags
from fastbioner.io.documents import Document, Span
from fastbioner.infer.inference import Tagger, TaggerConfig, resolve_model
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.formats.conll import read_tagged_sentences
from fastbioner.models.loading import load_for_tagging
from fastbioner.models.precision import (
    Precision, PrecisionCheck, available_precisions, checks_from_manifest, choose_precision, hardware_name,
)
from fastbioner.models.registry import Registry
from fastbioner.models.manifest import now_iso
from fastbioner.infer.tagging import Throughput
from fastbioner.io.text import document_sentences

System = Callable[[Sequence[Document]], "list[list[Span]]"]


@dataclass(frozen=True)
class SpeedResult(Throughput):
    documents: int
    tokens: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "tokens": self.tokens, "seconds": round(self.seconds, 3),
                "tokens_per_s": round(self.tokens_per_s, 1), "ms_per_abstract": round(self.ms_per_abstract, 2)}


@dataclass(frozen=True)
class Agreement:
    """Entities of one run scored against a reference run's (exact offsets and type)."""

    precision: float
    recall: float
    f1: float
    reference_entities: int
    other_entities: int
    identical_documents: int
    documents: int

    @property
    def identical(self) -> bool:
        return self.identical_documents == self.documents

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def span_agreement(reference: Sequence[Sequence[Span]], other: Sequence[Sequence[Span]]) -> Agreement:
    """Precision, recall and F1 of ``other``'s entities against ``reference``'s,
    document by document; an entity matches when start, end and label are equal."""
    if len(reference) != len(other):
        raise ValueError(f"{len(reference)} reference documents but {len(other)} others")
    hit = n_ref = n_other = same = 0
    for ref, oth in zip(reference, other):
        a = {(s.start, s.end, s.label) for s in ref}
        b = {(s.start, s.end, s.label) for s in oth}
        hit += len(a & b)
        n_ref += len(a)
        n_other += len(b)
        same += a == b
    p = hit / n_other if n_other else 1.0
    r = hit / n_ref if n_ref else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return Agreement(p, r, f, n_ref, n_other, same, len(reference))


def count_tokens(docs: Iterable[Document]) -> int:
    """Word tokens of the documents (:mod:`fastbioner.io.text`), the unit of tokens/s."""
    return sum(len(s.tokens) for d in docs for s in document_sentences(d))


# Documents tagged untimed by each mode before timing starts. On a GPU every new batch
# shape pays a first-use set-up (kernel selection), and a reduced precision pays it
# several times over: on an H200 the shipped default's first pass over the 500 BC5CDR
# devel abstracts took 3.1 s in bf16 and fp16 against 1.0 s in fp32, and the second
# pass 0.80, 0.85 and 0.81 s. Timed after 8 documents, bf16 read as 0.26x fp32's
# tokens/s. So there each mode tags every document once first (a second on a GPU);
# on a CPU a few documents warm it.
CPU_WARMUP_DOCUMENTS = 8


def warmup_documents(device, documents: int) -> int:
    """How many of ``documents`` each mode tags untimed before timing on ``device``."""
    return documents if device.type == "cuda" else min(CPU_WARMUP_DOCUMENTS, documents)


def interleaved_timing(systems: Mapping[str, System], docs: Sequence[Document], chunk_documents: int = 50,
                       warmup_documents: int = CPU_WARMUP_DOCUMENTS, cancel: CancelToken | None = None,
                       around: Callable[[str], ContextManager[Any]] | None = None
                       ) -> dict[str, tuple[list[list[Span]], SpeedResult]]:
    """Tag the same documents with every system and time each.

    The documents are cut into rounds of ``chunk_documents``; each round runs every
    system (which one goes first rotates), so a machine whose load changes during
    the run slows all systems alike and the ratios stay meaningful. Each system
    first tags ``warmup_documents`` untimed. ``around(name)``, if given, is a context
    manager entered around each timed call (a memory sampler, say)."""
    names = list(systems)
    for name in names:
        systems[name](docs[:warmup_documents])
    spans: dict[str, list[list[Span]]] = {n: [] for n in names}
    seconds = dict.fromkeys(names, 0.0)
    for r, start in enumerate(range(0, len(docs), chunk_documents)):
        chunk = docs[start:start + chunk_documents]
        for name in names[r % len(names):] + names[:r % len(names)]:
            if cancel is not None:
                cancel.check()
            with around(name) if around else contextlib.nullcontext():
                t0 = time.perf_counter()
                spans[name].extend(systems[name](chunk))
                seconds[name] += time.perf_counter() - t0
    tokens = count_tokens(docs)
    return {n: (spans[n], SpeedResult(len(docs), tokens, seconds[n])) for n in names}


def devel_f1(tagger: Tagger, bio_file: str | Path, cancel: CancelToken | None = None) -> float:
    """Entity F1 (seqeval strict, as :mod:`fastbioner.infer.evaluation` scores) on a BIO file."""
    sentences = read_tagged_sentences(bio_file)
    # The file's -DOCSTART- documents, as evaluate reads them: a model trained with
    # document or packed context is scored as it tags (sentence context ignores them).
    predicted = tagger.predict_words([s.words for s in sentences], cancel,
                                     documents=[s.doc_id for s in sentences])
    return score_tags([s.tags for s in sentences], [p.tags for p in predicted]).f1


def _with(config: TaggerConfig, precision: str) -> TaggerConfig:
    return TaggerConfig.from_dict({**config.to_dict(), "precision": precision})


def precision_taggers(model: str | Path, config: TaggerConfig | None = None,
                      modes: Sequence[str] | None = None) -> dict[str, Tagger]:
    """One tagger per precision mode (float32 first; by default every mode the
    device offers) over a single load of the model, by the engine tagging uses."""
    config = config or TaggerConfig()
    folder, name, _ = resolve_model(model)
    base, tokenizer = load_for_tagging(folder, config.engine)

    def make(mode: str) -> Tagger:
        return Tagger(copy.deepcopy(base), tokenizer, _with(config, mode), name=name, folder=folder)

    fp32 = make(Precision.FP32.value)
    wanted = [Precision(m) for m in modes] if modes else available_precisions(fp32.device)
    out = {Precision.FP32.value: fp32}
    out.update({m.value: make(m.value) for m in wanted if m is not Precision.FP32})
    return out


def mode_record(speed: SpeedResult, agreement: Agreement, check: PrecisionCheck) -> dict[str, Any]:
    """One precision mode's entry under ``speed["modes"]``."""
    return {**speed.to_dict(), **check.to_dict(), "identical_documents": agreement.identical_documents}


def speed_record(modes: Mapping[str, Mapping[str, Any]], device, threads: int, documents: int) -> dict[str, Any]:
    """The manifest's ``speed`` record: at the top the figures of the mode that
    ``--precision auto`` picks given these checks, and every mode under ``modes``."""
    chosen = choose_precision("auto", device, checks_from_manifest({"speed": {"modes": modes}}))
    top = modes.get(chosen.value) or modes[Precision.FP32.value]
    return {"tokens_per_s": top["tokens_per_s"], "ms_per_abstract": top["ms_per_abstract"],
            "precision": chosen.value, "device": str(device), "hardware": hardware_name(device),
            "threads": threads, "date": now_iso(), "documents": documents, "modes": dict(modes)}


def mode_records(timed: Mapping[str, tuple[list[list[Span]], SpeedResult]], f1: Mapping[str, float | None],
                 data: str, hardware: str) -> dict[str, dict[str, Any]]:
    """Per-mode records from a side-by-side timing that includes ``fp32``."""
    reference, fp32_speed = timed[Precision.FP32.value]
    out = {}
    run = now_iso()  # one date for the run: auto compares the speeds of modes timed together
    for mode, (spans, speed) in timed.items():
        agreement = span_agreement(reference, spans)
        speedup = round(speed.tokens_per_s / fp32_speed.tokens_per_s, 4) if fp32_speed.tokens_per_s else None
        check = PrecisionCheck(mode, agreement.f1, f1.get(mode), f1.get(Precision.FP32.value),
                               speed.documents, data, hardware, run, round(speed.tokens_per_s, 1), speedup)
        out[mode] = mode_record(speed, agreement, check)
    return out


def benchmark_model(model: str | Path, docs: Sequence[Document], devel: str | Path | None = None, *,
                    config: TaggerConfig | None = None, modes: Sequence[str] | None = None,
                    on_event: EventCallback | None = None, cancel: CancelToken | None = None
                    ) -> dict[str, Any]:
    """Speed and entity agreement of every precision mode against float32 on
    ``docs``, timed side by side; devel F1 too when ``devel`` (a BIO file) is given.
    Returns the ``speed`` record for the manifest (see :func:`record_speed`)."""

    def job(reporter: ProgressReporter) -> dict[str, Any]:
        reporter.stage("load", message=f"loading {model}")
        taggers = precision_taggers(model, config, modes)
        reporter.stage("time", message=f"{len(docs)} documents, {len(taggers)} mode(s)")
        device = taggers[Precision.FP32.value].device
        timed = interleaved_timing({m: t.tag for m, t in taggers.items()}, docs,
                                   warmup_documents=warmup_documents(device, len(docs)), cancel=reporter.cancel)
        f1: dict[str, float | None] = dict.fromkeys(taggers)
        if devel:
            reporter.stage("devel", total=len(taggers), message="devel F1 per mode")
            for k, (mode, tagger) in enumerate(taggers.items()):
                f1[mode] = devel_f1(tagger, devel, reporter.cancel)
                reporter.emit(step=k + 1, metrics={f"f1_{mode}": f1[mode]})
        fp32 = taggers[Precision.FP32.value]
        records = mode_records(timed, f1, str(devel or ""), hardware_name(fp32.device))
        return speed_record(records, fp32.device, fp32.describe()["threads"], len(docs))

    return run_job(job, on_event, cancel)


def merged_speed(earlier: Mapping[str, Any] | None, speed: dict[str, Any]) -> dict[str, Any]:
    """``speed`` with the checks of the modes it did not measure taken from ``earlier``
    (the record already in the manifest): int8 checked on one machine and bf16 on
    another whose CPU has it both stay, each naming its hardware and date, and
    ``auto`` is chosen again over all of them. A mode measured now replaces its
    earlier check."""
    kept = {m: r for m, r in ((earlier or {}).get("modes") or {}).items() if m not in speed["modes"]}
    if not kept:
        return speed
    return speed_record({**speed["modes"], **kept}, torch.device(speed["device"]), speed["threads"],
                        speed["documents"])


def record_speed(name: str, speed: dict[str, Any], registry: Registry | None = None) -> dict[str, Any]:
    """Write a speed record into a registered model's manifest, keeping the earlier
    checks of modes this one did not measure (:func:`merged_speed`); returns what
    was written."""
    registry = registry or Registry()
    speed = merged_speed(registry.get(name).manifest.speed, speed)
    registry.update_manifest(name, speed=speed)
    return speed
