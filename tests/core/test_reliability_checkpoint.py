"""Issue 70, 5: a hostile ``optimizer.pt`` under ``train-teacher --resume`` is one line
that never advises loading it unsafely; the file is never unpickled as code."""

from __future__ import annotations

import fractions
import pickle

import pytest
import torch
from torch import nn

from fastbioner.base.errors import ModelError
from fastbioner.train.checkpoints import LATEST, TrainingState, load_checkpoint, save_checkpoint

RAN = []


class Payload:
    """What a hostile file would run if it were unpickled as code."""

    def __reduce__(self):
        return (RAN.append, ("ran",))


def _checkpoint(tmp_path):
    net = nn.Linear(2, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    save_checkpoint(tmp_path, TrainingState(step=3), {"net": net}, opt, sched, None, None)
    return net, opt, sched


@pytest.mark.parametrize("content", [
    pickle.dumps({"optimizer": Payload()}),          # code on load
    pickle.dumps({"optimizer": fractions.Fraction(1, 3)}),  # a class torch does not allow
    b"\x80\x04\x95",                                 # truncated
    b"PK\x03\x04 not a zip",
], ids=["code", "a-class", "truncated", "broken-zip"])
def test_a_hostile_optimizer_state_is_one_line_without_unsafe_advice(tmp_path, content):
    net, opt, sched = _checkpoint(tmp_path)
    (tmp_path / LATEST / "optimizer.pt").write_bytes(content)
    with pytest.raises(ModelError) as info:
        load_checkpoint(tmp_path, {"net": net}, opt, sched, None)
    message = str(info.value)
    assert "\n" not in message and "weights_only" not in message.lower() and "optimizer.pt" in message
    assert "delete the checkpoint folder" in message
    assert RAN == []


def test_wrong_random_states_are_an_unreadable_checkpoint(tmp_path):
    net, opt, sched = _checkpoint(tmp_path)
    blob = torch.load(tmp_path / LATEST / "optimizer.pt", weights_only=True)
    blob["torch_rng"] = torch.zeros(3, dtype=torch.float32)
    torch.save(blob, tmp_path / LATEST / "optimizer.pt")
    with pytest.raises(ModelError, match="unreadable checkpoint"):
        load_checkpoint(tmp_path, {"net": net}, opt, sched, None)


def test_a_sound_checkpoint_still_resumes(tmp_path):
    net, opt, sched = _checkpoint(tmp_path)
    state, best = load_checkpoint(tmp_path, {"net": net}, opt, sched, None)
    assert state.step == 3 and best is None
