"""The one training loop, shared by teacher fine-tuning and distillation.

How a new objective plugs in
----------------------------
An objective is any callable ``objective(batch, step, total_steps) -> (loss, terms)``:
``batch`` is one micro-batch from the batch source, already on the training device;
``step`` counts optimisation steps done so far (0-based) out of ``total_steps``, so a
schedule such as FastBioNER's phi(s) reads its progress from them; ``loss`` is the
scalar tensor to minimise; ``terms`` maps names to floats (``{"L_total": ...,
"L_SL": ..., "phi": ...}``) that appear, averaged over the step's micro-batches, in
every :class:`ProgressEvent`'s ``losses``. The objective holds references to the
modules it uses. Give the :class:`Trainer`:

- ``modules``: the trainable ``nn.Module`` objects by name (a student and a
  projection W_h, say); all their parameters are optimised, checkpointed and, at
  the end, set to the best evaluation's weights (unless ``config.keep_weights`` is
  ``"last"``);
- ``frozen``: modules only read (a teacher): moved to the device, put in eval
  mode, never optimised or saved;
- ``batches``: a :class:`BatchSource` (``len()`` micro-batches per epoch and
  ``epoch(e)`` giving them in an order fixed by ``e``, e.g.
  :class:`fastbioner.models.encoding.WindowBatches`);
- ``evaluate``: a callable returning devel metrics (``{"f1": ...}``), called with
  the modules in eval mode; ``config.selection_metric`` (higher is better) picks
  the best weights and drives early stopping.

:meth:`Trainer.steps` is a generator of :class:`StepResult` (the caller owns
printing and stopping); :meth:`Trainer.run` drives it with a
:class:`~fastbioner.base.jobs.ProgressReporter`. Cancel is checked before every
optimisation step. With a ``checkpoint_dir`` the loop saves, at epoch ends, every
``checkpoint_every_steps`` and on cancel, the weights, optimizer, scheduler, grad
scaler, RNG states, step and best metric; ``resume=True`` continues from there and
reaches the same step count (and, on a CPU, the same weights) as an uninterrupted
run, because a batch order depends only on ``(seed, epoch)``.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

import numpy as np
import torch
from torch import nn

from fastbioner.base import threads
from fastbioner.train import distributed, layer_rates
from fastbioner.train.checkpoints import TrainingState, load_checkpoint, save_checkpoint
from fastbioner.base.config import ConfigError, TrainingConfig
from fastbioner.base.errors import FastBioNERError
from fastbioner.base.jobs import Cancelled, ProgressReporter
from fastbioner.models.modeling import pick_device
from fastbioner.models.precision import cpu_has_bf16
from fastbioner.train.run_progress import diverged_at  # noqa: F401 - the runner imports it here; defined torch-free

Objective = Callable[[Any, int, int], "tuple[torch.Tensor, dict[str, float]]"]


class BatchSource(Protocol):
    def __len__(self) -> int: ...
    def epoch(self, epoch: int) -> Iterable[Any]: ...


@dataclass
class StepResult:
    step: int                     # optimisation steps done, 1-based after this one
    total_steps: int
    epoch: int                    # 0-based epoch this step belongs to
    losses: dict[str, float]
    learning_rate: float
    metrics: dict[str, float] | None = None   # set when this step was evaluated
    improved: bool = False


@dataclass
class TrainingResult:
    steps: int
    total_steps: int
    best_step: int | None
    best_metrics: dict[str, float] | None
    history: list[dict[str, float]]        # one entry per evaluation: step, epoch, metrics
    stopped_early: bool
    resumed_from: int
    epoch_seconds: list[float] = field(default_factory=list)  # training time per epoch, eval excluded
    seconds: float = 0.0
    steps_per_epoch: int = 0
    # Padded positions of each optimisation step of the first epoch, in order, when the
    # batch source can say (``padded_sizes``): run-time estimates weigh steps by them.
    step_sizes: list[int] = field(default_factory=list)
    # Seconds of forward and backward passes of each step run (the rest of a step,
    # the optimiser update and batching, does not grow with the batch).
    compute_seconds: list[float] = field(default_factory=list)


def move_to(obj: Any, device: torch.device) -> Any:
    """Tensors, objects with ``.to`` (a Batch), dicts, lists and tuples, recursively."""
    if isinstance(obj, torch.Tensor) or (hasattr(obj, "to") and not isinstance(obj, (dict, list, tuple))):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: move_to(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_to(v, device) for v in obj)
    return obj


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def linear_warmup_decay(warmup: int, total: int) -> Callable[[int], float]:
    """Learning-rate factor: 0 -> 1 over ``warmup`` steps, then linearly to 0 at ``total``."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def _param_groups(modules: Mapping[str, nn.Module], weight_decay: float,
                  learning_rates: Mapping[str, float] | None = None,
                  scales: Mapping[int, tuple[float, float]] | None = None) -> list[dict]:
    """Decayed and undecayed parameters, and a pair of groups of their own for each
    module given its own peak learning rate (a projection W_h, say) and for each rate
    ``scales`` gives a parameter (``id(p) -> (the module's peak rate, factor)``: DRET's
    layer-wise rates). The groups at the config's rate come first: the rate a progress
    line shows is the first group's."""
    learning_rates = learning_rates or {}
    scales = scales or {}
    groups: dict[float | None, tuple[list, list]] = {None: ([], [])}
    seen: set[int] = set()
    for name, module in modules.items():
        for p in module.parameters():
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            lr = learning_rates.get(name)
            if id(p) in scales:
                peak, factor = scales[id(p)]
                lr = (lr if lr is not None else peak) * factor
            decay, no_decay = groups.setdefault(lr, ([], []))
            # Biases and LayerNorm weights (1-D) are not decayed, as in BERT.
            (decay if p.ndim >= 2 else no_decay).append(p)
    out = []
    for lr, (decay, no_decay) in groups.items():
        extra = {} if lr is None else {"lr": lr}
        out += [{"params": decay, "weight_decay": weight_decay, **extra},
                {"params": no_decay, "weight_decay": 0.0, **extra}]
    return out


