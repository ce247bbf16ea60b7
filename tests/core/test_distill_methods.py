"""Methods are named configurations: their terms and weights, overrides for
ablations, and refusal of a configuration that leaves nothing to learn."""

import math

import pytest

from fastbioner.base.config import ConfigError
from fastbioner.train.distill.config import DistillConfig
from fastbioner.train.distill.methods import METHOD_NAMES, MethodConfig


def weights(name, step, total=100, **kw):
    return MethodConfig(name=name, **kw).to_method().weights(step, total)[1]


def test_fastbioner_weights_are_phi_and_its_complement():
    phi0 = 1 - math.exp(0.3 - 1)
    assert weights("fastbioner", 0) == pytest.approx(
        {"soft": phi0, "gold": 1 - phi0, "hidden": phi0, "attention": phi0})
    assert weights("fastbioner", 80) == {"soft": 0.0, "gold": 1.0, "hidden": 0.0, "attention": 0.0}


def test_baselines_weights():
    assert weights("og", 50) == {"gold": 1.0}
    assert weights("hinton", 50) == {"soft": 0.5, "gold": 0.5}
    assert weights("mse-logit", 50) == pytest.approx({"gold": 0.2, "logit-mse": 0.8})
    assert weights("mse-prob", 50) == {"prob-mse": 1.0, "gold": 1.0}
    assert weights("pkd", 50)["hidden-norm"] == 10.0
    early, late = weights("tinybert", 10), weights("tinybert", 90)
    assert early == {"embedding": 1.0, "hidden": 1.0, "attention": 1.0, "soft": 0.0}
    assert late == {"embedding": 0.0, "hidden": 0.0, "attention": 0.0, "soft": 1.0}


def test_overrides_for_ablations():
    m = MethodConfig(name="fastbioner", drop_terms=["attention"], schedule="constant", alpha=0.4,
                     temperature=3.0).to_method()
    assert m.term_names == ("soft", "gold", "hidden") and m.temperature == 3.0
    assert m.weights(99, 100)[0] == 0.4
    assert MethodConfig(name="fastbioner", b=0.0).to_method().weights(0, 10)[0] == pytest.approx(1 - math.exp(-1))
    assert MethodConfig(name="hinton").to_method().temperature == 2.0


@pytest.mark.parametrize("kw, message", [
    ({"name": "bert-pkd"}, "unknown method"),
    ({"name": "og", "drop_terms": ["gold"]}, "no loss term left"),
    ({"name": "fastbioner", "drop_terms": ["gold"]}, "nothing to learn from at 70%"),
    ({"name": "hinton", "drop_terms": ["colour"]}, "unknown loss term"),
    ({"name": "hinton", "schedule": "cosine"}, "unknown schedule"),
    ({"name": "fastbioner", "attention": "logits"}, "one of scores, centred, probs"),
])
def test_bad_method_settings_are_refused(kw, message):
    with pytest.raises(ConfigError, match=message):
        MethodConfig(**kw).to_method()


def test_every_method_resolves_and_config_round_trips():
    for name in METHOD_NAMES:
        assert MethodConfig(name=name).to_method().name == name
    cfg = DistillConfig(teacher="t", train_files=["a.tsv"], method=MethodConfig(name="pkd", drop_terms=["soft"]))
    again = DistillConfig.from_dict(cfg.to_dict())
    assert again == cfg and isinstance(again.method, MethodConfig)
