"""Per-term loss weights, calibration of the matching terms, row-centred attention
and the least-squares W_h, on tiny random models (issue 11)."""

import json

import pytest
import torch

from fastbioner.base.config import ConfigError
from fastbioner.train.distill.calibration import Calibration, fit_projection
from fastbioner.train.distill.config import StudentConfig
from fastbioner.train.distill.losses import attention_mse, centre_rows
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.train.distill.runner import distill
from tests.core.distill_setup import config, fresh_registry
from tests.tiny_models import make_tiny_model


pytestmark = pytest.mark.usefixtures("one_thread")


def test_term_weights_multiply_the_methods_own_and_are_checked():
    plain = MethodConfig(name="fastbioner").to_method()
    weighted = MethodConfig(name="fastbioner", term_weights={"attention": 0.01, "soft": 2.0}).to_method()
    _, w0 = plain.weights(0, 100)
    _, w1 = weighted.weights(0, 100)
    assert w1["attention"] == pytest.approx(0.01 * w0["attention"])
    assert w1["soft"] == pytest.approx(2.0 * w0["soft"])
    assert w1["gold"] == w0["gold"] and w1["hidden"] == w0["hidden"]
    for bad in ({"attentoin": 1.0}, {"attention": -1.0}, {"attention": float("nan")}, {"hidden": float("inf")}):
        with pytest.raises(ConfigError):
            MethodConfig(name="fastbioner", term_weights=bad).validate()
    # a config round trip (the manifest) keeps them
    again = MethodConfig.from_dict(MethodConfig(term_weights={"attention": 0.5}).to_dict())
    assert again.term_weights == {"attention": 0.5}


def test_a_term_weight_reaches_the_loss_the_optimiser_sees(trained, tmp_path):
    """L_total logged at each step is the weighted sum: with the attention term
    weighted 0.001 it is far below the same run with weight 1 (the attention-score
    MSE is the largest term), and equals the sum of the weighted logged terms."""
    totals = {}
    for weight in (1.0, 0.001):
        registry = fresh_registry(trained, tmp_path / str(weight))
        _, bio = trained
        events = []
        cfg = config(bio, epochs=1, dev=False, m={"term_weights": {"attention": weight}})
        distill(cfg, "w", registry=registry, on_event=events.append)
        steps = [e for e in events if e.stage == "distill" and e.losses]
        first = steps[0].losses
        method = cfg.method.to_method()
        _, weights = method.weights(0, steps[0].total)
        expected = sum(weights[n] * first[n] for n in method.term_names if n in first)
        assert first["loss"] == pytest.approx(expected, rel=1e-4)
        totals[weight] = first["loss"]
        manifest = registry.get("w").manifest.to_dict()
        assert manifest["training"]["term_weights"]["attention"] == pytest.approx(weight)
    assert totals[0.001] < totals[1.0]