# Devices torch's fused AdamW kernel runs on, and the parameter types it takes.
FUSED_ADAMW_DEVICES = ("cpu", "cuda")
FUSED_ADAMW_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _adamw(groups: list[dict], lr: float, device: torch.device) -> torch.optim.AdamW:
    """AdamW with torch's fused kernel where it runs: the same update, one pass over
    each tensor. torch's default on the CPU is a Python loop of several tensor ops per
    parameter, which on a 6-layer, 66M-parameter student took 40% of a training step
    (py-spy on a running row, one thread): 0.56 s a step against 0.05 s fused, the
    weights equal to float rounding (1.5e-8 after 6 steps)."""
    params = [p for g in groups for p in g["params"]]
    fused = device.type in FUSED_ADAMW_DEVICES and all(p.dtype in FUSED_ADAMW_DTYPES for p in params)
    return torch.optim.AdamW(groups, lr=lr, fused=True if fused else None)


class Trainer:
    """See the module docstring."""

    def __init__(self, modules: Mapping[str, nn.Module], objective: Objective, batches: BatchSource,
                 config: TrainingConfig, *, evaluate: Callable[[], dict[str, float]] | None = None,
                 frozen: Sequence[nn.Module] = (), checkpoint_dir: str | Path | None = None,
                 resume: bool = False, fingerprint: dict | None = None,
                 check: Callable[[], None] | None = None,
                 learning_rates: Mapping[str, float] | None = None):
        if len(batches) == 0:
            raise FastBioNERError("no training data: the batch source is empty")
        self.modules = dict(modules)
        self.objective = objective
        self.batches = batches
        self.config = config
        self.evaluate = evaluate
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.fingerprint = fingerprint if fingerprint is not None else config.to_dict()
        self._check = check
        self.device = pick_device(distributed.device_for_rank(config.device))
        # 0: the cores less what other work keeps busy
        torch.set_num_threads(threads.choose(config.threads or None).threads)
        # Several processes (torchrun): each takes its share of the batches; rank 0 alone
        # evaluates and checkpoints; the world size is part of what a resume must match.
        self.rank, self.world = distributed.rank(), distributed.world_size()
        if self.world > 1:
            self.batches = batches = distributed.ShardedBatches(batches, self.rank, self.world)
            self.fingerprint = {**self.fingerprint, "world_size": self.world}
            if self.rank != 0:
                self.evaluate = None

        self.steps_per_epoch = math.ceil(len(batches) / config.grad_accum_steps)
        total = self.steps_per_epoch * config.epochs
        self.total_steps = min(total, config.max_steps) if config.max_steps else total

        for m in self.modules.values():
            m.to(self.device)
        for m in frozen:
            m.to(self.device).eval().requires_grad_(False)
        # ``learning_rates``: peak rates of named modules that differ from the config's; DRET's
        # knobs freeze the main module's (the first's) embeddings and scale its parts' rates.
        main_module = next(iter(self.modules.values()))
        if config.freeze_embeddings:
            layer_rates.freeze_embeddings(main_module)
        scales = {pid: (config.learning_rate, f) for pid, f in layer_rates.rate_scales(main_module, config).items()}
        self.optimizer = _adamw(_param_groups(self.modules, config.weight_decay, learning_rates, scales),
                                config.learning_rate, self.device)
        # The main module (the first) trains through DDP, which averages its gradients
        # across ranks during the backward pass; the small parts beside it (W_h) are
        # averaged by hand once per step (DDP cannot wrap a module called once per layer).
        self._ddp: dict[str, nn.parallel.DistributedDataParallel] = {}
        if self.world > 1:
            main = next(iter(self.modules))
            self._ddp = {main: distributed.wrap(self.modules[main], self.device)}
            use = getattr(objective, "use_modules", None)
            if use is None:
                raise FastBioNERError("this objective cannot train on several processes (no use_modules)")
            use(self._ddp)
        warmup = int(config.warmup_ratio * self.total_steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, linear_warmup_decay(warmup, self.total_steps))
        self._autocast, self.scaler = self._mixed_precision()

        self.state = TrainingState()
        self._best_weights: dict[str, dict[str, torch.Tensor]] | None = None
        self._compute_seconds: list[float] = []  # this process's steps only, not a resumed run's
        seed_everything(config.seed)
        if resume and self.checkpoint_dir is not None:
            self._resume()
        self.resumed_from = self.state.step

    def _mixed_precision(self):
        if self.device.type == "cpu" and self.config.cpu_bf16:
            if not cpu_has_bf16():
                raise FastBioNERError("--cpu-bf16: this CPU has no native bfloat16 (AVX512-BF16 or AMX), "
                                      "where bf16 training is emulated and slower than fp32; leave it off")
            # Losses, the CRF and the distillation terms cast to fp32 themselves.
            return (lambda: torch.autocast("cpu", dtype=torch.bfloat16)), None
        if self.device.type != "cuda" or not self.config.mixed_precision:
            return contextlib.nullcontext, None
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
        return (lambda: torch.autocast("cuda", dtype=dtype)), scaler

    # -- checkpoints ----------------------------------------------------------------

    def _resume(self) -> None:
        assert self.checkpoint_dir is not None  # resumed only from a checkpoint folder
        loaded = load_checkpoint(self.checkpoint_dir, self.modules, self.optimizer, self.scheduler,
                                 self.scaler)
        if loaded is None:
            return
        state, best = loaded
        if _without_default_knobs(state.fingerprint) != _without_default_knobs(_jsonable(self.fingerprint)):
            raise ConfigError(f"{self.checkpoint_dir}: the checkpoint was made with other settings; "
                              f"start afresh (without resume) or use the same settings")
        if state.total_steps != self.total_steps:
            raise ConfigError(f"{self.checkpoint_dir}: the checkpoint plans {state.total_steps} steps, "
                              f"this run {self.total_steps}; the training data changed")
        self.state, self._best_weights = state, best

    def _save_checkpoint(self) -> None:
        if self.checkpoint_dir is None or self.rank != 0:
            return
        self.state.fingerprint = _jsonable(self.fingerprint)
        self.state.total_steps = self.total_steps
        save_checkpoint(self.checkpoint_dir, self.state, self.modules, self.optimizer,
                        self.scheduler, self.scaler, self._best_weights)
        self.state.checkpointed_step = self.state.step

    # -- the loop -------------------------------------------------------------------

    def steps(self) -> Iterator[StepResult]:
        cfg, st = self.config, self.state
        accum = cfg.grad_accum_steps
        n_batches = len(self.batches)
        try:
            if self._eval_due(st.step) and st.last_eval_step != st.step and st.step > 0:
                self._evaluate_now()  # a cancel came during this step's evaluation
            while st.step < self.total_steps and not st.stopped:
                epoch = st.step // self.steps_per_epoch
                skip = (st.step % self.steps_per_epoch) * accum
                t_epoch, eval_time = time.monotonic(), 0.0
                group: list[Any] = []
                for i, batch in enumerate(self.batches.epoch(epoch)):
                    if i < skip:
                        continue
                    group.append(batch)
                    if len(group) < accum and i < n_batches - 1:
                        continue
                    result = self._optimisation_step(group, epoch)
                    group = []
                    if self._eval_due(st.step):
                        t0 = time.monotonic()
                        result.metrics, result.improved = self._evaluate_now()
                        eval_time += time.monotonic() - t0
                        if self.world > 1:  # rank 0's early stop stops every rank
                            st.stopped = distributed.broadcast_flag(st.stopped)
                    if st.step % self.steps_per_epoch == 0:
                        st.epoch_seconds.append(time.monotonic() - t_epoch - eval_time)
                    if self._checkpoint_due(st.step):
                        self._save_checkpoint()
                    yield result
                    if st.step >= self.total_steps or st.stopped:
                        break
        except Cancelled:
            if self.checkpoint_dir is not None and st.step > st.checkpointed_step:
                self._save_checkpoint()  # resume continues from the last finished step
            raise
        if self._best_weights is not None and self.config.keep_weights == "best":
            for name, weights in self._best_weights.items():
                self.modules[name].load_state_dict(weights)

    def _optimisation_step(self, group: list[Any], epoch: int) -> StepResult:
        if self._check is not None:
            self._check()
        st = self.state
        for m in self.modules.values():
            m.train()
        sums: dict[str, float] = {}
        t_compute = time.perf_counter()
        for j, micro in enumerate(group):
            micro = move_to(micro, self.device)
            # DDP averages gradients once per optimisation step: not after each micro-batch.
            last = j == len(group) - 1
            with contextlib.ExitStack() as sync:
                if not last:
                    for wrapped in self._ddp.values():
                        sync.enter_context(wrapped.no_sync())
                with self._autocast():
                    loss, terms = self.objective(micro, st.step, self.total_steps)
                if self.scaler is None and not torch.isfinite(loss):
                    raise FastBioNERError(f"training diverged: the loss is {loss.item()} at step "
                                          f"{st.step + 1}; try a lower learning rate")
                loss = loss / len(group)
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + float(v) / len(group)
        self._compute_seconds.append(time.perf_counter() - t_compute)
        if self.world > 1:
            self._average_side_gradients()
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.config.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        lr = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        st.step += 1
        return StepResult(st.step, self.total_steps, epoch, sums, float(lr))

    def _average_side_gradients(self) -> None:
        """Average the gradients of the modules DDP does not wrap across the ranks (a
        missing gradient counts as zeros, so every rank reduces the same tensors)."""
        for name, module in self.modules.items():
            if name in self._ddp:
                continue
            for p in module.parameters():
                if not p.requires_grad:
                    continue
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                torch.distributed.all_reduce(p.grad)
                p.grad /= self.world

    def _eval_due(self, step: int) -> bool:
        every = self.config.eval_every_steps
        return (step % self.steps_per_epoch == 0 or step == self.total_steps
                or bool(every and step % every == 0))

    def _checkpoint_due(self, step: int) -> bool:
        every = self.config.checkpoint_every_steps
        return self.checkpoint_dir is not None and step < self.total_steps and (
            step % self.steps_per_epoch == 0 or bool(every and step % every == 0))

    def _evaluate_now(self) -> tuple[dict[str, float] | None, bool]:
        st = self.state
        metrics = None
        if self.evaluate is not None:
            for m in self.modules.values():
                m.eval()
            with torch.inference_mode():
                metrics = dict(self.evaluate())
            name = self.config.selection_metric
            if name not in metrics:
                raise FastBioNERError(f"evaluation returned no {name!r} (got {', '.join(metrics)})")
        st.last_eval_step = st.step
        epoch = (st.step - 1) // self.steps_per_epoch
        if metrics is not None:
            st.history.append({"step": st.step, "epoch": epoch + 1, **metrics})
            score = float(metrics[self.config.selection_metric])
            if st.best_metric is None or score > st.best_metric:
                st.best_metric, st.best_step, st.bad_evals = score, st.step, 0
                st.best_metrics = dict(metrics)
                if self.config.keep_weights == "best":  # a run that keeps its last weights copies none
                    self._best_weights = {n: {k: v.detach().to("cpu", copy=True)
                                              for k, v in m.state_dict().items()}
                                          for n, m in self.modules.items()}
                return metrics, True
            st.bad_evals += 1
            patience = self.config.early_stopping_patience
            if patience and st.bad_evals >= patience:
                st.stopped = True
        return metrics, False

    def result(self, seconds: float = 0.0) -> TrainingResult:
        st = self.state
        return TrainingResult(st.step, self.total_steps, st.best_step, st.best_metrics,
                              list(st.history), st.stopped, self.resumed_from,
                              list(st.epoch_seconds), seconds, self.steps_per_epoch, self.step_sizes(),
                              list(self._compute_seconds))

    def step_sizes(self) -> list[int]:
        sizes = getattr(self.batches, "padded_sizes", None)
        if sizes is None:
            return []
        per_batch = sizes(0)
        accum = self.config.grad_accum_steps
        return [sum(per_batch[i:i + accum]) for i in range(0, len(per_batch), accum)]

    def run(self, reporter: ProgressReporter, stage: str = "train") -> TrainingResult:
        """Drive :meth:`steps`, one progress event per optimisation step."""
        if self._check is None:
            self._check = reporter.check
        t0 = time.monotonic()
        epochs = math.ceil(self.total_steps / self.steps_per_epoch)
        reporter.stage(stage, total=self.total_steps, start_step=self.state.step,
                       message=f"resuming at step {self.state.step}" if self.state.step else stage)
        for r in self.steps():
            message = f"epoch {r.epoch + 1}/{epochs}"
            if r.metrics is not None:
                shown = ", ".join(f"{k} {v:.4f}" for k, v in r.metrics.items()
                                  if isinstance(v, (int, float)))
                message += f": devel {shown}" + (" (best so far)" if r.improved else "")
            reporter.emit(step=r.step, total=r.total_steps, epoch=r.epoch + 1, losses=r.losses,
                          metrics=r.metrics or {}, message=message, optimisation_step=True)
        return self.result(time.monotonic() - t0)


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


# DRET's knobs at their defaults: a checkpoint saved before they existed resumes under them.
_KNOB_DEFAULTS = {"freeze_embeddings": False, "embedding_lr_scale": 1.0, "layer_lr_decay": 1.0, "head_lr_scale": 1.0}


def _without_default_knobs(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_default_knobs(v) for k, v in obj.items()
                if not (k in _KNOB_DEFAULTS and v == _KNOB_DEFAULTS[k])}
    if isinstance(obj, list):
        return [_without_default_knobs(v) for v in obj]
    return obj
