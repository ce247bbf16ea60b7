"""Watching a run from outside (fastbioner.checkpoint_progress, fastbioner.research.diverged_at): what the
research queue reads instead of the trainer's checkpoint files, checked on a checkpoint
the trainer itself wrote."""

from __future__ import annotations

import subprocess
import sys

import torch

import fastbioner
import fastbioner.research
from fastbioner.train.checkpoints import TrainingState, save_checkpoint
from fastbioner.models.registry import Registry
from fastbioner.train.runs import checkpoint_folder


def _checkpoint(registry: Registry, name: str, state: TrainingState) -> None:
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    save_checkpoint(checkpoint_folder(registry, name), state, {"model": model}, optimizer, scheduler, None, None)


def test_a_runs_progress_is_read_from_its_last_checkpoint(tmp_path):
    registry = Registry(tmp_path / "models")
    assert fastbioner.checkpoint_progress("student", registry.root) is None  # not started
    history = [{"step": 95, "f1": 0.61}, {"step": 190, "f1": 0.72}]
    _checkpoint(registry, "student", TrainingState(step=190, total_steps=570, best_metric=0.72, best_step=190,
                                                  history=history))
    _checkpoint(registry, "student", TrainingState(step=200, total_steps=570, best_metric=0.72, best_step=190,
                                                  history=history))  # the latest one counts
    progress = fastbioner.checkpoint_progress("student", registry.root)
    assert progress["step"] == 200 and progress["total_steps"] == 570 and progress["best_step"] == 190
    assert progress["history"] == history and progress["written"] > 0
    assert "rng" not in progress and "fingerprint" not in progress  # where it stands, not how to resume
    assert fastbioner.checkpoint_progress("other", registry.root) is None


def test_the_default_registry_is_the_users(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTBIONER_HOME", str(tmp_path))
    _checkpoint(Registry(), "teacher", TrainingState(step=3, total_steps=9))
    assert fastbioner.checkpoint_progress("teacher")["step"] == 3


def test_a_divergence_is_a_fall_below_a_tenth_after_scoring_above_half():
    diverged_at = fastbioner.research.diverged_at
    assert diverged_at([{"step": 3, "f1": 0.7}, {"step": 6, "f1": 0.02}, {"step": 9, "f1": 0.6}]) == 6
    assert diverged_at([{"step": 3, "f1": 0.05}, {"step": 6, "f1": 0.02}]) is None  # never learnt
    assert diverged_at([{"step": 3, "loss": 1.0}, {"step": 6, "f1": 0.8}]) is None


def test_watching_a_run_loads_no_torch():
    probe = ("import sys, fastbioner.research; fastbioner.checkpoint_progress; "
             "fastbioner.research.diverged_at; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
