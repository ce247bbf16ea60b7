"""Training on several processes (``torchrun``): ranks, sharded batches, and
gradients synchronised by DistributedDataParallel.

Under ``torchrun --nproc_per_node=N fastbioner train-teacher|distill ...`` every
process runs the same command; :func:`init_from_env` joins them (NCCL on GPUs, gloo
on CPUs). The training loop (:class:`fastbioner.train.training.Trainer`) then wraps each
trainable module in DDP (gradients averaged across ranks in the backward pass,
``no_sync`` for all but the last micro-batch of a gradient-accumulation group),
feeds each rank every N-th batch of the epoch (the same count on every rank), and
lets rank 0 alone evaluate, checkpoint, report progress and register the model.
The world size is part of a run's fingerprint: a run resumes only with as many
processes as it started with.

One process (no ``torchrun``) is rank 0 of 1 and nothing here changes anything.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

import torch
from torch.nn.parallel import DistributedDataParallel


def initialised() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank() -> int:
    return torch.distributed.get_rank() if initialised() else 0


def world_size() -> int:
    return torch.distributed.get_world_size() if initialised() else 1


def is_main() -> bool:
    return rank() == 0


def init_from_env() -> bool:
    """Join the process group ``torchrun`` describes in the environment (``WORLD_SIZE``
    above 1); returns whether this process is one of several. A GPU process takes
    the GPU of its local rank."""
    if initialised():
        return True
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
    return True


def leave() -> None:
    """Leave the process group before the process exits. A process that exits with its
    gloo group still alive can abort in the group's own teardown ("terminate called
    without an active exception", exit -6), failing a run that trained and registered
    fine (pytorch/pytorch#190489); every rank calls this once its last collective is
    behind it."""
    if initialised():
        torch.distributed.destroy_process_group()


def exit_process(code: int) -> None:
    """End a process that was one of several ranks without the interpreter's teardown,
    once its outputs are written and the group is left: gloo's threads can still hold
    tensors then, and their clean-up during finalisation aborts the process now and
    then (SIGABRT after a run that trained and registered fine, pytorch/pytorch#190489).
    A process that was not one of several returns and exits as usual."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def device_for_rank(spec: str) -> str:
    """``auto``/``cuda`` on a multi-process GPU run means this rank's own GPU."""
    if initialised() and torch.cuda.is_available() and spec in ("auto", "cuda"):
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return spec


class ShardedBatches:
    """This rank's share of a batch source: every ``world``-th batch of each epoch,
    starting at ``rank``, and the same number on every rank (the last few batches of
    an epoch that cannot go to every rank are left out, as DistributedSampler's
    ``drop_last`` does), so all ranks take the same number of steps."""

    def __init__(self, source: Any, rank: int, world: int):
        self.source, self.rank, self.world = source, rank, world

    def __len__(self) -> int:
        return len(self.source) // self.world

    def epoch(self, epoch: int) -> Iterator[Any]:
        keep = len(self) * self.world
        for i, batch in enumerate(self.source.epoch(epoch)):
            if i >= keep:
                break
            if i % self.world == self.rank:
                yield batch

    def padded_sizes(self, epoch: int) -> list[int]:
        sizes = getattr(self.source, "padded_sizes", None)
        if sizes is None:
            return []
        keep = len(self) * self.world
        return [s for i, s in enumerate(sizes(epoch)[:keep]) if i % self.world == self.rank]


def wrap(module: torch.nn.Module, device: torch.device) -> torch.nn.parallel.DistributedDataParallel:
    """DDP around a trainable module. ``find_unused_parameters``: a term with no weight
    at some step (phi reaches 0) leaves parts such as W_h without a gradient."""
    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids, find_unused_parameters=True)


def broadcast_flag(value: bool) -> bool:
    """Rank 0's ``value`` on every rank (an early stop decided by its evaluation)."""
    if not initialised():
        return value
    box = [bool(value)]
    torch.distributed.broadcast_object_list(box, src=0)
    return bool(box[0])
