"""Distillation data: labelled BIO sentences plus optional unlabelled text, encoded
for the teacher and (when its tokenizer differs) again for the student, served as
:class:`~fastbioner.distill.alignment.DistillBatch` objects.

Unlabelled sentences are encoded with placeholder ``O`` tags so that their label
positions (the subwords a soft label goes on) are marked exactly as for labelled
ones; the objective masks those rows out of the gold-label term.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import torch

from ..encoding import LengthGroupedBatches, Window, WordEncoder
from ..errors import FastBioNERError, InputError
from .alignment import DistillBatch


def read_unlabeled(paths: Sequence[str | Path], limit: int = 0,
                   input_format: str | None = None) -> list[list[str]]:
    """Word sequences of every sentence of every document in ``paths`` (files in any
    format the readers know: PubTator, BioC, PubMed XML, MEDLINE, plain text, BIO ...;
    a folder gives the files in it that a reader knows by name); ``limit`` > 0 keeps
    the first ``limit`` sentences. A file that cannot be read stops the run with its
    name: training on part of the text asked for would be a silently other run."""
    from ..formats import expand_paths, read_documents
    from ..text import document_sentences

    out: list[list[str]] = []
    for given in paths:
        before = len(out)
        for path in expand_paths([given]):
            for doc in read_documents(path, input_format):
                for sentence in document_sentences(doc):
                    words = sentence.words
                    if words:
                        out.append(words)
                        if limit and len(out) >= limit:
                            return out
        if len(out) == before:  # a file or a whole folder with nothing to learn from
            raise InputError("no sentences in the unlabelled text", given)
    return out


@dataclass
class EncodedData:
    teacher_encoder: WordEncoder
    student_encoder: WordEncoder
    teacher_windows: list[Window]
    student_windows: list[Window]  # the same list when the tokenizers agree
    unlabeled: list[bool]          # per window

    @property
    def shared(self) -> bool:
        return self.student_windows is self.teacher_windows

    @property
    def label_ids(self) -> Iterator[int]:
        """Gold label ids of the labelled windows (for class-weighted losses)."""
        for w, unlabeled in zip(self.student_windows, self.unlabeled):
            if not unlabeled:
                yield from w.labels


def encode(teacher_encoder: WordEncoder, student_encoder: WordEncoder | None,
           labelled: Sequence[tuple[Sequence[str], Sequence[str]]],
           unlabeled: Sequence[Sequence[str]] = (), documents: Sequence | None = None) -> EncodedData:
    """Windows of the labelled (words, tags) and the unlabelled word sequences.
    ``student_encoder`` None: the student reads the teacher's windows. ``documents``:
    the labelled sentences' document keys, for document context (both sides read the
    same context)."""
    words = [list(w) for w, _ in labelled] + [list(w) for w in unlabeled]
    o = "O"
    tags = [list(t) for _, t in labelled] + [[o] * len(w) for w in unlabeled]
    first_unlabeled = len(labelled)
    if documents is not None:
        documents = list(documents) + [None] * len(unlabeled)
    t_windows = teacher_encoder.encode(words, tags, documents)
    flags = [w.sentence >= first_unlabeled for w in t_windows]
    if student_encoder is None:
        return EncodedData(teacher_encoder, teacher_encoder, t_windows, t_windows, flags)
    s_windows = student_encoder.encode(words, tags, documents)
    if len(s_windows) != len(t_windows) or any(
            a.sentence != b.sentence or a.owned_words != b.owned_words for a, b in zip(t_windows, s_windows)):
        bad = next((a.sentence for a, b in zip(t_windows, s_windows)
                    if a.sentence != b.sentence or a.owned_words != b.owned_words), t_windows[-1].sentence)
        raise FastBioNERError(
            f"sentence {bad + 1} of the training data is cut into other windows by the student's "
            f"tokenizer than by the teacher's (a sentence longer than max_length subwords split "
            f"differently); use the teacher's tokenizer or a larger --max-length")
    return EncodedData(teacher_encoder, student_encoder, t_windows, s_windows, flags)


class PairedBatches:
    """Training batches over :class:`EncodedData`: the batch source of the shared
    training loop, grouped by length, in an order fixed by ``(seed, epoch)``."""

    def __init__(self, data: EncodedData, batch_size: int, seed: int = 0):
        self.data = data
        self.sampler = LengthGroupedBatches([len(w) for w in data.teacher_windows], batch_size, seed)

    def __len__(self) -> int:
        return len(self.sampler)

    def epoch(self, epoch: int) -> Iterator[DistillBatch]:
        d = self.data
        for idx in self.sampler.batches(epoch):
            teacher = d.teacher_encoder.collate([d.teacher_windows[i] for i in idx], idx)
            student = teacher if d.shared else d.student_encoder.collate(
                [d.student_windows[i] for i in idx], idx)
            unlabeled = torch.tensor([d.unlabeled[i] for i in idx], dtype=torch.bool)
            yield DistillBatch(teacher, student, unlabeled)

    def padded_sizes(self, epoch: int) -> list[int]:
        return self.sampler.padded_sizes(epoch)
