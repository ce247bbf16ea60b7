"""Which reviewed documents an update trains on and which it is judged on
(``fastbioner fine-tune``, the app's *Improve*), and how the judgement is made.

The held-back documents are fixed per project, never redrawn:

- A document is its id and its text (the words of its sentences). Two documents
  sharing either are one document: a repeat of the same text is dropped (said in a
  note), two texts under one id stay together, on one side of the split. So no
  held-back document shares an id or a text with a trained one.
- Which documents are held back follows from their text alone (the smallest hashes,
  a tenth of them, at least ``minimum``), not from a seed: the same reviews always
  hold back the same documents, whatever the seed or the order of the files.
- What earlier updates held back and trained on is remembered (in the model's
  manifest, and in a split file when one is named: the app keeps one per project). A
  document held back once stays held back; one trained on once is never held back.

The judgement (:class:`Comparison`): the starting model and the result scored on the
same documents, per document (true positives, false positives, false negatives of
exact spans, on the reviewed types), and a paired bootstrap over documents of the
difference in F1. The result is *worse* when the whole 95% interval of after minus
before lies below zero.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fastbioner.base.errors import InputError
from fastbioner.io.labels import TaggedSentence, iob2_chunks, split_tag
from fastbioner.train.finetune_config import held_back_count

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
SPLIT_VERSION = 1


def units(sentences: Sequence[TaggedSentence]) -> list[list[int]]:
    """Sentence indices grouped by document (consecutive sentences of one document
    id); sentences without a document id are each their own unit."""
    out: list[list[int]] = []
    last: object = object()
    for i, s in enumerate(sentences):
        if s.doc_id is None or s.doc_id != last:
            out.append([])
        out[-1].append(i)
        last = s.doc_id
    return out


def text_key(sentences: Sequence[TaggedSentence]) -> str:
    """A document's text, as a short hash of its words (its tags play no part: the
    same document reviewed again is the same document)."""
    text = "\n".join(" ".join(s.words) for s in sentences)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Memory:
    """What earlier updates held back and trained on: document ids and text keys."""

    held_ids: set[str] = field(default_factory=set)
    held_texts: set[str] = field(default_factory=set)
    trained_ids: set[str] = field(default_factory=set)
    trained_texts: set[str] = field(default_factory=set)

    @classmethod
    def from_dict(cls, data: Any) -> "Memory":
        if not isinstance(data, dict):
            return cls()

        def strings(side: str, what: str) -> set[str]:
            values = (data.get(side) or {}).get(what) if isinstance(data.get(side), dict) else None
            return {v for v in values if isinstance(v, str)} if isinstance(values, list) else set()

        return cls(strings("held_back", "ids"), strings("held_back", "texts"),
                   strings("trained", "ids"), strings("trained", "texts"))

    def to_dict(self) -> dict[str, Any]:
        return {"version": SPLIT_VERSION,
                "held_back": {"ids": sorted(self.held_ids), "texts": sorted(self.held_texts)},
                "trained": {"ids": sorted(self.trained_ids), "texts": sorted(self.trained_texts)}}

    def merged(self, other: "Memory") -> "Memory":
        return Memory(self.held_ids | other.held_ids, self.held_texts | other.held_texts,
                      self.trained_ids | other.trained_ids, self.trained_texts | other.trained_texts)


def read_split_file(path: str | Path) -> Memory:
    """A split file (JSON written by :func:`write_split_file`); none yet: nothing remembered."""
    path = Path(path)
    if not path.exists():
        return Memory()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a split file written by fastbioner ({exc.__class__.__name__})", path) from None
    if not isinstance(data, dict) or data.get("version") != SPLIT_VERSION:
        raise InputError("not a split file written by fastbioner (no version 1)", path)
    return Memory.from_dict(data)


def write_split_file(path: str | Path, memory: Memory) -> None:
    path = Path(path)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(json.dumps(memory.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(scratch, path)
    except OSError as exc:
        raise InputError(f"cannot write the split file ({exc.strerror or exc})", path) from None
    finally:
        if scratch.exists():
            scratch.unlink()


@dataclass
class Document:
    """One document of the split: its units (runs of sentences) and its keys."""

    units: list[list[int]]
    ids: set[str]
    texts: set[str]

    def rank(self) -> str:
        return min(self.texts)  # the order that decides who is held back: by text alone


def _short(ids: list[str], most: int = 3) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def documents(sentences: Sequence[TaggedSentence]) -> tuple[list[Document], list[str]]:
    """The distinct documents of ``sentences`` (units sharing an id or a text joined;
    a repeated text dropped) and notes saying what repeated."""
    docs: list[Document] = []
    by_id: dict[str, int] = {}
    by_text: dict[str, int] = {}
    repeated: list[str] = []
    for unit in units(sentences):
        doc_id = sentences[unit[0]].doc_id
        key = text_key([sentences[i] for i in unit])
        if key in by_text:  # the same text again (a file given twice, a document pasted twice)
            repeated.append(doc_id or f"a sentence ({' '.join(sentences[unit[0]].words[:6])}…)")
            continue
        target = by_id.get(doc_id) if doc_id is not None else None
        if target is None:
            target = len(docs)
            docs.append(Document([], set(), set()))
        docs[target].units.append(unit)
        docs[target].texts.add(key)
        by_text[key] = target
        if doc_id is not None:
            docs[target].ids.add(doc_id)
            by_id[doc_id] = target
    notes = []
    if repeated:
        notes.append(f"{len(repeated)} reviewed document(s) repeat an earlier one's text ({_short(repeated)}): each "
                     f"used once")
    shared = [sorted(d.ids)[0] for d in docs if len(d.texts) > 1]
    if shared:
        notes.append(f"{len(shared)} document id(s) name two different texts ({_short(shared)}): kept together, "
                     f"on one side of the held-back split")
    return docs, notes


@dataclass
class ReviewSplit:
    train: list[TaggedSentence]
    held: list[TaggedSentence]
    documents: int          # distinct reviewed documents
    held_back: int          # of them, held back
    memory: Memory          # what is remembered after this split (earlier updates' and this one's)
    notes: list[str] = field(default_factory=list)


def split_reviews(sentences: Sequence[TaggedSentence], share: float, minimum: int,
                  memory: Memory | None = None) -> ReviewSplit:
    """Train and held-back documents (see the module's notes)."""
    memory = memory or Memory()
    docs, notes = documents(sentences)

    def was(doc: Document, ids: set[str], texts: set[str]) -> bool:
        return bool(doc.ids & ids or doc.texts & texts)

    trained_before = [was(d, memory.trained_ids, memory.trained_texts) for d in docs]
    held = {i for i, d in enumerate(docs)
            if not trained_before[i] and was(d, memory.held_ids, memory.held_texts)}
    n = held_back_count(len(docs), share, minimum)
    free = sorted((i for i in range(len(docs)) if i not in held and not trained_before[i]),
                  key=lambda i: docs[i].rank())
    held |= set(free[:max(0, n - len(held))])
    if held and len(docs) - len(held) < 1:
        held = set()  # nothing left to learn from: hold none back
    train = [sentences[i] for k, d in enumerate(docs) if k not in held for u in d.units for i in u]
    kept = [sentences[i] for k, d in enumerate(docs) if k in held for u in d.units for i in u]
    after = Memory(set(memory.held_ids), set(memory.held_texts), set(memory.trained_ids), set(memory.trained_texts))
    for k, d in enumerate(docs):
        ids, texts = (after.held_ids, after.held_texts) if k in held else (after.trained_ids, after.trained_texts)
        ids |= d.ids
        texts |= d.texts
    return ReviewSplit(train, kept, len(docs), len(held), after, notes)


def drop_shared(train: Sequence[TaggedSentence], check: Sequence[TaggedSentence]
                ) -> tuple[list[TaggedSentence], list[str]]:
    """``train`` without the documents that share an id or a text with one of
    ``check`` (the --dev file): never trained on what the update is judged on."""
    check_docs, _ = documents(check)
    ids = set().union(*(d.ids for d in check_docs)) if check_docs else set()
    texts = set().union(*(d.texts for d in check_docs)) if check_docs else set()
    kept: list[TaggedSentence] = []
    dropped = []
    for unit in units(train):
        doc_id = train[unit[0]].doc_id
        if (doc_id is not None and doc_id in ids) or text_key([train[i] for i in unit]) in texts:
            dropped.append(doc_id or "a sentence")
            continue
        kept += [train[i] for i in unit]
    notes = [f"{len(dropped)} reviewed document(s) are also in the --dev file ({_short(dropped)}): not trained on"] \
        if dropped else []
    return kept, notes


# -- the judgement ---------------------------------------------------------------


def document_counts(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]],
                    groups: Sequence[Sequence[int]], types: set[str]) -> np.ndarray:
    """Per document (a group of sentence indices): exact-span true positives, false
    positives and false negatives over ``types`` (shape: documents x 3)."""
    out = np.zeros((len(groups), 3), dtype=np.int64)
    for d, group in enumerate(groups):
        for i in group:
            g = {c for c in iob2_chunks(gold[i]) if c[0] in types}
            p = {c for c in iob2_chunks(predicted[i]) if c[0] in types}
            out[d] += (len(g & p), len(p - g), len(g - p))
    return out


