"""The loss-weight schedules: FastBioNER's dynamic phi exactly as the paper writes it."""

import math

import pytest

from fastbioner.train.distill.schedules import ScheduleConfig, constant, dynamic_phi, linear_decay, two_stage


@pytest.mark.parametrize("b", [0.0, 0.3, 0.5])
def test_phi_starts_at_one_minus_e_to_b_minus_one(b):
    assert dynamic_phi(0, 1000, b) == pytest.approx(1 - math.exp(b - 1))


def test_phi_default_b_starts_near_one_half():
    assert dynamic_phi(0, 100) == pytest.approx(0.5034, abs=1e-4)


@pytest.mark.parametrize("b", [0.0, 0.3, 0.5])
def test_phi_reaches_zero_at_one_minus_b_of_training_and_stays_there(b):
    total = 1000
    zero_at = round((1 - b) * total)
    assert dynamic_phi(zero_at, total, b) == pytest.approx(0.0, abs=1e-12)
    assert dynamic_phi(zero_at - 10, total, b) > 0
    assert all(dynamic_phi(s, total, b) == 0.0 for s in range(zero_at, total + 1))


def test_phi_decreases_ever_faster():
    total = 200
    values = [dynamic_phi(s, total, 0.3) for s in range(0, 140)]
    drops = [a - b for a, b in zip(values, values[1:])]
    assert all(d > 0 for d in drops)
    assert all(later > earlier for earlier, later in zip(drops, drops[1:]))  # concave


def test_other_schedules():
    assert constant(5, 10, 0.2) == 0.2
    assert linear_decay(0, 10) == 1.0 and linear_decay(5, 10) == 0.5 and linear_decay(10, 10) == 0.0
    assert two_stage(4, 10, 0.5) == 1.0 and two_stage(5, 10, 0.5) == 0.0


def test_schedule_config_builds_named_schedules():
    assert ScheduleConfig("dynamic", b=0.5).build()(0, 10) == pytest.approx(1 - math.exp(-0.5))
    assert ScheduleConfig("constant", alpha=0.7).build()(3, 10) == 0.7
    with pytest.raises(ValueError, match="unknown schedule"):
        ScheduleConfig("cosine").build()
