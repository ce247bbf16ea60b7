"""What the losses need from the teacher, computed once or on the fly.

The teacher is frozen and runs in eval mode (no dropout), so its outputs for a
window never change: computing them in every epoch repeats the most expensive
forward pass of distillation. :class:`TeacherCache` runs the teacher once over
every training window (no backward, large batches) and keeps the logits, the
mapped layers' hidden states and attention maps in half precision, in memory or in
a memory-mapped file on disk; each step then reads its batch's rows and pads them.
:class:`LiveTeacher` computes them at every step instead (``--teacher-cache none``).

A *shared* cache (``--teacher-cache shared``) keeps its files after the run, in a
folder named by :func:`shared_cache_key` (the teacher's weights, the encoded
windows, the attention form): a later run with the same teacher and data, a resumed
one included, reads the fields already there and runs the teacher only for those
missing. Each field is written under a temporary name and renamed when complete, so
an interrupted build leaves no field half written, and two runs building the same
field at once both end with the same, whole file. The run that holds the folder's
build lock builds under fixed names (``.<field>.f16.part``) and records how many
windows (longest first) each part holds (``.progress.json``, written after the parts
are flushed, every minute and when the build stops): an interrupted build (a cancel,
a session's end) is resumed by the next run from there instead of from the first
window. A second run building at the same time takes private temporary names, as
before.

Both give a :class:`TeacherOutputs` padded to the batch's width. Rows are found
through ``Batch.indices`` (positions in the encoded list of windows).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch

from fastbioner.models.encoding import Batch, Window, WordEncoder, length_sorted_batches
from fastbioner.base.errors import DISK_MARGIN_BYTES, DiskSpaceError
from fastbioner.base.jobs import ProgressReporter
from fastbioner.train.distill.capture import capture, heads_of
from fastbioner.train.distill.losses import head_average

# filelock is looked up when the lock is taken: a test stands another run's lock in for FileLock.
# Under the models folder; a dot folder, so the registry does not list it.
SHARED_CACHE_FOLDER = ".teacher-cache-shared"
# How often a resumable build records how far it got (flushing its parts first).
PROGRESS_EVERY_SECONDS = 60.0


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
        # ... and in each call, as (time.monotonic() at its start, seconds): a run-time
        # estimate takes the teacher out of the step each call fell in (a step may make
        # none, once a schedule's weight on the teacher's terms reaches 0; the first pays
        # for lazy initialisation, as the first step does, and must stay with it).
        self.timed_calls: list[tuple[float, float]] = []

    def outputs(self, batch: Batch) -> TeacherOutputs:
        started, t0 = time.monotonic(), time.perf_counter()
        with torch.no_grad():
            out = _run(self.teacher, batch, self.needs)
        took = time.perf_counter() - t0
        self.seconds += took
        self.timed_calls.append((started, took))
        return out


def _run(teacher: torch.nn.Module, batch: Batch, needs: TeacherNeeds) -> TeacherOutputs:
    got = capture(teacher, batch.input_ids, batch.attention_mask, needs.hidden, needs.attention,
                  needs.attention_kind)
    attention = got.attention
    if needs.average_heads:
        attention = {i: head_average(a) for i, a in attention.items()}
    return TeacherOutputs(got.logits, got.hidden, attention)


# What a discarded field holds: no data, and no file kept open by a memmap.
_DROPPED = np.zeros(0, dtype=np.float16)


class _Field:
    """One kind of tensor for every window: rows of shape ``row_shape(length)``,
    stored fp16 back to back in one flat array (memory or memmap).

    ``shared``: the file ``<name>.f16`` in ``folder`` outlives the run. When it is
    there with the right size it is read as it is (``ready``); otherwise the field is
    built in a temporary file that :meth:`finish` renames into place."""

    def __init__(self, name: str, lengths: Sequence[int], shape_of, folder: Path | None,
                 shared: bool = False, resumable: bool = False):
        self.name = name
        self.shape_of = shape_of
        self.resumable = False  # a part under the fixed name, kept when the build stops
        self.kept = False       # ... and one an earlier, interrupted build left (read on)
        sizes = [int(np.prod(shape_of(n))) for n in lengths]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.lengths = list(lengths)
        total = int(self.offsets[-1])
        self.path: Path | None = None
        self.building: Path | None = None
        self.ready = False
        self.data: np.ndarray
        if folder is None:
            self.data = np.zeros(total, dtype=np.float16)
            return
        path = self.path = folder / f"{name}.f16"
        if shared and path.is_file() and path.stat().st_size == 2 * max(total, 1):
            self.data = np.memmap(path, dtype=np.float16, mode="r", shape=(max(total, 1),))
            self.ready = True
        elif shared and resumable:
            self.resumable = True
            building = self.building = folder / f".{name}.f16.part"
            size = 2 * max(total, 1)
            keep = self.kept = building.is_file() and building.stat().st_size == size
            self.data = np.memmap(building, dtype=np.float16, mode="r+" if keep else "w+",
                                  shape=(max(total, 1),))
        else:
            building = self.building = (folder / f".{name}.f16.{os.getpid()}.{time.monotonic_ns()}.part"
                                         if shared else path)
            self.data = np.memmap(building, dtype=np.float16, mode="w+", shape=(max(total, 1),))

    @property
    def nbytes(self) -> int:
        return int(self.offsets[-1]) * 2

    def put(self, index: int, row: torch.Tensor) -> None:
        a, b = self.offsets[index], self.offsets[index + 1]
        self.data[a:b] = row.detach().to(torch.float16).cpu().numpy().reshape(-1)

    def get(self, index: int) -> torch.Tensor:
        a, b = self.offsets[index], self.offsets[index + 1]
        shape = self.shape_of(self.lengths[index])
        return torch.from_numpy(np.array(self.data[a:b]).reshape(shape))

    def finish(self) -> None:
        """Flush a file-backed field; a shared one's temporary file takes its name."""
        if isinstance(self.data, np.memmap) and not self.ready:
            self.flush()
            if self.building is not None and self.path is not None and self.building != self.path:
                os.replace(self.building, self.path)
                self.building = None
        self.ready = True

    def flush(self) -> None:
        if isinstance(self.data, np.memmap) and not self.ready:
            self.data.flush()

    def discard(self, keep_part: bool = False) -> None:
        """Drop the data; delete a file not meant to outlive the run (``keep_part``:
        a resumable part stays for the next run)."""
        if keep_part and self.resumable and self.building is not None:
            self.flush()
            self.data = _DROPPED
            self.building = None
            return
        self.data = _DROPPED
        if self.building is not None:
            self.building.unlink(missing_ok=True)
            self.building = None


