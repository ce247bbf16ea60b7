"""DRET's fine-tuning knobs in the shared training loop: frozen input embeddings, and
peak rates per part (embeddings, each layer, the head) as optimiser parameter groups;
they compose with class weights, focal loss and label propagation; every command that
trains has their flags, off by default."""

from __future__ import annotations

import pytest
import torch

from fastbioner.base.config import EncodingConfig, LossConfig, TeacherConfig, TrainingConfig
from fastbioner.cli.main import build_parser
from fastbioner.models.modeling import load_token_classifier
from fastbioner.train.layer_rates import embedding_parameters, head_parameters, layer_blocks
from fastbioner.train.training import Trainer
from tiny_models import make_tiny_model

LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]


class Batches:
    def __init__(self, n: int = 2):
        g = torch.Generator().manual_seed(0)
        self.items = [(torch.randint(5, 100, (2, 6), generator=g), torch.randint(0, 5, (2, 6), generator=g))
                      for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def epoch(self, e):
        return iter(self.items)


def objective(model):
    def run(batch, step, total):
        ids, labels = batch
        out = model(input_ids=ids, labels=labels)
        return out.loss, {"loss": out.loss.item()}
    return run


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("m") / "tiny", LABELS, layers=2)


def trainer(folder, **knobs):
    model = load_token_classifier(str(folder))
    config = TrainingConfig(epochs=1, learning_rate=1e-2, device="cpu", warmup_ratio=0.0, **knobs)
    return model, Trainer({"model": model}, objective(model), Batches(), config)


def rate_of(t: Trainer, p) -> float:
    return next(g["lr"] for g in t.optimizer.param_groups if any(q is p for q in g["params"]))


def test_frozen_embeddings_stay_bit_identical_after_a_step(folder):
    model, t = trainer(folder, freeze_embeddings=True)
    before = model.get_input_embeddings().weight.detach().clone()
    others = {n: p.detach().clone() for n, p in model.named_parameters() if "classifier" in n}
    next(t.steps())
    assert torch.equal(model.get_input_embeddings().weight, before)
    assert any(not torch.equal(p, others[n]) for n, p in model.named_parameters() if n in others)
    assert all(p is not model.get_input_embeddings().weight for g in t.optimizer.param_groups for p in g["params"])


def test_the_parts_train_at_the_rates_asked(folder):
    model, t = trainer(folder, embedding_lr_scale=0.1, layer_lr_decay=0.5, head_lr_scale=10.0)
    lr = 1e-2
    blocks = layer_blocks(model)
    assert len(blocks) == 2
    assert rate_of(t, next(blocks[1].parameters())) == pytest.approx(lr)         # the top layer
    assert rate_of(t, next(blocks[0].parameters())) == pytest.approx(lr * 0.5)   # one below
    for p in embedding_parameters(model):   # word, position, type embeddings and their LayerNorm
        assert rate_of(t, p) == pytest.approx(lr * 0.1 * 0.5 ** 2)
    for p in head_parameters(model):
        assert rate_of(t, p) == pytest.approx(lr * 10)
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(lr)  # what a progress line shows
    # the schedule scales each group from its own peak
    next(t.steps())
    rates = sorted({g["lr"] for g in t.optimizer.param_groups if g["params"]})
    assert len(rates) == 4


def test_defaults_leave_one_rate_and_nothing_frozen(folder):
    model, t = trainer(folder)
    assert {g["lr"] for g in t.optimizer.param_groups} == {1e-2}
    assert model.get_input_embeddings().weight.requires_grad


def test_a_layer_decay_on_a_model_without_layers_is_refused():
    from fastbioner.base.errors import FastBioNERError
    from fastbioner.train.layer_rates import rate_scales

    with pytest.raises(FastBioNERError, match="layer-lr-decay"):
        rate_scales(torch.nn.Linear(3, 3), TrainingConfig(layer_lr_decay=0.5))


@pytest.mark.parametrize("loss,label_mode", [("weighted-ce", "all"), ("focal", "all"), ("focal", "first")])
def test_the_knobs_compose_with_class_weights_focal_loss_and_label_propagation(folder, tmp_path, loss, label_mode):
    from fastbioner.train.teacher import train_teacher
    from tiny_models import make_tiny_encoder

    base = make_tiny_encoder(tmp_path / "base")
    train = tmp_path / "train.tsv"
    train.write_text("cocaine\tB-Chemical\ninduced\tO\nseizures\tB-Disease\n\nlithium\tB-Chemical\n"
                     "carbonate\tI-Chemical\ntoxicity\tB-Disease\n", encoding="utf-8")
    training = TrainingConfig(epochs=1, batch_size=2, device="cpu", learning_rate=1e-3, freeze_embeddings=True,
                              layer_lr_decay=0.8, embedding_lr_scale=0.5, head_lr_scale=5.0)
    config = TeacherConfig(base_model=str(base), train_files=[str(train)], training=training,
                           encoding=EncodingConfig(max_length=32, label_mode=label_mode), loss=LossConfig(kind=loss))
    result = train_teacher(config, f"knobs-{loss}-{label_mode}")
    trained = load_token_classifier(str(result.entry.path))
    start = load_token_classifier(str(base), labels=LABELS[:1] + ["B-Chemical", "I-Chemical", "B-Disease"])
    assert torch.equal(trained.get_input_embeddings().weight, start.get_input_embeddings().weight)
    assert result.entry.manifest.config["training"]["layer_lr_decay"] == 0.8


@pytest.mark.parametrize("command", ["train-teacher", "distill", "fine-tune"])
def test_every_training_command_has_the_flags_off_by_default(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    flags = {s for a in sub._actions for s in a.option_strings}
    assert {"--freeze-embeddings", "--embedding-lr-scale", "--layer-lr-decay", "--head-lr-scale"} <= flags
    defaults = {a.dest: a.default for a in sub._actions}
    assert defaults["training__freeze_embeddings"] is False
    assert defaults["training__layer_lr_decay"] == 1.0
