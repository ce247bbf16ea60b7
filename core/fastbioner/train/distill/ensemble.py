"""Several teachers, one set of soft labels (multi-teacher distillation, after the
MTMT seed paper): every teacher tags every training sentence once, and their word
label distributions at temperature T are combined per word, weighted by each
teacher's confidence in that word (its top probability at T = 1), or equally.

Soft labels are kept per word (the first subword of each word, as the project tags),
so the teachers need not share a tokenizer with each other or with the student; the
student's logits are compared at the first subword of each word of its own batch.
The first teacher stays the one whose layers the student copies and matches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from fastbioner.io.fileio import atomic_write
from fastbioner.models.encoding import Batch, WordEncoder, length_sorted_batches
from fastbioner.base.jobs import ProgressReporter
from fastbioner.infer.label_ensembles import combine  # the rule, shared with scoring teachers combined

# teacher_cache imports transformers: imported when a key is made, so the estimate reads logits without it.


def word_logits(model, tokenizer, labels: Sequence[str], sentences: Sequence[Sequence[str]], max_length: int,
                overlap: int, batch_size: int, reporter: ProgressReporter, device: torch.device,
                title: str = "teacher") -> list[np.ndarray]:
    """Each sentence's logits at the first subword of each word, ``(words, labels)``,
    windowed and stitched as the tagger does."""
    encoder = WordEncoder(tokenizer, list(labels), max_length=max_length, overlap=overlap)
    windows = encoder.encode(sentences)
    values: list[Any] = [None] * len(windows)  # an array per window, each set below
    batches = length_sorted_batches([len(w) for w in windows], batch_size)
    reporter.stage("ensemble", total=len(batches), message=f"soft labels of {title}")
    model = model.to(device).eval()
    with torch.inference_mode():
        for b, idx in enumerate(batches, 1):
            reporter.check()
            batch = encoder.collate([windows[i] for i in idx], idx).to(device)
            logits = model(**batch.model_inputs()).logits.float().cpu().numpy()
            for row, i in enumerate(idx):
                values[i] = logits[row, :len(windows[i])]
            reporter.emit(step=b)
    fill = np.zeros(len(labels), dtype=np.float32)
    stitched = WordEncoder.stitch(windows, values, len(sentences), fill=fill)
    return [np.stack(rows).astype(np.float32) if rows else np.zeros((0, len(labels)), np.float32)
            for rows in stitched]


def logits_key(weight_files: Sequence[Path], settings: dict, sentences: Sequence[Sequence[str]]) -> str:
    """What a teacher's word logits depend on: its weights (by content), the windowing
    and labels (``settings``) and every word of every sentence."""
    from fastbioner.train.distill.teacher_cache import weight_digests

    h = hashlib.sha256()
    for path, digest in weight_digests(weight_files):
        h.update(f"{path.name}:{digest}".encode())
    h.update(json.dumps(settings, sort_keys=True).encode())
    for words in sentences:
        h.update("\x1f".join(words).encode())
        h.update(b"\x1e")
    return h.hexdigest()


def save_logits(path: Path, key: str, logits: Sequence[np.ndarray]) -> None:
    """One teacher's word logits with their key, written whole or not at all."""
    flat = np.concatenate(logits) if logits else np.zeros((0, 0), np.float32)
    with atomic_write(path, "wb", encoding=None) as fh:
        np.savez(fh, key=np.array(key), flat=flat, lengths=np.array([len(x) for x in logits], np.int64))


def load_logits(path: Path, key: str) -> list[np.ndarray] | None:
    """The word logits stored at ``path`` if they were made under ``key``, else None
    (no file, another teacher or data, an unreadable file)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) != key:
                return None
            flat, lengths = stored["flat"], stored["lengths"]
    except (OSError, ValueError, KeyError):
        return None
    return np.split(flat.astype(np.float32), np.cumsum(lengths)[:-1]) if len(lengths) else []


@dataclass
class TeacherEnsemble:
    teachers: list[str]
    rule: str
    temperature: float
    targets: list[np.ndarray] = field(repr=False)      # per sentence: (words, labels), sums to 1
    confidence: list[np.ndarray] = field(repr=False)   # per sentence: (words,)

    @classmethod
    def build(cls, teachers: Sequence[str], logits: Sequence[list[np.ndarray]], temperature: float,
              rule: str) -> "TeacherEnsemble":
        targets, confidence = [], []
        for per_teacher in zip(*logits):
            t, c = combine(per_teacher, temperature, rule)
            targets.append(t)
            confidence.append(c)
        return cls(list(teachers), rule, temperature, targets, confidence)

    def batch_targets(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For a (student) batch: combined soft labels ``(B, L, C)`` at the first
        subword of each word, the mask of those positions, and their confidence."""
        b, length = batch.input_ids.shape
        c = self.targets[0].shape[-1] if self.targets else 1
        probs = np.zeros((b, length, c), dtype=np.float32)
        conf = np.zeros((b, length), dtype=np.float32)
        first = batch.first_subword.cpu().numpy()
        words = batch.word_index.cpu().numpy()
        for row, window in enumerate(batch.windows):
            pos = np.nonzero(first[row])[0]
            idx = words[row, pos]
            probs[row, pos] = self.targets[window.sentence][idx]
            conf[row, pos] = self.confidence[window.sentence][idx]
        device = batch.input_ids.device
        return (torch.from_numpy(probs).to(device), torch.from_numpy(first).to(device),
                torch.from_numpy(conf).to(device))

    def describe(self) -> dict:
        return {"teachers": self.teachers, "combination": self.rule, "temperature": self.temperature}
