"""Scores for a tagger: seqeval entity-level precision, recall and F1 (strict IOB2)
overall and per entity type, plus a token-level block for imbalanced labels
(accuracy, balanced accuracy, Matthews correlation).

Predictions go through one function, the inference engine's
:meth:`fastbioner.infer.inference.Tagger.predict_words` (words in, repaired IOB2 tags out,
CRF decoding where the model has one, long sentences windowed and stitched), here as
in training-time scoring, tagging and the benchmarks; :func:`evaluate_model` also
takes any other ``predictor`` of the same shape.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from seqeval.scheme import IOB2

from fastbioner.base.config import COMBINATIONS
from fastbioner.base.errors import InputError, ModelError
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.io.formats import read_tagged_files
from fastbioner.models.loading import load_for_tagging
from fastbioner.models.modeling import model_labels
from fastbioner.models.registry import Registry, check_bio_labels

# seqeval's metrics and scikit-learn (about 0.8 s), the Tagger (torch) and the label ensembles
# (numpy) are imported when scoring runs: `models show` reads a report without them.

# words of each sentence, the job's reporter, a document key per sentence (a model
# trained with document or packed context reads its documents) -> tags per word
WordPredictor = Callable[[Sequence[Sequence[str]], ProgressReporter, "Sequence | None"], "list[list[str]]"]


@dataclass
class TypeScores:
    precision: float
    recall: float
    f1: float
    support: int  # gold entities


@dataclass
class EvaluationReport:
    precision: float
    recall: float
    f1: float
    support: int
    per_type: dict[str, TypeScores]
    token_accuracy: float
    balanced_accuracy: float
    mcc: float
    tokens: int
    sentences: int
    source: dict[str, str] = field(default_factory=dict)  # model and file, when known

    def metrics(self) -> dict[str, float]:
        """Flat numbers for progress events and model selection."""
        out = {"f1": self.f1, "precision": self.precision, "recall": self.recall}
        out.update({f"f1_{t}": s.f1 for t, s in self.per_type.items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EvaluationReport":
        data = dict(data)
        data["per_type"] = {t: TypeScores(**s) for t, s in data.get("per_type", {}).items()}
        return cls(**data)

    def to_text(self) -> str:
        lines = []
        if self.source:
            lines.append("  ".join(f"{k}: {v}" for k, v in self.source.items()))
        lines.append(f"{'entity (strict IOB2)':<22}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
        for typ, s in sorted(self.per_type.items()):
            lines.append(f"{typ:<22}{s.precision:>10.4f}{s.recall:>10.4f}{s.f1:>10.4f}{s.support:>9d}")
        lines.append(f"{'overall (micro)':<22}{self.precision:>10.4f}{self.recall:>10.4f}"
                     f"{self.f1:>10.4f}{self.support:>9d}")
        lines.append(f"tokens: accuracy {self.token_accuracy:.4f}, balanced accuracy "
                     f"{self.balanced_accuracy:.4f}, MCC {self.mcc:.4f} "
                     f"({self.tokens} tokens, {self.sentences} sentences)")
        return "\n".join(lines)


def score_tags(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> EvaluationReport:
    """Compare IOB2 tag sequences sentence by sentence (same lengths required).

    Entities are scored by seqeval in strict mode: an entity counts only when its
    type and both boundaries match, and an ``I-`` that does not continue an entity
    starts none (the Tagger's predictions are already repaired)."""
    from seqeval.metrics import classification_report
    from sklearn.metrics import balanced_accuracy_score, matthews_corrcoef

    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
    y_true = [list(g) for g in gold]
    y_pred = [list(p) for p in predicted]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined precision/recall count as 0, no warning
        report = classification_report(y_true, y_pred, mode="strict", scheme=IOB2,
                                       output_dict=True, zero_division=0)
        flat_true = [t for s in y_true for t in s]
        flat_pred = [t for s in y_pred for t in s]
        n = len(flat_true)
        accuracy = sum(a == b for a, b in zip(flat_true, flat_pred)) / n if n else 0.0
        balanced = float(balanced_accuracy_score(flat_true, flat_pred)) if n else 0.0
        mcc = float(matthews_corrcoef(flat_true, flat_pred)) if n else 0.0
    per_type = {k: TypeScores(float(v["precision"]), float(v["recall"]), float(v["f1-score"]),
                              int(v["support"]))
                for k, v in report.items() if not k.endswith(" avg")}
    micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 0})
    return EvaluationReport(float(micro["precision"]), float(micro["recall"]), float(micro["f1-score"]),
                            int(micro["support"]), per_type, accuracy, balanced, mcc, n, len(gold))


def _scoring_tagger(entry, device: str, batch_size: int):
    """A registered or exported model as it tags in use, at float32, windowed as it was
    trained, by the engine tagging uses (:mod:`fastbioner.models.loading`: a plain BERT or
    convolutional student without importing transformers, the same logits)."""
    from fastbioner.infer.inference import Tagger, TaggerConfig

    config = TaggerConfig(device=device, precision="fp32", max_batch_size=batch_size)
    model, tokenizer = load_for_tagging(entry.path, config.engine)
    check_bio_labels(model_labels(model), entry.path)
    return Tagger(model, tokenizer, config, name=entry.name, folder=entry.path, manifest=entry.manifest.to_dict())