def _f1(counts: np.ndarray) -> np.ndarray:
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)


@dataclass
class Comparison:
    """The starting model and the result on the same documents."""

    where: str              # "10 of your documents (96 mentions)", "dev file devel.tsv (100 documents, ...)"
    documents: int
    mentions: int
    before: float           # F1, 0..1, exact spans on the reviewed types
    after: float
    low: float              # the 95% bootstrap interval of after - before
    high: float

    @property
    def worse(self) -> bool:
        return self.high < 0

    def interval(self) -> str:
        return (f"after minus before {100 * (self.after - self.before):+.1f} points, 95% interval "
                f"{100 * self.low:+.1f} to {100 * self.high:+.1f}")

    def line(self) -> str:
        return (f"F1 on {self.where}: before {100 * self.before:.1f}, after {100 * self.after:.1f} "
                f"({self.interval()})")

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "documents": self.documents, "mentions": self.mentions,
                "before": self.before, "after": self.after, "low": self.low, "high": self.high}

    @classmethod
    def from_dict(cls, data: Any) -> "Comparison | None":
        try:
            return cls(str(data["where"]), int(data["documents"]), int(data["mentions"]), float(data["before"]),
                       float(data["after"]), float(data["low"]), float(data["high"]))
        except (TypeError, KeyError, ValueError):
            return None


def compare(before: np.ndarray, after: np.ndarray, where: str, samples: int = BOOTSTRAP_SAMPLES) -> Comparison:
    """``before`` and ``after``: :func:`document_counts` of the two models on the
    same documents; a paired bootstrap over documents."""
    n = len(before)
    mentions = int(before[:, 0].sum() + before[:, 2].sum()) if n else 0
    b, a = float(_f1(before.sum(0))) if n else 0.0, float(_f1(after.sum(0))) if n else 0.0
    if n == 0:
        return Comparison(where, 0, 0, b, a, 0.0, 0.0)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, n, size=(samples, n))
    diff = _f1(after[picks].sum(1)) - _f1(before[picks].sum(1))
    low, high = np.percentile(diff, [2.5, 97.5])
    return Comparison(where, n, mentions, b, a, float(low), float(high))


def reviewed_only(tags: Sequence[str], types: set[str]) -> list[str]:
    return [t if t == "O" or split_tag(t)[1] in types else "O" for t in tags]
