"""Measured tagging speed and precision checks, recorded in a model's manifest.

``benchmark_model`` tags the same documents in float32 and in every reduced
precision the hardware offers, and for each mode records: tokens per second,
milliseconds per abstract, entity agreement with float32 on those documents, and,
given a BIO devel file, devel F1 and the F1 points lost against float32. The
record goes into the manifest's ``speed`` field (``speed["modes"]`` holds the
per-mode checks that :func:`fastbioner.precision.choose_precision` reads), so the
app can show the figures and ``--precision auto`` knows which modes are safe.

Tokens are the word tokens of :mod:`fastbioner.text` (the same count whatever the
model's subword tokenizer), so tokens per second compare across models.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from .documents import Document, Span
from .inference import Tagger, TaggerConfig, resolve_model
from .jobs import CancelToken, EventCallback, ProgressReporter, run_job
from .modeling import load_token_classifier, load_tokenizer
from .precision import Precision, PrecisionCheck, available_precisions, hardware_name
from .registry import Registry, now_iso


@dataclass(frozen=True)
class SpeedResult:
    documents: int
    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def ms_per_abstract(self) -> float:
        return 1000.0 * self.seconds / self.documents if self.documents else 0.0

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


def _chunks(docs: Sequence[Document], size: int) -> Iterator[Sequence[Document]]:
    for i in range(0, len(docs), size):
        yield docs[i:i + size]


def timed_tag(tagger: Tagger, docs: Sequence[Document], chunk_documents: int = 64,
              cancel: CancelToken | None = None) -> tuple[list[list[Span]], SpeedResult]:
    """Tag ``docs`` as the streaming job does (a chunk at a time) and time it; the
    first chunk is run once before timing, so one-off start-up costs are left out."""
    if docs:
        tagger.tag(docs[:chunk_documents], cancel)
    spans: list[list[Span]] = []
    tokens = 0
    t0 = time.perf_counter()
    for chunk in _chunks(docs, chunk_documents):
        result = tagger.tag_chunk(chunk, keep=(), cancel=cancel)
        spans.extend(d.spans for d in result.documents)
        tokens += result.tokens
    return spans, SpeedResult(len(docs), tokens, time.perf_counter() - t0)


def devel_f1(tagger: Tagger, bio_file: str | Path, cancel: CancelToken | None = None) -> float:
    """Entity F1 (seqeval strict, as :mod:`fastbioner.evaluation` scores) on a BIO file."""
    from .evaluation import score_tags
    from .formats.conll import read_tagged_sentences

    sentences = read_tagged_sentences(bio_file)
    predicted = tagger.predict_words([s.words for s in sentences], cancel)
    return score_tags([s.tags for s in sentences], [p.tags for p in predicted]).f1


def benchmark_model(model: str | Path, docs: Sequence[Document], devel: str | Path | None = None, *,
                    config: TaggerConfig | None = None, modes: Sequence[str] | None = None,
                    on_event: EventCallback | None = None, cancel: CancelToken | None = None
                    ) -> dict[str, Any]:
    """Speed and agreement of every precision mode (``modes``, default all that the
    device offers) against float32 on ``docs``; devel F1 too when ``devel`` is given.
    Returns the manifest's ``speed`` record: the figures of the mode that ``auto``
    now picks at the top, every mode under ``modes``."""
    config = config or TaggerConfig()
    folder, name, manifest = resolve_model(model)

    def job(reporter: ProgressReporter) -> dict[str, Any]:
        reporter.stage("load", message=f"loading {name}")
        from .inference import _register_custom_models

        _register_custom_models(folder)
        base = load_token_classifier(folder, device="cpu")
        tokenizer = load_tokenizer(folder)
        probe = Tagger(copy.deepcopy(base), tokenizer, _with(config, "fp32"), name=name, folder=folder)
        wanted = [Precision(m) for m in modes] if modes else available_precisions(probe.device)
        order = [Precision.FP32] + [m for m in wanted if m is not Precision.FP32]
        reporter.stage("measure", total=len(order), message=f"{len(docs)} documents")
        results: dict[str, dict[str, Any]] = {}
        reference: list[list[Span]] = []
        f1_fp32 = None
        hardware = hardware_name(probe.device)
        for k, mode in enumerate(order):
            reporter.check()
            tagger = probe if mode is Precision.FP32 else Tagger(
                copy.deepcopy(base), tokenizer, _with(config, mode.value), name=name, folder=folder)
            spans, speed = timed_tag(tagger, docs, cancel=reporter.cancel)
            f1 = devel_f1(tagger, devel, reporter.cancel) if devel else None
            if mode is Precision.FP32:
                reference, f1_fp32 = spans, f1
            agreement = span_agreement(reference, spans)
            check = PrecisionCheck(mode.value, agreement.f1, f1, f1_fp32, len(docs),
                                   str(devel or ""), hardware, now_iso())
            results[mode.value] = {**speed.to_dict(), **check.to_dict(),
                                   "identical_documents": agreement.identical_documents}
            reporter.emit(step=k + 1, message=f"{mode.value}: {speed.tokens_per_s:,.0f} tokens/s",
                          metrics={f"{mode.value}_tokens_per_s": speed.tokens_per_s})
        chosen = Tagger(copy.deepcopy(base), tokenizer, _with(config, "auto"),
                        manifest={"speed": {"modes": results}}, name=name, folder=folder)
        top = results[chosen.precision.value]
        return {"tokens_per_s": top["tokens_per_s"], "ms_per_abstract": top["ms_per_abstract"],
                "precision": chosen.precision.value, "device": str(chosen.device),
                "hardware": hardware, "threads": chosen.describe()["threads"],
                "date": now_iso(), "documents": len(docs), "modes": results}

    return run_job(job, on_event, cancel)


def _with(config: TaggerConfig, precision: str) -> TaggerConfig:
    return TaggerConfig.from_dict({**config.to_dict(), "precision": precision})


def record_speed(name: str, speed: dict[str, Any], registry: Registry | None = None) -> None:
    """Write a speed record into a registered model's manifest."""
    (registry or Registry()).update_manifest(name, speed=speed)
