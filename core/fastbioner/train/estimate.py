"""How long a training run will take on this machine, measured before it starts.

:func:`estimate_run` runs the real job (teacher fine-tuning or distillation) for a
few optimisation steps on the real data, with the real model, batch size, device and
threads, into a throwaway registry, and extrapolates:

- the steps: the measured steps (the first is left out: it pays for lazy
  initialisation), split into what grows with the batch (forward and backward passes),
  scaled to the epoch's mean padded positions per step, and what does not (the
  optimiser update, batching), times the full run's steps;
- distillation's teacher: the measurement runs the teacher live at every step and
  times its forward passes; a real run with a teacher cache pays one teacher pass
  over the data (the cache build) instead of one per epoch;
- several teachers (``--teacher A --teacher B``): each tags every training sentence
  once before the first step. The measurement runs the first teacher alone (its pass
  is the one timed above) and times every teacher on the same small sample of
  training sentences: each one's pass is the first's scaled by their ratio, so
  estimating costs seconds, not a full pass of every teacher;
- devel scoring: a forward pass is taken as a third of a training step (a backward
  pass costs about twice a forward), scaled to the devel windows as the run's
  context cuts them, once per evaluation;
- setting up: loading the models and encoding the data, as measured;
- the teacher cache's size, exact (from the windows the run encodes), and where the
  run would keep it: memory, or the models folder's disk, whose free space is read
  (a cache bigger than the disk can take stops the run before its first step).

Nothing of the measuring run is kept; it cancels cleanly like any job.
"""

from __future__ import annotations

import bisect
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from fastbioner.base.jobs import CancelToken, EventCallback, ProgressEvent, ProgressReporter, run_job, sub_progress
from fastbioner.base.errors import DISK_MARGIN_BYTES
from fastbioner.io.formats import read_tagged_files
from fastbioner.models.modeling import load_token_classifier, load_tokenizer, model_labels, pick_device
from fastbioner.models.registry import Registry
from fastbioner.models.shipped import model_entry
from fastbioner.train.distill.config import DistillConfig

# The runs it measures (torch, transformers) are imported when measuring: --estimate's parsing needs none.


@dataclass(frozen=True)
class RunEstimate:
    total_seconds: float
    setup_seconds: float          # models loaded and data encoded, as measured
    step_seconds: float           # one optimisation step, teacher excluded (distillation)
    steps: int                    # optimisation steps of the full run
    teacher_seconds: float        # one teacher pass over the training data (0 for a teacher run)
    evaluation_seconds: float     # all devel scoring of the run
    evaluations: int
    measured_steps: int
    ensemble_seconds: float = 0.0  # several teachers' soft labels: each one's pass over the training data
    teachers: int = 1
    cache_bytes: int = 0          # the teacher cache the run would build (0: none)
    cache_place: str = ""         # "memory", "disk" or "shared" (the models folder's disk); "": no cache
    disk_free_bytes: int = 0      # free on the models folder's disk, read when the cache goes there
    load: float = 0.0             # the machine's load average while measuring (the higher of start and end)
    cores: int = 0                # its cores

    @property
    def busy(self) -> bool:
        """Measured while other work wanted more than every core: the steps timed may
        have had the cores to themselves more than the run will, so the figure may be low."""
        return self.cores > 0 and self.load > self.cores

    def describe(self) -> str:
        parts = [f"{self.steps:,} steps at {self.step_seconds:.2f} s"]
        if self.teachers > 1:
            parts.append(f"soft labels of {self.teachers} teachers {duration_words(self.ensemble_seconds)}")
        if self.teacher_seconds:
            parts.append(f"teacher pass {duration_words(self.teacher_seconds)}")
        if self.evaluations:
            parts.append(f"{self.evaluations} devel scoring{'s' if self.evaluations > 1 else ''} "
                         f"{duration_words(self.evaluation_seconds)}")
        parts.append(f"setup {duration_words(self.setup_seconds)}")
        text = (f"about {duration_words(self.total_seconds)} ({'; '.join(parts)}), "
                f"measured from {self.measured_steps} steps on this machine")
        if self.busy:
            text += (f"; the machine was busy while measuring (load {self.load:.1f} on {self.cores} cores), so "
                     "the figure may be low")
        return text + self._cache_text()

    def _cache_text(self) -> str:
        if not self.cache_bytes or not self.cache_place:
            return ""
        size = _bytes(self.cache_bytes)
        if self.cache_place == "memory":
            return f"; the teacher cache takes {size} of memory"
        text = f"; the teacher cache takes {size} on disk ({_bytes(self.disk_free_bytes)} free)"
        if self.cache_bytes + DISK_MARGIN_BYTES > self.disk_free_bytes:
            text += (": more than the disk can take (1 GiB is kept free), so the run would stop before "
                     "its first step; free some space or pass --teacher-cache none")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def machine_load() -> tuple[float, int]:
    """(the one-minute load average, the cores); (0, cores) where the system keeps no load average."""
    import os

    cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0], cores
    except (AttributeError, OSError):  # Windows
        return 0.0, cores