def _pad_tokens(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Stack (n, X) rows, zero-padding n up to ``width``."""
    return torch.stack([torch.nn.functional.pad(r.float(), (0, 0, 0, width - r.shape[0])) for r in rows])


def _pad_maps(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Stack (H, n, n) maps, zero-padding both n axes up to ``width``."""
    return torch.stack([torch.nn.functional.pad(r.float(), (0, width - r.shape[-1], 0, width - r.shape[-2]))
                        for r in rows])


class TeacherCache:
    """Teacher outputs for every training window, fp16, in memory or on disk
    (``shared``: in files kept for later runs, see the module's docstring)."""

    def __init__(self, windows: Sequence[Window], needs: TeacherNeeds, num_labels: int, width: int,
                 heads: int, folder: str | Path | None = None, shared: bool = False):
        if shared and folder is None:
            raise ValueError("a shared teacher cache needs a folder")
        self.needs = needs
        self.shared = shared
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        # One run at a time builds a shared folder resumably (under fixed part names).
        self._lock = self._try_lock() if shared else None
        resumable = self._lock is not None
        lengths = [len(w) for w in windows]
        maps = 1 if needs.average_heads else heads
        # Averaged maps are another field than per-head ones, so their names differ.
        att = "attention-mean" if needs.average_heads else "attention"
        self.logits = _Field("logits", lengths, lambda n: (n, num_labels), self.folder, shared, resumable)
        self.hidden = {i: _Field(f"hidden{i}", lengths, lambda n: (n, width), self.folder, shared, resumable)
                       for i in needs.hidden}
        self.attention = {i: _Field(f"{att}{i}", lengths, lambda n: (maps, n, n), self.folder, shared,
                                    resumable) for i in needs.attention}
        self.build_seconds = 0.0
        self.fetch_seconds = 0.0
        self.resumed_windows = 0  # windows an interrupted earlier build had already cached
        self._done = 0            # windows (longest first) this build has cached so far
        self._building: list[_Field] = []
        # Every field was there from an earlier run's shared cache: the teacher need not run.
        self.reused = all(f.ready for f in self.fields)

    def _try_lock(self):
        """The folder's build lock, or None when another run holds it (filelock: the
        system's lock on every platform, released when the holder dies)."""
        from filelock import FileLock, Timeout

        lock = FileLock(self._disk_folder / ".build.lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:  # another run is building here: this one builds privately
            return None
        return lock

    @property
    def _disk_folder(self) -> Path:
        """The folder of a cache on disk (the one kind with locks, progress and parts)."""
        if self.folder is None:
            raise ValueError("a teacher cache in memory has no folder")
        return self.folder

    @property
    def _progress_path(self) -> Path:
        return self._disk_folder / ".progress.json"

    def _read_progress(self) -> dict[str, int]:
        try:
            data = json.loads(self._progress_path.read_text(encoding="utf-8"))
            return {str(k): int(v) for k, v in data.get("windows_done", {}).items()}
        except (OSError, ValueError, AttributeError, TypeError):
            return {}

    def _save_progress(self) -> None:
        """Flush the parts being built, then record how many windows each holds (a
        part's earlier count stays for a field this run does not build)."""
        if not self._building or not any(f.resumable for f in self._building):
            return
        for f in self._building:
            f.flush()
        done = self._read_progress()
        done.update({f.name: self._done for f in self._building if f.resumable})
        tmp = self._progress_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"windows_done": done, "order": "longest first, ties by index"}),
                       encoding="utf-8")
        os.replace(tmp, self._progress_path)

    @property
    def fields(self) -> list[_Field]:
        return [self.logits, *self.hidden.values(), *self.attention.values()]

    @staticmethod
    def estimate_bytes(windows: Sequence[Window], needs: TeacherNeeds, num_labels: int, width: int,
                       heads: int) -> int:
        maps = 1 if needs.average_heads else heads
        per_token = num_labels + width * len(needs.hidden)
        squares = maps * len(needs.attention)
        return 2 * sum(len(w) * per_token + len(w) ** 2 * squares for w in windows)

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self.fields)

    def bytes_to_write(self) -> int:
        """The disk this cache's build still needs: the fields not yet there, less what
        an interrupted build's parts already hold (their files are sparse until written)."""
        if self.folder is None:
            return 0
        need = 0
        for f in self.fields:
            if f.ready:
                continue
            held = f.building.stat().st_blocks * 512 if f.kept and f.building else 0  # a kept part has its file
            need += max(f.nbytes - held, 0)
        return need

    def check_disk_space(self) -> None:
        """Raise :class:`DiskSpaceError` when the folder's disk cannot take the build
        (keeping a margin of 1 GiB for everything else), before a byte is written."""
        need = self.bytes_to_write()
        if not need:
            return
        free = shutil.disk_usage(self._disk_folder).free
        if need + DISK_MARGIN_BYTES > free:
            raise DiskSpaceError(
                f"the teacher's outputs need {need / 2**30:.1f} GiB on disk in {self._disk_folder.parent}, and "
                f"{free / 2**30:.1f} GiB are free (1 GiB kept for the rest): free some space (old shared caches "
                f"under {SHARED_CACHE_FOLDER} can go: each is rebuilt when needed), or pass --teacher-cache none "
                f"(the teacher runs at every step: slower, no disk)")

    def fill(self, teacher: torch.nn.Module, encoder: WordEncoder, windows: Sequence[Window],
             batch_size: int, reporter: ProgressReporter, device: torch.device | str = "cpu") -> None:
        """Run the teacher over every window (longest first, ``batch_size`` at a time)
        and keep the fields not already there; checks cancel between batches. A
        shared cache whose fields are all there does not run the teacher."""
        t0 = time.perf_counter()
        if self.reused:
            return
        logits = None if self.logits.ready else self.logits
        hidden = {layer: f for layer, f in self.hidden.items() if not f.ready}
        attention = {layer: f for layer, f in self.attention.items() if not f.ready}
        self._building = [f for f in self.fields if not f.ready]
        # The windows longest first (as length_sorted_batches orders them); an
        # interrupted build of these parts went this far down the list.
        ranked = [i for batch in length_sorted_batches([len(w) for w in windows], 1) for i in batch]
        progress = self._read_progress()
        start = min((progress.get(f.name, 0) if f.kept else 0) for f in self._building)
        self.resumed_windows = self._done = start
        order = [ranked[i:i + batch_size] for i in range(start, len(ranked), batch_size)]
        message = "caching the teacher's outputs" + (f" (resumed after {start} windows)" if start else "")
        reporter.stage("teacher-cache", total=len(order), message=message)
        saved = time.monotonic()
        with torch.no_grad():
            for step, idx in enumerate(order, 1):
                reporter.check()
                if time.monotonic() - saved > PROGRESS_EVERY_SECONDS:
                    self._save_progress()
                    saved = time.monotonic()
                batch = encoder.collate([windows[i] for i in idx], idx).to(device)
                out = _run(teacher, batch, self.needs)
                for row, i in enumerate(idx):
                    n = len(windows[i])
                    if logits is not None:
                        logits.put(i, out.logits[row, :n])
                    for layer, f in hidden.items():
                        f.put(i, out.hidden[layer][row, :n])
                    for layer, f in attention.items():
                        f.put(i, out.attention[layer][row, :, :n, :n])
                self._done += len(idx)
                reporter.emit(step=step)
        for f in self.fields:
            f.finish()
        self._building = []
        if self._lock is not None:
            self._progress_path.unlink(missing_ok=True)
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
        """Drop the data and the files of a disk cache (a shared cache keeps its
        finished fields, and the parts of a build stopped half way with a record of
        how far they got, for the next run to resume; a private part is deleted)."""
        resumable = self._lock is not None and self._done > 0 and bool(self._building)
        if resumable:
            self._save_progress()
        for f in self.fields:
            # A part an earlier build left stays, even when this run stopped before
            # adding to it (a disk-space refusal): the next run reads on from it.
            f.discard(keep_part=resumable or f.kept)
        if self._lock is not None:
            if not resumable and self._building:  # stopped before a window was cached
                self._progress_path.unlink(missing_ok=True)
            self._lock.release()  # releases the build lock
            self._lock = None
        self._building = []
        if self.folder is not None and not self.shared:
            for p in self.folder.glob("*.f16"):
                os.unlink(p)
        elif self.shared and not any(self._disk_folder.glob("*.f16")) and not any(self._disk_folder.glob("*.part")):
            # Cancelled before anything was cached: leave no empty cache behind
            # (a part, this run's to resume or another run's in progress, keeps it).
            for p in self._disk_folder.iterdir():
                p.unlink(missing_ok=True)
            for folder in (self._disk_folder, self._disk_folder.parent):
                with contextlib.suppress(OSError):  # not empty: another run's cache
                    folder.rmdir()


