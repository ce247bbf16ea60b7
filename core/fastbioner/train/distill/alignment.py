"""Teacher and student batches over the same windows, and whether their subwords
line up.

A student with the teacher's tokenizer reads the teacher's batch itself. A student
with another tokenizer (all-MiniLM-L6-v2 under an all-mpnet-base-v2 teacher: the
same wordpieces, other ids) gets its own encoding of the same sentences; the
token-level terms (hidden states, attention) then need both to split every window
into the same subwords, which :class:`SubwordAligner` checks per batch by mapping
the student's ids to the teacher's through the token strings. The soft-label terms
work at word level (first subword of each word), so they need only the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fastbioner.models.encoding import Batch
from fastbioner.base.errors import FastBioNERError
from fastbioner.models.architectures.positions import first_positions, gather_positions

_SPECIAL_ROLES = ("cls_token", "sep_token", "pad_token", "unk_token", "mask_token", "bos_token", "eos_token")


@dataclass
class DistillBatch:
    """One step's data: the teacher's batch, the student's (the same object when
    they share a tokenizer) and which rows are unlabelled text."""

    teacher: Batch
    student: Batch
    unlabeled: torch.Tensor  # (B,) bool

    @property
    def shared(self) -> bool:
        return self.student is self.teacher

    def to(self, device: torch.device | str) -> "DistillBatch":
        t = self.teacher.to(device)
        s = t if self.shared else self.student.to(device)
        return DistillBatch(t, s, self.unlabeled.to(device))

    def __len__(self) -> int:
        return len(self.teacher)


def same_vocabulary(a, b) -> bool:
    return a.get_vocab() == b.get_vocab()


class SubwordAligner:
    """Maps student token ids to the teacher's by token string (special tokens by
    role: [CLS] <-> <s> ...) and checks that two batches hold the same subwords."""

    def __init__(self, teacher_tokenizer, student_tokenizer):
        self.teacher_tokenizer = teacher_tokenizer
        self.student_tokenizer = student_tokenizer
        t_vocab = teacher_tokenizer.get_vocab()
        s_vocab = student_tokenizer.get_vocab()
        lut = torch.full((max(s_vocab.values()) + 1,), -1, dtype=torch.long)
        for token, sid in s_vocab.items():
            lut[sid] = t_vocab.get(token, -1)
        for role in _SPECIAL_ROLES:
            s_tok, t_tok = getattr(student_tokenizer, role, None), getattr(teacher_tokenizer, role, None)
            if s_tok is not None and t_tok is not None and s_tok in s_vocab and t_tok in t_vocab:
                lut[s_vocab[s_tok]] = t_vocab[t_tok]
        self.lut = lut

    def check(self, teacher: Batch, student: Batch) -> None:
        """Raise :class:`FastBioNERError` naming the first window whose subwords differ."""
        if teacher.input_ids.shape == student.input_ids.shape:
            mapped = self.lut.to(student.input_ids.device)[student.input_ids]
            real = teacher.attention_mask.bool() | student.attention_mask.bool()
            bad_rows = ((mapped != teacher.input_ids) & real).any(1)
            if not bad_rows.any():
                return
            row = int(bad_rows.nonzero()[0])
        else:
            row = next((r for r in range(len(teacher))
                        if int(teacher.attention_mask[r].sum()) != int(student.attention_mask[r].sum())), 0)
        t_tokens = self._tokens(self.teacher_tokenizer, teacher, row)
        s_tokens = self._tokens(self.student_tokenizer, student, row)
        raise FastBioNERError(
            f"{_sequence(teacher, row)} splits into other "
            f"subwords with the student's tokenizer ({' '.join(s_tokens[:12])} ...) than with the "
            f"teacher's ({' '.join(t_tokens[:12])} ...); the token-level terms (hidden, attention, "
            f"hidden-norm, embedding) need the same subwords: use a student with the teacher's tokenizer, "
            f"or learn from word-level soft labels (--method hinton, or --drop-terms naming the method's "
            f"token-level terms, e.g. hidden,attention)")

    @staticmethod
    def _tokens(tokenizer, batch: Batch, row: int) -> list[str]:
        n = int(batch.attention_mask[row].sum())
        return tokenizer.convert_ids_to_tokens(batch.input_ids[row, :n].tolist())


def _sequence(batch: Batch, row: int) -> str:
    """The training sequence a window came from, for a message: a sentence, or under
    packed context a whole document (``Window.sentence`` numbers whichever was encoded)."""
    return (f"training sequence {batch.windows[row].sentence + 1} (a sentence, or a whole document "
            f"with --context packed)")


def word_level(values: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """``values`` (B, L, ...) at the first subword of each word, left-aligned:
    ``(B, W, ...)`` and the (B, W) mask of real words."""
    index, valid = first_positions(batch.first_subword)
    return gather_positions(values, index), valid


def check_same_words(teacher_valid: torch.Tensor, student_valid: torch.Tensor, teacher: Batch) -> None:
    """Both sides must see the same number of words in every row."""
    differ = teacher_valid.sum(1) != student_valid.sum(1)
    if differ.any():
        row = int(differ.nonzero()[0])
        raise FastBioNERError(
            f"{_sequence(teacher, row)} has words that one "
            f"tokenizer turns into no subword at all; teacher and student see different words")
