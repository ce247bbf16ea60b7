"""What the losses need from the teacher, computed once or on the fly.

The teacher is frozen and runs in eval mode (no dropout), so its outputs for a
window never change: computing them in every epoch repeats the most expensive
forward pass of distillation. :class:`TeacherCache` runs the teacher once over
every training window (no backward, large batches) and keeps the logits, the
mapped layers' hidden states and attention maps in half precision, in memory or in
a memory-mapped file on disk; each step then reads its batch's rows and pads them.
:class:`LiveTeacher` computes them at every step instead (``--teacher-cache none``).

Both give a :class:`TeacherOutputs` padded to the batch's width. Rows are found
through ``Batch.indices`` (positions in the encoded list of windows).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch

from ..encoding import Batch, Window, WordEncoder, length_sorted_batches
from ..jobs import ProgressReporter
from .capture import capture, heads_of
from .losses import head_average


@dataclass
class TeacherOutputs:
    logits: torch.Tensor
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)
    attention: dict[int, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class TeacherNeeds:
    """Which teacher layers the method's terms read (``hidden_states`` numbering:
    0 is the embeddings), and whether attention maps are to be head-averaged
    (student and teacher head counts differ: only the average is compared)."""

    hidden: tuple[int, ...] = ()
    attention: tuple[int, ...] = ()
    attention_kind: str = "scores"
    average_heads: bool = False


class TeacherSource(Protocol):
    def outputs(self, batch: Batch) -> TeacherOutputs: ...


class LiveTeacher:
    """Runs the teacher at every step (no cache)."""

    def __init__(self, teacher: torch.nn.Module, needs: TeacherNeeds):
        self.teacher = teacher
        self.needs = needs
        self.seconds = 0.0  # time spent in the teacher's forward pass

    def outputs(self, batch: Batch) -> TeacherOutputs:
        t0 = time.perf_counter()
        with torch.no_grad():
            out = _run(self.teacher, batch, self.needs)
        self.seconds += time.perf_counter() - t0
        return out


def _run(teacher: torch.nn.Module, batch: Batch, needs: TeacherNeeds) -> TeacherOutputs:
    got = capture(teacher, batch.input_ids, batch.attention_mask, needs.hidden, needs.attention,
                  needs.attention_kind)
    attention = got.attention
    if needs.average_heads:
        attention = {i: head_average(a) for i, a in attention.items()}
    return TeacherOutputs(got.logits, got.hidden, attention)


class _Field:
    """One kind of tensor for every window: rows of shape ``row_shape(length)``,
    stored fp16 back to back in one flat array (memory or memmap)."""

    def __init__(self, name: str, lengths: Sequence[int], shape_of, folder: Path | None):
        self.shape_of = shape_of
        sizes = [int(np.prod(shape_of(n))) for n in lengths]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.lengths = list(lengths)
        total = int(self.offsets[-1])
        if folder is None:
            self.data = np.zeros(total, dtype=np.float16)
        else:
            self.data = np.memmap(folder / f"{name}.f16", dtype=np.float16, mode="w+", shape=(max(total, 1),))

    @property
    def nbytes(self) -> int:
        return int(self.offsets[-1]) * 2

    def put(self, index: int, row: torch.Tensor) -> None:
        a, b = self.offsets[index], self.offsets[index + 1]
        self.data[a:b] = row.detach().to(torch.float16).cpu().numpy().reshape(-1)

    def get(self, index: int) -> torch.Tensor:
        a, b = self.offsets[index], self.offsets[index + 1]
        shape = self.shape_of(self.lengths[index])
        return torch.from_numpy(np.asarray(self.data[a:b]).reshape(shape))


def _pad_tokens(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Stack (n, X) rows, zero-padding n up to ``width``."""
    return torch.stack([torch.nn.functional.pad(r.float(), (0, 0, 0, width - r.shape[0])) for r in rows])