def weight_digests(weight_files: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Each weight file (sorted) with the SHA-256 of its contents: what a teacher's
    outputs kept on disk are keyed by, so a retrained teacher of the same name never
    reads another's."""
    out = []
    for path in sorted(Path(p) for p in weight_files):
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                digest.update(chunk)
        out.append((path, digest.hexdigest()))
    return out


def shared_cache_key(teacher_weights: Sequence[str | Path], windows: Sequence[Window], needs: TeacherNeeds,
                     device_type: str) -> tuple[str, dict]:
    """A shared cache's folder name and what it was made from (written beside it,
    for a person clearing old caches): a digest of the teacher's weight files, of
    every window's subword ids (so data, tokenizer, max length and context all
    count), of the attention form and of the device type (another kernel gives
    other low bits)."""
    h = hashlib.sha256()
    files = []
    for path, digest in weight_digests(teacher_weights):
        files.append({"file": path.name, "sha256": digest})
        h.update(bytes.fromhex(digest))
    data = hashlib.sha256()
    for w in windows:
        data.update(np.asarray(w.input_ids, dtype=np.int64).tobytes())
        data.update(b"|")
    h.update(data.digest())
    h.update(json.dumps([needs.attention_kind, device_type]).encode())
    about = {"teacher_weights": files, "windows": len(windows), "windows_sha256": data.hexdigest(),
             "attention_kind": needs.attention_kind, "device": device_type}
    return h.hexdigest()[:24], about


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
