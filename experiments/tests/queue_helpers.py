"""What the experiment queue's test files share."""

from __future__ import annotations


def latest_checkpoint(queue, job: dict):
    """Where a job's run keeps its last checkpoint in the queue's registry: the layout
    fastbioner.checkpoint_progress reads (tests/core/test_run_progress.py checks it on a
    real checkpoint), written here by hand as a stopped run would leave it."""
    return queue.qs.EXP / "home" / "models" / ".checkpoints" / job["model"] / "latest"