def test_calibration_is_measured_recorded_and_evens_out_the_gradient_norms(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    cfg = config(bio, epochs=1, dev=False, m={"calibrate": "grad-norm", "calibration_batches": 2})
    result = distill(cfg, "cal", registry=registry)
    training = registry.get("cal").manifest.to_dict()["training"]
    cal = Calibration.from_dict(training["calibration"])
    assert cal.reference == "gold" and cal.batches == 2
    assert set(cal.scales) == {"hidden", "attention"}  # the matching terms only
    gold = cal.mean_weighted_norms["gold"]
    for term, scale in cal.scales.items():
        # after scaling, each matching term pulls as hard as the gold labels did
        assert scale * cal.mean_weighted_norms[term] == pytest.approx(gold, rel=1e-6)
    assert any("calibrated term scales" in n for n in result.notes)
    assert json.loads(json.dumps(training["calibration"])) == training["calibration"]


def test_a_terms_own_ratio_sets_its_pull_under_calibration_and_is_recorded(trained, tmp_path):
    """--term-ratio hidden=50: the hidden term pulls 50x the gold term, attention keeps
    --calibration-ratio's 1x; the manifest says so, and the step's loss uses it."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    cfg = config(bio, epochs=1, dev=False, m={"calibrate": "grad-norm", "calibration_batches": 2,
                                              "term_ratios": {"hidden": 50.0}})
    result = distill(cfg, "cal", registry=registry)
    training = registry.get("cal").manifest.to_dict()["training"]
    cal = Calibration.from_dict(training["calibration"])
    gold = cal.mean_weighted_norms["gold"]
    assert cal.ratios == {"hidden": 50.0} and cal.ratio == 1.0
    assert cal.scales["hidden"] * cal.mean_weighted_norms["hidden"] == pytest.approx(50 * gold, rel=1e-6)
    assert cal.scales["attention"] * cal.mean_weighted_norms["attention"] == pytest.approx(gold, rel=1e-6)
    assert any("hidden x 50" in n for n in result.notes)
    assert registry.get("cal").manifest.config["method"]["term_ratios"] == {"hidden": 50.0}


@pytest.mark.parametrize("ratios, calibrate, message", [
    ({"gold": 2.0}, "grad-norm", "matching terms only"),
    ({"hidden": 0.0}, "grad-norm", "finite number > 0"),
    ({"hidden": float("inf")}, "grad-norm", "finite number > 0"),
    ({"hidden": 2.0}, "none", "add --calibrate grad-norm"),
    ({"hidden-norm": 2.0}, "grad-norm", "not a term of fastbioner"),
])
def test_a_term_ratio_that_cannot_apply_is_refused_with_the_reason(ratios, calibrate, message):
    with pytest.raises(ConfigError, match=message):
        MethodConfig(name="fastbioner", calibrate=calibrate, term_ratios=ratios).to_method()


def test_pkd_s_hidden_term_keeps_pkd_s_weight_under_fastbioner_calibration(trained, tmp_path):
    """fastbioner-cal-pkd is pkd plus the calibrated, centred attention term: calibration
    scales the attention term to the gold term's pull and leaves the normalised hidden
    term at pkd's own weight, so the question "does FastBioNER's attention signal add to
    pkd?" is asked with pkd's hidden term exactly as pkd runs it."""
    method = MethodConfig(name="fastbioner-cal-pkd").to_method()
    pkd = MethodConfig(name="pkd").to_method()
    assert method.calibrated_terms == ("attention",) and "hidden" not in method.term_names
    for step in (0, 50, 99):
        assert method.weights(step, 100)[1]["hidden-norm"] == pkd.weights(step, 100)[1]["hidden-norm"]
        assert method.weights(step, 100)[1]["soft"] == pkd.weights(step, 100)[1]["soft"]
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, "fastbioner-cal-pkd", epochs=1, dev=False, m={"calibration_batches": 1}),
                     "calpkd", registry=registry)
    cal = Calibration.from_dict(registry.get("calpkd").manifest.to_dict()["training"]["calibration"])
    assert set(cal.scales) == {"attention"}
    gold = cal.mean_weighted_norms["gold"]
    assert cal.scales["attention"] * cal.mean_weighted_norms["attention"] == pytest.approx(gold, rel=1e-6)
    assert cal.mean_weighted_norms["hidden-norm"] > 0  # measured, reported, not scaled
    assert any("calibrated term scales" in n for n in result.notes)
    with pytest.raises(ConfigError, match="keeps that term at its own weight"):
        MethodConfig(name="fastbioner-cal-pkd", term_ratios={"hidden-norm": 2.0}).to_method()