def _bytes(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _free_bytes(folder: Path) -> int:
    """Free space on the disk of ``folder``, or of its nearest existing parent (a
    registry not created yet)."""
    for place in (folder, *folder.parents):
        if place.exists():
            return shutil.disk_usage(place).free
    return 0


def duration_words(seconds: float) -> str:
    """A wall time in the words an estimate uses: "40 s", "12 min", "1.5 h"."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_run(config, *, registry: Registry | None = None, steps: int = 10,
                 on_event: Optional[EventCallback] = None,
                 cancel: Optional[CancelToken] = None) -> RunEstimate:
    """Estimate the wall time of ``config`` (a :class:`~fastbioner.base.config.TeacherConfig`
    or a :class:`~fastbioner.train.distill.config.DistillConfig`) from ``steps`` real steps."""
    if steps < 2:
        raise ValueError("at least 2 steps are needed to measure one")
    config.validate()
    registry = registry or Registry()
    distilling = isinstance(config, DistillConfig)
    probe_training = replace(config.training, max_steps=steps, checkpoint_every_steps=0,
                             early_stopping_patience=0)
    probe = replace(config, training=probe_training, dev_file=None)
    method = config.method.to_method() if distilling else None
    several = method is not None and bool(config.extra_teachers) and method.uses("soft")  # distilling
    if distilling:
        from fastbioner.train.distill.runner import model_path

        # The teacher as the real run finds it, but run live so its cost is timed apart;
        # the other teachers are timed on a sample (_relative_teacher_costs), not here.
        # The probe registers into a scratch registry, where the real one's names do not
        # resolve: every model the run reads is named by its folder (a student started
        # from a registered model, a small student's --student-embeddings).
        student = config.student
        if student.source != "teacher" and not student.small:
            student = replace(student, source=model_path(student.source, registry))
        if student.small and student.embeddings != "teacher":
            student = replace(student, embeddings=model_path(student.embeddings, registry))
        probe = replace(probe, teacher=str(model_entry(config.teacher, registry).path), teacher_cache="none",
                        extra_teachers=[], student=student)

    def job(reporter: ProgressReporter) -> RunEstimate:
        load_before = machine_load()
        step_times: list[float] = []
        first_step_at: list[float] = []

        def watch(event: ProgressEvent) -> None:
            if event.optimisation_step and event.step > len(step_times) and event.step > 0:
                step_times.append(time.monotonic())
                if event.step == 1:
                    first_step_at.append(event.elapsed_seconds)
                inner.emit(step=event.step, total=steps, message=f"measured step {event.step} of {steps}")
            inner.check()

        inner = sub_progress(reporter, "estimate")
        inner.stage("estimate", total=steps, message=f"timing {steps} steps")
        with tempfile.TemporaryDirectory(prefix="fastbioner-estimate-") as root:
            scratch = Registry(root)
            if distilling:
                from fastbioner.train.distill.runner import distill
                distilled = distill(probe, "estimate", registry=scratch, on_event=watch, cancel=reporter.cancel)
                teacher_calls = distilled.teacher_calls
                cache_bytes = int(distilled.teacher_cache.get("cache_bytes", 0))
                training = distilled.training
            else:
                from fastbioner.train.teacher import train_teacher
                trained = train_teacher(probe, "estimate", registry=scratch, on_event=watch,
                                        cancel=reporter.cancel)
                training = trained.training
                teacher_calls = []
                cache_bytes = 0
        measured = training.steps
        gaps = [b - a for a, b in zip(step_times, step_times[1:])]
        if not gaps:
            raise ValueError("the measuring run took fewer than 2 steps")
        # A step is a part that grows with the batch (forward and backward passes, the
        # live teacher's included) and a part that does not (the optimiser update over
        # every weight, batching). Batches are grouped by length, so the few measured
        # steps may be shorter or longer than the epoch's typical one: the growing part
        # is scaled by the epoch's mean padded positions per step against theirs.
        timed = range(1, measured)  # the first step pays for lazy initialisation
        sizes = training.step_sizes  # of the first epoch; unknown, or a probe past it: all alike
        if len(sizes) < measured:
            sizes = [1] * measured
        compute = training.compute_seconds
        typical = sum(sizes) / len(sizes)
        fixed = max(0.0, sum(gaps[k - 1] - compute[k] for k in timed) / len(timed))
        # The live teacher's part of each step, taken out step by step and over the same
        # timed steps: its first call pays for lazy initialisation too, and a large
        # teacher over a small student (a CNN under MPNet) is most of every step, so
        # counting that call against the others left the student's step at nothing.
        teacher = _teacher_per_step(teacher_calls, step_times[:measured])
        timed_positions = sum(sizes[k] for k in timed)
        per_position = sum(max(0.0, compute[k] - teacher[k]) for k in timed) / timed_positions
        teacher_per_step = sum(teacher[k] for k in timed) / timed_positions * typical
        step = max(1e-6, fixed + per_position * typical)
        per_epoch = training.steps_per_epoch
        total_steps = per_epoch * config.training.epochs
        if config.training.max_steps:
            total_steps = min(total_steps, config.training.max_steps)
        teacher_pass = teacher_per_step * per_epoch if distilling else 0.0
        ensemble = 0.0
        if several and method is not None:
            ensemble = teacher_pass * sum(_relative_teacher_costs(config, registry, inner))
            if not method.reads_teacher(soft_from_ensemble=True):
                teacher_pass = 0.0  # soft and gold labels only: the run builds no cache of the first teacher
        evaluations, scoring = _devel_scoring(config, registry, total_steps, per_epoch, step)
        setup = max(0.0, first_step_at[0] - sum(gaps) / len(gaps)) if first_step_at else 0.0
        total = setup + step * total_steps + teacher_pass + ensemble + scoring
        # Where the real run keeps its cache ("" for none: the teacher runs at every step).
        place = config.cache_place(cache_bytes) if teacher_pass and cache_bytes else ""
        place = "" if place == "none" else place
        free = _free_bytes(registry.root) if place in ("disk", "shared") else 0
        # Unrounded: describe() rounds for people; a short probe's parts can be a few ms.
        load, cores = machine_load()
        return RunEstimate(total, setup, step, total_steps, teacher_pass, scoring,
                           evaluations, measured, ensemble, 1 + len(config.extra_teachers) if several else 1,
                           cache_bytes if place else 0, place, free, max(load, load_before[0]), cores)

    return run_job(job, on_event, cancel)


def _teacher_per_step(calls: list[tuple[float, float]], step_ends: list[float]) -> list[float]:
    """The live teacher's seconds in each measured step, from its calls (``(start,
    seconds)``) and the time each step ended (both ``time.monotonic()``): a call belongs
    to the first step that ended after it started. Calls before the first step ended
    (calibration's, the first step's own) count for the first step, which the estimate
    leaves out."""
    per_step = [0.0] * len(step_ends)
    for started, seconds in calls:
        k = bisect.bisect_left(step_ends, started)
        if k < len(step_ends):
            per_step[k] += seconds
    return per_step


def _relative_teacher_costs(config, registry: Registry, reporter: ProgressReporter,
                            sample: int = 24) -> list[float]:
    """Each teacher's time to tag the same training sentences (an even sample of
    ``sample``), over the first teacher's: the first teacher's pass, timed by the
    probe, times their sum is the soft-label passes of them all. Each teacher is
    loaded, warmed on two sentences (lazy initialisation is not timed), timed twice
    and released before the next."""
    from fastbioner.train.distill.ensemble import word_logits

    sentences = [s.words for s in read_tagged_files(config.train_files)]
    picked = sentences[::max(1, len(sentences) // sample)][:sample]
    enc, device = config.encoding, pick_device(config.training.device)
    seconds = []
    for name in [config.teacher, *config.extra_teachers]:
        path = registry.resolve(name).path
        model, tokenizer = load_token_classifier(path), load_tokenizer(path)
        timings = []
        for words in (picked[:2], picked, picked):  # a warm-up, then the quicker of two timings:
            started = time.perf_counter()           # another job's burst of load is not the teacher's cost
            word_logits(model, tokenizer, model_labels(model), words, enc.max_length, enc.window_overlap,
                        config.training.eval_batch_size, reporter, device, name)
            timings.append(time.perf_counter() - started)
        seconds.append(max(min(timings[1:]), 1e-9))
        del model
    return [s / seconds[0] for s in seconds]


def _devel_scoring(config, registry: Registry, total_steps: int, per_epoch: int,
                   step_seconds: float) -> tuple[int, float]:
    if not config.dev_file:
        return 0, 0.0
    every = config.training.eval_every_steps or per_epoch
    evaluations = max(1, math.ceil(total_steps / every))
    per_pass = _devel_windows(config, registry) / config.training.batch_size * step_seconds / 3
    return evaluations, evaluations * per_pass


def _devel_windows(config, registry: Registry) -> int:
    """The windows devel scoring reads, as the run's context cuts them: a training
    step's windows are as long as the devel ones, so its time scales to the scoring
    by their count (one per sentence but for sentence and document context; with
    packed context a document's sentences share a few). Counted with the tokenizer
    of the model trained (of the teacher for a distillation: a student's splits
    words about alike, or is the same)."""
    from fastbioner.models import packing
    from fastbioner.models.encoding import WordEncoder
    from fastbioner.train.runs import document_keys

    dev = read_tagged_files([config.dev_file])
    if config.encoding.context != "packed":  # a window per sentence (a long one: a few); no tokenizer needed
        return len(dev)
    base = getattr(config, "base_model", None) or registry.resolve(config.teacher).path
    enc = config.encoding
    encoder = WordEncoder(load_tokenizer(base), None, enc.max_length, enc.window_overlap)
    windows, _, _ = packing.encode(encoder, enc.context, [s.words for s in dev],
                                   documents=document_keys(dev, enc.context, str(config.dev_file)))
    return len(windows)
