"""Distillation data: labelled BIO sentences plus optional unlabelled text, encoded
for the teacher and (when its tokenizer differs) again for the student, served as
:class:`~fastbioner.train.distill.alignment.DistillBatch` objects.

Unlabelled sentences are encoded with placeholder ``O`` tags so that their label
positions (the subwords a soft label goes on) are marked exactly as for labelled
ones; the objective masks those rows out of the gold-label term.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import torch

from fastbioner.io.formats import expand_paths, read_documents
from fastbioner.io.text import document_sentences
from fastbioner.models import packing
from fastbioner.models.encoding import LengthGroupedBatches, Window, WordEncoder
from fastbioner.base.errors import FastBioNERError, InputError
from fastbioner.train.distill.alignment import DistillBatch


@dataclass
class UnlabeledText:
    """The sentences of the unlabelled text and, per sentence, the document it came
    from (a key of its own, never equal to a labelled document's, even where the same
    abstract is labelled too): with document or packed context an unlabelled abstract
    is read whole, as the labelled ones are."""

    sentences: list[list[str]] = field(default_factory=list)
    documents: list[tuple[str, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sentences)


def read_unlabeled(paths: Sequence[str | Path], limit: int = 0,
                   input_format: str | None = None) -> UnlabeledText:
    """Word sequences of every sentence of every document in ``paths`` (files in any
    format the readers know: PubTator, BioC, PubMed XML, MEDLINE, plain text, BIO ...;
    a folder gives the files in it that a reader knows by name); ``limit`` > 0 keeps
    the first ``limit`` sentences. A file that cannot be read stops the run with its
    name: training on part of the text asked for would be a silently other run."""
    out = UnlabeledText()
    n_docs = 0
    for given in paths:
        before = len(out)
        for path in expand_paths([given]):
            for doc in read_documents(path, input_format):
                n_docs += 1
                for sentence in document_sentences(doc):
                    words = sentence.words
                    if words:
                        out.sentences.append(words)
                        out.documents.append(("unlabelled", n_docs))
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
    # The word sequences the windows index (``Window.sentence``): the sentences, or with
    # packed context each document's sentences joined, then the unlabelled sentences
    # (joined likewise, per unlabelled document).
    sequences: list[Sequence[str]] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return self.student_windows is self.teacher_windows

    @property
    def label_ids(self) -> Iterator[int]:
        """Gold label ids of the labelled windows (for class-weighted losses)."""
        for w, unlabeled in zip(self.student_windows, self.unlabeled):
            if not unlabeled:
                yield from w.labels or ()  # a labelled window has labels


def encode(teacher_encoder: WordEncoder, student_encoder: WordEncoder | None,
           labelled: Sequence[tuple[Sequence[str], Sequence[str]]],
           unlabeled: Sequence[Sequence[str]] | UnlabeledText = (), documents: Sequence | None = None,
           context: str = "document") -> EncodedData:
    """Windows of the labelled (words, tags) and the unlabelled word sequences.
    ``student_encoder`` None: the student reads the teacher's windows. ``documents``:
    the labelled sentences' document keys, read as ``context`` says (both sides read
    the same context); the unlabelled sentences are read with their own documents
    (:class:`UnlabeledText`), or alone (a plain list of sentences)."""
    unlabeled_keys = unlabeled.documents if isinstance(unlabeled, UnlabeledText) else None
    unlabeled = unlabeled.sentences if isinstance(unlabeled, UnlabeledText) else unlabeled
    words = [list(w) for w, _ in labelled] + [list(w) for w in unlabeled]
    tags = [list(t) for _, t in labelled] + [["O"] * len(w) for w in unlabeled]
    # Unlabelled text is never read with or joined to labelled text: its documents have
    # keys of their own (or none: each sentence alone), so they are the last sequences.
    keys: list[object] | None = None
    if documents is not None:
        keys = list(documents)
        if unlabeled_keys is not None:
            keys.extend(unlabeled_keys)
        else:
            keys.extend([None] * len(unlabeled))
    t_windows, layout, sequences = packing.encode(teacher_encoder, context, words, tags, keys)
    first_unlabeled = sum(1 for first in layout.first_sentences() if first < len(labelled))
    flags = [w.sentence >= first_unlabeled for w in t_windows]
    if student_encoder is None:
        return EncodedData(teacher_encoder, teacher_encoder, t_windows, t_windows, flags, list(sequences))
    s_windows, _, _ = packing.encode(student_encoder, context, words, tags, keys)
    differ = [a.sentence for a, b in zip(t_windows, s_windows)
              if a.sentence != b.sentence or a.owned_words != b.owned_words]
    if differ or len(s_windows) != len(t_windows):
        raise FastBioNERError(_other_windows(differ[0] if differ else t_windows[-1].sentence, layout,
                                             first_unlabeled))
    return EncodedData(teacher_encoder, student_encoder, t_windows, s_windows, flags, list(sequences))


def _other_windows(sequence: int, layout: packing.Layout, first_unlabeled: int) -> str:
    """Why teacher and student cannot share windows, naming the text where they part."""
    firsts = layout.first_sentences()
    first, count = firsts[sequence], len(layout.parts[sequence])
    if sequence >= first_unlabeled:
        base = firsts[first_unlabeled] if first_unlabeled < len(firsts) else first
        where, first = "of the unlabelled text", first - base
    else:
        where = "of the training data"
    if count > 1:  # packed context: the windows of a whole document depend on every word's subword count
        return (f"the document of sentences {first + 1}-{first + count} {where}, read as one "
                f"sequence (packed context), is cut into other windows by the student's tokenizer than by "
                f"the teacher's (their subwords differ); use the teacher's tokenizer or --context document")
    return (f"sentence {first + 1} {where} is cut into other windows by the student's tokenizer than by the "
            f"teacher's (a sentence longer than max_length subwords split differently); use the teacher's "
            f"tokenizer or a larger --max-length")


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