def _model_predictor(entry, device: str, batch_size: int) -> WordPredictor:
    """Predictions as the model tags in use (:meth:`fastbioner.infer.inference.Tagger.predict_words`,
    CRF decoding included)."""
    tagger = _scoring_tagger(entry, device, batch_size)

    def predict(sentences: Sequence[Sequence[str]], reporter: ProgressReporter,
                documents: Sequence | None = None) -> list[list[str]]:
        got = tagger.predict_words(sentences, reporter.cancel,
                                   on_batch=lambda i, n: reporter.emit(step=i, total=n), documents=documents)
        return [p.tags for p in got]
    return predict


def _ensemble_predictor(entries: Sequence, device: str, batch_size: int, rule: str) -> WordPredictor:
    """Several models combined word by word as multi-teacher distillation combines its
    teachers (:func:`fastbioner.infer.label_ensembles.combined_labels`, at T = 1): each model
    reads the sentences as it was trained (its own windows and context) and gives a
    label distribution per word; the combination's label per word is repaired to IOB2.
    Models are loaded one at a time; all must tag the same labels in the same order."""
    from fastbioner.infer.inference import tags_from_ids
    from fastbioner.infer.label_ensembles import combined_labels

    def predict(sentences: Sequence[Sequence[str]], reporter: ProgressReporter,
                documents: Sequence | None = None) -> list[list[str]]:
        per_model: list[Sequence[Any]] = []  # per model, an array per sentence
        labels: list[str] = []
        scheme = ""
        for k, entry in enumerate(entries, 1):
            reporter.stage("evaluate", message=f"tagging {len(sentences)} sentences with {entry.name} "
                                               f"({k} of {len(entries)})")
            tagger = _scoring_tagger(entry, device, batch_size)  # one model in memory at a time
            if k == 1:
                labels, scheme = tagger.labels, tagger.scheme
            elif tagger.labels != labels:
                raise ModelError(f"{entry.name} tags {', '.join(tagger.labels)}; {entries[0].name} tags "
                                 f"{', '.join(labels)}: models combined must share their labels")
            per_model.append(tagger.word_probabilities(sentences, reporter.cancel,
                                                       on_batch=lambda i, n: reporter.emit(step=i, total=n),
                                                       documents=documents))
            del tagger
        return [tags_from_ids(combined_labels(rows, rule), labels, scheme) if words else []
                for words, rows in zip(sentences, zip(*per_model))]
    return predict


def evaluate_model(model_ref: str | Path, file: str | Path, *, batch_size: int = 32,
                   device: str = "auto", predictor: WordPredictor | None = None, registry=None,
                   ensemble_with: Sequence[str | Path] = (), combination: str = "confidence",
                   on_event: Optional[EventCallback] = None,
                   cancel: Optional[CancelToken] = None) -> EvaluationReport:
    """Tag the sentences of an annotated file (BIO/CoNLL, or PubTator, BioC, JSONL read
    as a training run reads its devel file) with a model (registry name or folder) and
    score them against the file's tags. A job: progress events, cancel.
    ``ensemble_with``: more models, combined with the first word by word by the
    ``combination`` rule multi-teacher distillation uses (what an ensemble's students
    learn from, scored)."""
    if combination not in COMBINATIONS:
        raise InputError(f"combination must be one of {', '.join(COMBINATIONS)}, not {combination!r}")

    def job(reporter: ProgressReporter) -> EvaluationReport:
        reporter.stage("load", message=f"loading {model_ref}")
        reg = registry or Registry()
        entry = reg.resolve(model_ref)
        others = [reg.resolve(ref) for ref in ensemble_with]
        sentences = read_tagged_files([file])
        if not sentences:
            raise InputError("no sentences to evaluate", file)
        reporter.check()
        reporter.stage("evaluate", message=f"tagging {len(sentences)} sentences")
        # A model trained with document or packed context reads the file's -DOCSTART- documents.
        if predictor is not None:
            predict = predictor
        elif others:
            predict = _ensemble_predictor([entry, *others], device, batch_size, combination)
        else:
            predict = _model_predictor(entry, device, batch_size)
        tags = predict([s.words for s in sentences], reporter, [s.doc_id for s in sentences])
        report = score_tags([s.tags for s in sentences], tags)
        name = lambda e: str(e.name if e.registered else e.path)  # noqa: E731
        report.source = {"model": name(entry), "file": str(file)}
        if others:
            report.source["model"] = " + ".join(name(e) for e in [entry, *others])
            report.source["combination"] = combination
        reporter.emit(metrics=report.metrics(), message=f"F1 {report.f1:.4f}")
        return report

    return run_job(job, on_event, cancel)