def test_a_method_brings_its_own_calibration_and_attention_form_unless_told(trained, tmp_path):
    """fastbioner-cal calibrates, centres attention scores and holds phi at 0.5 by itself; the manifest
    saves what the run used, and an explicit setting overrides the method's."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    own = MethodConfig(name="fastbioner-cal")
    assert own.calibrate is None and own.attention is None  # left to the method
    result = distill(config(bio, "fastbioner-cal", epochs=1, dev=False, m={"calibration_batches": 1}), "own",
                     registry=registry)
    manifest = registry.get("own").manifest.to_dict()
    saved = manifest["config"]["method"]
    assert (saved["calibrate"], saved["attention"], saved["schedule"], saved["alpha"], saved["temperature"]) == \
        ("grad-norm", "centred", "constant", 0.5, 2.0)
    assert "calibration" in manifest["training"] and any("calibrated term scales" in n for n in result.notes)
    distill(config(bio, "fastbioner-cal", epochs=1, dev=False, m={"calibrate": "none", "attention": "scores"}),
            "told", registry=registry)
    manifest = registry.get("told").manifest.to_dict()
    assert (manifest["config"]["method"]["calibrate"], manifest["config"]["method"]["attention"]) == \
        ("none", "scores")
    assert "calibration" not in manifest["training"]
    # the paper's method keeps its literal form
    paper = MethodConfig(name="fastbioner").to_method()
    assert (paper.calibrate, paper.attention, paper.schedule.b, paper.temperature) == ("none", "scores", 0.3, 1.0)


def test_calibration_of_a_resumed_run_is_the_one_its_first_start_measured(trained, tmp_path):
    from fastbioner.base.jobs import Cancelled, CancelToken

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    cfg = config(bio, epochs=2, dev=False, m={"calibrate": "grad-norm", "calibration_batches": 1})
    token = CancelToken()

    def cancel_after_two(e):
        if e.stage == "distill" and e.step >= 2:
            token.cancel()

    with pytest.raises(Cancelled):
        distill(cfg, "r", registry=registry, on_event=cancel_after_two, cancel=token)
    first = Calibration.load(registry.root / ".checkpoints" / "r")
    assert first is not None and first.scales
    distill(cfg, "r", registry=registry, resume=True)
    got = registry.get("r").manifest.to_dict()["training"]["calibration"]
    assert got["scales"] == first.scales


def test_centred_attention_ignores_row_offsets_that_softmax_ignores():
    torch.manual_seed(0)
    a = torch.randn(2, 3, 5, 5)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    offset = torch.randn(2, 3, 5, 1) * 10  # a per-query-row constant
    assert float(attention_mse(a + offset, a, mask, centre=True)) == pytest.approx(0.0, abs=1e-8)
    assert float(attention_mse(a + offset, a, mask)) > 1.0
    centred = centre_rows(a, mask)
    keys = mask[:, None, None, :].float()
    assert torch.allclose((centred * keys).sum(-1), torch.zeros(2, 3, 5), atol=1e-5)
    # softmax over the real keys is unchanged by centring
    neg = torch.finfo(a.dtype).min
    sm = lambda x: x.masked_fill(~mask[:, None, None, :], neg).softmax(-1)  # noqa: E731
    assert torch.allclose(sm(centred), sm(a), atol=1e-6)


def test_centred_attention_runs_end_to_end(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    result = distill(config(bio, epochs=1, dev=False, m={"attention": "centred"}), "c", registry=registry)
    assert result.training.steps > 0
    assert registry.get("c").manifest.to_dict()["config"]["method"]["attention"] == "centred"


def test_least_squares_projection_fits_a_linear_map():
    torch.manual_seed(0)
    x = torch.randn(400, 8)
    true_w, true_b = torch.randn(12, 8), torch.randn(12)
    y = x @ true_w.T + true_b
    proj = torch.nn.Linear(8, 12)
    mse = fit_projection(proj, [(x[:200], y[:200]), (x[200:], y[200:])])
    assert mse < 1e-4
    assert torch.allclose(proj.weight, true_w, atol=1e-2) and torch.allclose(proj.bias, true_b, atol=1e-2)


def test_least_squares_w_h_starts_a_narrower_student_with_a_smaller_hidden_loss(trained, tmp_path):
    """A student of another width (16 against the teacher's 32): W_h fitted by least
    squares on the first batches gives a first-step hidden MSE well below a random
    W_h's, and the fit is noted in the manifest."""
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    narrow = make_tiny_model(tmp_path / "narrow", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"],
                             layers=2, hidden=16, seed=5)
    first_hidden = {}
    for init in ("random", "lstsq"):
        events = []
        cfg = config(bio, epochs=1, dev=False, student=StudentConfig(source=str(narrow), layers=2),
                     m={"projection_init": init, "drop_terms": ["attention"]})
        distill(cfg, f"n-{init}", registry=registry, on_event=events.append)
        first_hidden[init] = next(e.losses["hidden"] for e in events if e.stage == "distill" and e.losses)
    assert first_hidden["lstsq"] < 0.5 * first_hidden["random"], first_hidden
    training = registry.get("n-lstsq").manifest.to_dict()["training"]
    assert "hidden_projection" in training["projection_fit_mse"]
    assert "projection_fit_mse" not in registry.get("n-random").manifest.to_dict()["training"]


def test_projection_learning_rate_is_its_own():
    from fastbioner.train.training import _param_groups

    student, proj = torch.nn.Linear(4, 4), torch.nn.Linear(4, 8)
    groups = _param_groups({"student": student, "hidden_projection": proj}, 0.01, {"hidden_projection": 1e-3})
    lrs = {id(p): g.get("lr") for g in groups for p in g["params"]}
    assert lrs[id(proj.weight)] == 1e-3 and lrs[id(proj.bias)] == 1e-3
    assert lrs[id(student.weight)] is None  # the optimiser's default, the config's rate


def test_distill_help_lists_term_weights_calibration_and_attention_forms(capsys):
    from fastbioner.cli.main import main

    with pytest.raises(SystemExit):
        main(["distill", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--term-weight", "--calibrate", "--calibration-batches", "--calibration-ratio", "--term-ratio",
                 "--projection-init", "--projection-lr", "centred", "grad-norm"):
        assert flag in out, flag


def test_term_weight_flags_reach_the_config():
    import argparse

    from fastbioner.cli import distill as cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["distill", "--teacher", "t", "--train", "x.tsv", "--name", "s",
                              "--term-weight", "attention=0.01", "--term-weight", "hidden=2",
                              "--calibrate", "grad-norm", "--attention", "centred", "--term-ratio", "hidden=200"])
    cfg = cli.config_from_args(args)
    assert cfg.method.term_weights == {"attention": 0.01, "hidden": 2.0}
    assert cfg.method.term_ratios == {"hidden": 200.0}
    assert cfg.method.calibrate == "grad-norm" and cfg.method.attention == "centred"
    with pytest.raises(SystemExit):
        parser.parse_args(["distill", "--teacher", "t", "--train", "x.tsv", "--name", "s",
                           "--term-weight", "attention"])


def test_several_teachers_soft_labels_combine_by_confidence():
    import numpy as np

    from fastbioner.infer.label_ensembles import combine

    sure = np.array([[10.0, 0.0, 0.0]])      # a confident teacher: label 0
    unsure = np.array([[0.0, 0.2, 0.0]])     # a hesitant one: label 1, barely
    target, conf = combine([sure, unsure], temperature=1.0, rule="confidence")
    assert np.allclose(target.sum(-1), 1.0) and target[0].argmax() == 0
    mean, _ = combine([sure, unsure], temperature=1.0, rule="mean")
    assert target[0, 0] > mean[0, 0]          # the sure teacher weighs more than in the mean
    hot, _ = combine([sure, unsure], temperature=4.0, rule="confidence")
    assert hot[0, 0] < target[0, 0]           # a higher temperature softens the labels
    assert 0 < conf[0] <= 1


def test_distillation_from_two_teachers_records_the_ensemble(trained, tmp_path):
    """`--teacher A --teacher B`: both teachers' soft labels, combined per word,
    teach the student; the first teacher is the one it copies; the manifest says so."""
    import shutil

    from fastbioner.cli.distill import config_from_args
    from fastbioner.cli.main import build_parser

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    shutil.copytree(registry.root / "tiny-teacher", registry.root / "tiny-teacher-2")
    args_list = ["distill", "--teacher", "tiny-teacher", "--teacher", "tiny-teacher-2",
                 "--train", str(bio), "--name", "two", "--method", "hinton",
                 "--layers", "2", "--epochs", "1", "--batch-size", "5", "--lr", "1e-3"]
    args = build_parser().parse_args(args_list)
    cfg = config_from_args(args)
    assert cfg.teacher == "tiny-teacher" and cfg.extra_teachers == ["tiny-teacher-2"]
    events = []
    result = distill(cfg, "two", registry=registry, on_event=events.append)
    training = registry.get("two").manifest.to_dict()["training"]
    assert training["ensemble"]["teachers"] == ["tiny-teacher", "tiny-teacher-2"]
    assert training["ensemble"]["combination"] == "confidence"
    assert any("soft labels of 2 teachers" in n for n in result.notes)
    # hinton's soft labels come from the teachers combined, so the first teacher's
    # outputs are never read: no cache of them is built.
    assert training["teacher_cache"]["mode"] == "unused"
    assert not any("teacher cache" in n for n in result.notes)
    soft = [e.losses["soft"] for e in events if e.stage == "distill" and "soft" in e.losses]
    assert soft and all(v >= 0 for v in soft)
    # two copies of one teacher teach what that teacher alone teaches (same first step)
    alone = []
    single_args = args_list[:3] + args_list[5:]  # without "--teacher tiny-teacher-2"
    single_args[single_args.index("two")] = "one"
    single = config_from_args(build_parser().parse_args(single_args))
    assert single.extra_teachers == []
    distill(single, "one", registry=registry, on_event=alone.append)
    first_alone = next(e.losses["soft"] for e in alone if e.stage == "distill" and "soft" in e.losses)
    assert soft[0] == pytest.approx(first_alone, rel=2e-2)


def test_a_resumed_multi_teacher_run_reads_the_teachers_soft_labels_back(trained, tmp_path):
    """Cancelled after the teachers' pass, resumed: the teachers are not run again
    (their word logits come back from the run's checkpoint folder), and the finished
    run leaves no checkpoint behind."""
    import shutil

    from fastbioner.cli.distill import config_from_args
    from fastbioner.cli.main import build_parser
    from fastbioner.base.jobs import Cancelled, CancelToken
    from fastbioner.train.runs import checkpoint_folder

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    shutil.copytree(registry.root / "tiny-teacher", registry.root / "tiny-teacher-2")
    cfg = config_from_args(build_parser().parse_args(
        ["distill", "--teacher", "tiny-teacher", "--teacher", "tiny-teacher-2", "--train", str(bio),
         "--name", "two", "--method", "hinton", "--layers", "2", "--epochs", "2", "--batch-size", "5",
         "--lr", "1e-3", "--checkpoint-every", "1"]))
    token = CancelToken()
    first = []

    def cancel_at_step_2(e):
        first.append(e)
        if e.stage == "distill" and e.step >= 2:
            token.cancel()

    with pytest.raises(Cancelled):
        distill(cfg, "two", registry=registry, on_event=cancel_at_step_2, cancel=token)
    assert sum(e.stage == "ensemble" and e.step > 0 for e in first) > 0  # the teachers ran
    kept = sorted(p.name for p in checkpoint_folder(registry, "two").glob("soft-labels-*.npz"))
    assert kept == ["soft-labels-tiny-teacher-2.npz", "soft-labels-tiny-teacher.npz"]
    again = []
    result = distill(cfg, "two", registry=registry, resume=True, on_event=again.append)
    assert not any(e.stage == "ensemble" and e.step > 0 for e in again)  # no teacher ran again
    assert any("read back from the run's checkpoint" in n for n in result.notes)
    assert result.training.resumed_from == 2
    assert not checkpoint_folder(registry, "two").exists()


def test_stored_word_logits_are_read_only_under_their_own_key(tmp_path):
    import numpy as np

    from fastbioner.train.distill.ensemble import load_logits, logits_key, save_logits

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"one teacher")
    settings = {"labels": ["O", "B-X", "I-X"], "max_length": 128, "overlap": 16}
    sentences = [["Aspirin", "helps"], ["Pain"]]
    key = logits_key([weights], settings, sentences)
    logits = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((1, 3), np.float32)]
    save_logits(tmp_path / "l.npz", key, logits)
    back = load_logits(tmp_path / "l.npz", key)
    assert [x.tolist() for x in back] == [x.tolist() for x in logits]
    weights.write_bytes(b"another teacher")                       # retrained under the same name
    assert logits_key([weights], settings, sentences) != key
    assert logits_key([tmp_path / "model.safetensors"], settings, [["Aspirin", "helps"]]) != key
    assert load_logits(tmp_path / "l.npz", "another key") is None
    assert load_logits(tmp_path / "missing.npz", key) is None
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert load_logits(tmp_path / "bad.npz", key) is None
