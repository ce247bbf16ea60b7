"""The shared training loop: progress events, cancel, checkpoints and resume,
accumulation, early stopping; and the gold-label losses."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fastbioner.train.checkpoints import has_checkpoint
from fastbioner.base.config import LossConfig, TrainingConfig
from fastbioner.base.jobs import Cancelled, CancelToken, JobState, run_job
from fastbioner.models.losses import FocalLoss, balanced_class_weights, make_token_loss
from fastbioner.train.training import Trainer


class Batches:
    """A deterministic batch source: ``n`` batches of random features and classes."""

    def __init__(self, n=6, size=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = [(torch.randn(size, 5, generator=g), torch.randint(0, 3, (size,), generator=g))
                     for _ in range(n)]

    def __len__(self):
        return len(self.data)

    def epoch(self, epoch):
        order = list(range(len(self.data)))
        if epoch % 2:
            order.reverse()
        return [self.data[i] for i in order]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(5, 3)
        self.drop = nn.Dropout(0.3)  # makes the RNG state matter for resume

    def forward(self, x):
        return self.lin(self.drop(x))


def objective_for(net, extra=None):
    def objective(batch, step, total):
        x, y = batch
        loss = F.cross_entropy(net(x), y)
        if extra is not None:
            loss = loss + 0.0 * extra(x).sum()
        return loss, {"L_total": loss.item(), "progress": step / total}
    return objective


def config(**kw):
    base = dict(epochs=2, learning_rate=0.05, batch_size=4, seed=1, device="cpu", warmup_ratio=0.2)
    base.update(kw)
    return TrainingConfig(**base)


def run(trainer, events=None, cancel=None):
    return run_job(lambda r: trainer.run(r), (events.append if events is not None else None), cancel)


def test_events_are_monotonic_carry_losses_and_end_done():
    net = Net()
    events = []
    result = run(Trainer({"net": net}, objective_for(net), Batches(), config()), events)
    assert result.steps == result.total_steps == 12
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    train = [e for e in events if e.stage == "train" and not e.finished]
    assert [e.step for e in train] == sorted(e.step for e in train)
    assert train[-1].step == 12 and train[-1].total == 12
    assert all(set(e.losses) == {"L_total", "progress"} for e in train if e.step > 0)
    assert [e.epoch for e in train if e.step > 0] == [1] * 6 + [2] * 6
    assert events[-1].state is JobState.DONE and events[-1].finished
    assert not any(e.finished for e in events[:-1])


def test_loss_goes_down():
    net = Net()
    events = []
    run(Trainer({"net": net}, objective_for(net), Batches(n=8), config(epochs=6)), events)
    losses = [e.losses["L_total"] for e in events if e.stage == "train" and e.losses]
    assert sum(losses[-8:]) < sum(losses[:8])


def test_cancel_stops_at_the_next_step_and_ends_cancelled(tmp_path):
    net = Net()
    token = CancelToken()
    events = []

    def on_event(e):
        events.append(e)
        if e.stage == "train" and e.step == 3:
            token.cancel()

    trainer = Trainer({"net": net}, objective_for(net), Batches(), config(), checkpoint_dir=tmp_path)
    with pytest.raises(Cancelled):
        run_job(lambda r: trainer.run(r), on_event, token)
    assert trainer.state.step == 3
    assert events[-1].state is JobState.CANCELLED
    assert has_checkpoint(tmp_path), "a cancel keeps a checkpoint to resume from"


@pytest.mark.parametrize("accum", [1, 4])
def test_resume_after_cancel_matches_an_uninterrupted_run(tmp_path, accum):
    cfg = config(epochs=3, grad_accum_steps=accum, checkpoint_every_steps=2)
    full_net = Net()
    full = run(Trainer({"net": full_net}, objective_for(full_net), Batches(n=7), cfg))

    net = Net()
    token = CancelToken()
    stop_at = 4 if accum == 1 else 3

    def on_event(e):
        if e.stage == "train" and e.step == stop_at:
            token.cancel()

    with pytest.raises(Cancelled):
        run_job(lambda r: Trainer({"net": net}, objective_for(net), Batches(n=7), cfg,
                                  checkpoint_dir=tmp_path).run(r), on_event, token)
    resumed_net = Net()  # a fresh process: weights come from the checkpoint
    torch.manual_seed(12345)  # and so does the RNG state
    events = []
    trainer = Trainer({"net": resumed_net}, objective_for(resumed_net), Batches(n=7), cfg,
                      checkpoint_dir=tmp_path, resume=True)
    resumed = run(trainer, events)
    assert resumed.resumed_from == stop_at
    assert resumed.steps == full.steps == full.total_steps == 3 * -(-7 // accum)
    assert [e.step for e in events if e.stage == "train"][0] == stop_at
    for a, b in zip(full_net.state_dict().values(), resumed_net.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6)


def test_resume_with_other_settings_is_refused(tmp_path):
    net = Net()
    token = CancelToken()
    with pytest.raises(Cancelled):
        run_job(lambda r: Trainer({"net": net}, objective_for(net), Batches(), config(),
                                  checkpoint_dir=tmp_path).run(r),
                lambda e: token.cancel() if e.step == 2 else None, token)
    from fastbioner.base.config import ConfigError
    with pytest.raises(ConfigError, match="other settings"):
        Trainer({"net": Net()}, objective_for(net), Batches(), config(learning_rate=0.1),
                checkpoint_dir=tmp_path, resume=True)


def test_grad_accumulation_counts_optimisation_steps():
    net = Net()
    result = run(Trainer({"net": net}, objective_for(net), Batches(n=7), config(grad_accum_steps=3)))
    assert result.total_steps == result.steps == 2 * 3  # ceil(7 / 3) per epoch


def test_the_cpu_optimiser_is_fused_adamw_and_makes_the_same_update():
    # The fused kernel replaces torch's per-tensor loop on the CPU (40% of a student's
    # step): it must stay AdamW, groups and weight decay included.
    from fastbioner.train.training import _adamw, _param_groups

    net = Net()
    trainer = Trainer({"net": net}, objective_for(net), Batches(), config())
    assert trainer.optimizer.defaults["fused"] is True
    nets = [Net(), Net()]
    optimisers = [_adamw(_param_groups({"net": nets[0]}, 0.1), 0.05, torch.device("cpu")),
                  torch.optim.AdamW(_param_groups({"net": nets[1]}, 0.1), lr=0.05)]
    assert not optimisers[1].defaults["fused"]
    for x, y in Batches().data:
        for net, opt in zip(nets, optimisers):
            opt.zero_grad()
            F.cross_entropy(net.lin(x), y).backward()
            opt.step()
    assert not torch.equal(nets[0].lin.weight, Net().lin.weight)  # it trained
    torch.testing.assert_close(nets[0].lin.weight, nets[1].lin.weight, rtol=0, atol=1e-6)
    torch.testing.assert_close(nets[0].lin.bias, nets[1].lin.bias, rtol=0, atol=1e-6)


def test_max_steps_caps_the_run():
    net = Net()
    result = run(Trainer({"net": net}, objective_for(net), Batches(), config(max_steps=5)))
    assert result.steps == result.total_steps == 5


def test_frozen_module_is_not_trained_and_several_modules_are():
    net, proj, teacher = Net(), nn.Linear(5, 2), nn.Linear(5, 2)
    before_t = teacher.weight.detach().clone()
    before_p = proj.weight.detach().clone()

    def objective(batch, step, total):
        x, y = batch
        loss = F.cross_entropy(net(x), y) + F.mse_loss(proj(x), teacher(x))
        return loss, {"L": loss.item()}

    run(Trainer({"net": net, "proj": proj}, objective, Batches(), config(), frozen=[teacher]))
    assert torch.equal(teacher.weight, before_t)
    assert not teacher.weight.requires_grad
    assert not torch.equal(proj.weight, before_p)


def test_early_stopping_keeps_the_best_weights():
    net = Net()
    scores = iter([0.5, 0.4, 0.3, 0.2, 0.1, 0.0])
    snapshot = {}

    def evaluate():
        score = next(scores)
        if score == 0.5:
            snapshot.update({k: v.clone() for k, v in net.state_dict().items()})
        return {"f1": score}

    result = run(Trainer({"net": net}, objective_for(net), Batches(n=4), config(epochs=6, eval_every_steps=2,
                                                                                   early_stopping_patience=2),
                         evaluate=evaluate))
    assert result.stopped_early
    assert result.best_step == 2 and result.best_metrics == {"f1": 0.5}
    assert result.steps == 6  # evaluated at 2 (best), 4 and 6: two without improvement
    assert [h["step"] for h in result.history] == [2, 4, 6]
    for k, v in net.state_dict().items():
        assert torch.equal(v, snapshot[k])


def test_keep_weights_last_ends_with_the_last_steps_weights_though_an_earlier_score_was_best():
    net = Net()
    scores = iter([0.5 - 0.1 * i for i in range(100)])  # the first scoring is the best
    snapshot = {}

    def evaluate():
        score = next(scores)
        snapshot.update({k: v.clone() for k, v in net.state_dict().items()})  # the weights scored last
        return {"f1": score}

    result = run(Trainer({"net": net}, objective_for(net), Batches(n=4),
                         config(epochs=3, eval_every_steps=2, keep_weights="last"), evaluate=evaluate))
    assert result.best_step == 2 and result.steps == result.total_steps > 2 and not result.stopped_early
    assert result.history[-1]["step"] == result.steps
    for k, v in net.state_dict().items():
        assert torch.equal(v, snapshot[k])


def test_diverging_loss_is_a_clear_error():
    net = Net()

    def objective(batch, step, total):
        return net(batch[0]).sum() * float("nan"), {}

    from fastbioner.base.errors import FastBioNERError
    with pytest.raises(FastBioNERError, match="diverged"):
        run(Trainer({"net": net}, objective, Batches(), config()))


# -- losses ----------------------------------------------------------------------


def test_focal_loss_with_gamma_zero_is_cross_entropy_and_ignores_minus_100():
    logits = torch.randn(2, 5, 3)
    labels = torch.tensor([[0, 1, -100, 2, 0], [-100, -100, 1, 1, 2]])
    keep = labels != -100
    ce = F.cross_entropy(logits[keep], labels[keep])
    assert torch.allclose(FocalLoss(0.0)(logits, labels), ce)
    assert torch.allclose(make_token_loss(LossConfig("ce"), 3)(logits, labels), ce)
    # Focal loss down-weights easy tokens, so it is below cross-entropy.
    assert FocalLoss(2.0)(logits, labels) < ce


def test_balanced_class_weights_favour_rare_labels():
    ids = [0] * 90 + [1] * 10 + [-100] * 50
    w = balanced_class_weights(ids, 3, power=1.0)
    assert torch.allclose(w, torch.tensor([100 / (2 * 90), 100 / (2 * 10), 1.0]))
    loss = make_token_loss(LossConfig("weighted-ce", class_weight_power=1.0), 3, ids)
    logits = torch.zeros(1, 2, 3)
    logits[0, 0, 0] = 1.0
    labels = torch.tensor([[0, 1]])
    expected = F.cross_entropy(logits[0], labels[0], weight=w)
    assert torch.allclose(loss(logits, labels), expected)


def test_all_ignored_positions_give_zero_loss():
    logits = torch.randn(1, 3, 3, requires_grad=True)
    labels = torch.full((1, 3), -100)
    for kind in ("ce", "focal"):
        loss = make_token_loss(LossConfig(kind), 3)(logits, labels)
        assert loss.item() == 0.0
        loss.backward()


def test_cpu_bf16_trains_the_step_under_bf16_autocast_and_keeps_fp32_weights(monkeypatch):
    """--cpu-bf16: the objective runs under CPU bf16 autocast (a linear layer's output is
    bf16), the loss still falls, and the weights the optimiser updates stay fp32."""
    monkeypatch.setattr("fastbioner.train.training.cpu_has_bf16", lambda: True)  # emulated where not native
    net = Net()
    seen = []

    def objective(batch, step, total):
        x, y = batch
        out = net(x)
        seen.append(out.dtype)
        loss = F.cross_entropy(out.float(), y)
        return loss, {"L_total": loss.item()}

    events = []
    run(Trainer({"net": net}, objective, Batches(n=8), config(epochs=6, cpu_bf16=True)), events)
    losses = [e.losses["L_total"] for e in events if e.stage == "train" and e.losses]
    assert sum(losses[-8:]) < sum(losses[:8])
    assert set(seen) == {torch.bfloat16}
    assert net.lin.weight.dtype == torch.float32
    plain = Net()
    run(Trainer({"net": plain}, objective_for(plain), Batches(n=8), config(epochs=6)), [])
    assert torch.allclose(net.lin.weight, plain.lin.weight, atol=0.05)  # the same run, in bf16


def test_cpu_bf16_on_a_cpu_without_native_bfloat16_is_refused_with_a_reason(monkeypatch):
    monkeypatch.setattr("fastbioner.train.training.cpu_has_bf16", lambda: False)
    net = Net()
    with pytest.raises(Exception, match="no native bfloat16"):
        Trainer({"net": net}, objective_for(net), Batches(), config(cpu_bf16=True))