def _pad_maps(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Stack (H, n, n) maps, zero-padding both n axes up to ``width``."""
    return torch.stack([torch.nn.functional.pad(r.float(), (0, width - r.shape[-1], 0, width - r.shape[-2]))
                        for r in rows])


class TeacherCache:
    """Teacher outputs for every training window, fp16, in memory or on disk."""

    def __init__(self, windows: Sequence[Window], needs: TeacherNeeds, num_labels: int, width: int,
                 heads: int, folder: str | Path | None = None):
        self.needs = needs
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        lengths = [len(w) for w in windows]
        maps = 1 if needs.average_heads else heads
        self.logits = _Field("logits", lengths, lambda n: (n, num_labels), self.folder)
        self.hidden = {i: _Field(f"hidden{i}", lengths, lambda n: (n, width), self.folder)
                       for i in needs.hidden}
        self.attention = {i: _Field(f"attention{i}", lengths, lambda n: (maps, n, n), self.folder)
                          for i in needs.attention}
        self.build_seconds = 0.0
        self.fetch_seconds = 0.0

    @staticmethod
    def estimate_bytes(windows: Sequence[Window], needs: TeacherNeeds, num_labels: int, width: int,
                       heads: int) -> int:
        maps = 1 if needs.average_heads else heads
        per_token = num_labels + width * len(needs.hidden)
        squares = maps * len(needs.attention)
        return 2 * sum(len(w) * per_token + len(w) ** 2 * squares for w in windows)

    @property
    def nbytes(self) -> int:
        fields = [self.logits, *self.hidden.values(), *self.attention.values()]
        return sum(f.nbytes for f in fields)

    def fill(self, teacher: torch.nn.Module, encoder: WordEncoder, windows: Sequence[Window],
             batch_size: int, reporter: ProgressReporter, device: torch.device | str = "cpu") -> None:
        """Run the teacher over every window (longest first, ``batch_size`` at a time);
        checks cancel between batches."""
        t0 = time.perf_counter()
        order = length_sorted_batches([len(w) for w in windows], batch_size)
        reporter.stage("teacher-cache", total=len(order), message="caching the teacher's outputs")
        with torch.no_grad():
            for step, idx in enumerate(order, 1):
                reporter.check()
                batch = encoder.collate([windows[i] for i in idx], idx).to(device)
                out = _run(teacher, batch, self.needs)
                for row, i in enumerate(idx):
                    n = len(windows[i])
                    self.logits.put(i, out.logits[row, :n])
                    for layer, f in self.hidden.items():
                        f.put(i, out.hidden[layer][row, :n])
                    for layer, f in self.attention.items():
                        f.put(i, out.attention[layer][row, :, :n, :n])
                reporter.emit(step=step)
        if self.folder is not None:
            for f in [self.logits, *self.hidden.values(), *self.attention.values()]:
                f.data.flush()
        self.build_seconds = time.perf_counter() - t0

    def outputs(self, batch: Batch) -> TeacherOutputs:
        t0 = time.perf_counter()
        width = batch.input_ids.shape[1]
        device = batch.input_ids.device
        idx = batch.indices
        logits = _pad_tokens([self.logits.get(i) for i in idx], width).to(device)
        hidden = {layer: _pad_tokens([f.get(i) for i in idx], width).to(device)
                  for layer, f in self.hidden.items()}
        attention = {layer: _pad_maps([f.get(i) for i in idx], width).to(device)
                     for layer, f in self.attention.items()}
        self.fetch_seconds += time.perf_counter() - t0
        return TeacherOutputs(logits, hidden, attention)

    def close(self) -> None:
        """Drop the data (and the files of a disk cache)."""
        fields = [self.logits, *self.hidden.values(), *self.attention.values()]
        for f in fields:
            f.data = None
        if self.folder is not None:
            for p in self.folder.glob("*.f16"):
                os.unlink(p)


def teacher_needs(method, mapping: Sequence[int], student: torch.nn.Module, teacher: torch.nn.Module,
                  attention_kind: str) -> TeacherNeeds:
    """The teacher layers a resolved method reads, for a student whose layer ``j``
    maps to teacher layer ``mapping[j-1]``."""
    hidden: list[int] = []
    if method.uses("embedding"):
        hidden.append(0)
    if method.uses("hidden", "hidden-norm"):
        hidden.extend(mapping)
    attention = tuple(mapping) if method.uses("attention") else ()
    average = bool(attention) and heads_of(student) != heads_of(teacher)
    return TeacherNeeds(tuple(dict.fromkeys(hidden)), attention, attention_kind, average)
