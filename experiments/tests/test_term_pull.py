"""experiments/term_pull.py and the report's section 11: a row measured with its own
flags (less what only a training run needs), the pull of each term as the calibration
measures it, and a report that reads the measurements rather than restating them."""

from __future__ import annotations

import json

from experiments.tests.bench_scripts import load

ROW_ARGS = ("distill", "--teacher", "teacher-x", "--train", "train.tsv", "--dev", "devel.tsv", "--method", "pkd",
            "--student-from", "teacher", "--epochs", "6", "--eval-every", "95", "--checkpoint-every", "100",
            "--resume", "--lr", "0.0002", "--layers", "6", "--temperature", "2", "--cpu-bf16")


def test_a_row_is_measured_with_its_own_flags_less_what_only_training_needs():
    tp = load("term_pull")
    row = tp.runs.Row("x/pkd-6", 1, "x", "pkd", "x-pkd-6", ROW_ARGS, 6)
    flags = tp.measurement_flags(row)
    assert flags == ["--teacher", "teacher-x", "--train", "train.tsv", "--method", "pkd", "--student-from",
                     "teacher", "--epochs", "6", "--lr", "0.0002", "--layers", "6", "--temperature", "2",
                     "--name", "probe", "--seed", "13"]
    trained = tp.measurement_flags(row, "x-pkd-6-s14")
    assert trained[-2:] == ["--student-from", "x-pkd-6-s14"] and "--layers" not in trained
    assert trained.count("--student-from") == 1
    # Every flag left is one `fastbioner distill` takes.
    _, parsed = load("loss_scales").parse(["--", *flags])
    assert parsed.method__name == "pkd" and parsed.student__layers == 6 and parsed.dev_file is None


def _batch(gold, hidden, cos, value=1.0):
    return {"values": {"gold": value, "hidden": value}, "weighted_grad_norms": {"gold": gold, "hidden": hidden},
            "label_cosine": cos}


def test_a_terms_pull_is_its_mean_over_the_gold_terms_mean_after_calibration_when_there_is_one():
    tp = load("term_pull")
    figures = {"config": {"training": {"max_grad_norm": 1.0}},
               "batches": [_batch(1.0, 50.0, 0.1), _batch(3.0, 150.0, 0.3)],
               "calibrated_batches": [_batch(1.0, 1.0, 0.9), _batch(3.0, 5.0, 0.7)],
               "calibration": {"scales": {"hidden": 0.03}}}
    s = tp.summary(figures)
    assert s["pull"] == {"gold": 2.0, "hidden": 3.0} and s["vs_gold"]["hidden"] == 1.5
    assert abs(s["label_cosine"] - 0.8) < 1e-12 and s["calibration"] == {"hidden": 0.03} and s["clip"] == 1.0
    del figures["calibrated_batches"]
    assert tp.summary(figures)["vs_gold"]["hidden"] == 50.0


def _entry(row, student, pulls, values, cos, seed=None):
    return {"row": row, "layers": int(row.rsplit("-", 1)[1]), "student": student, "seed": seed,
            "terms": list(pulls), "pull": pulls,
            "vs_gold": {t: p / pulls["gold"] for t, p in pulls.items()}, "value": values,
            "label_cosine": cos, "clip": 1.0, "batches": 4}


def test_section_11_tables_the_pulls_and_says_which_row_pulls_hardest_and_what_is_left_once_trained():
    rp = load("report_pull")
    assert rp.pull_section(None, {})[0].startswith("Not measured yet")
    entries = {
        "x/pkd-6": _entry("x/pkd-6", "start", {"soft": 0.6, "gold": 0.5, "hidden-norm": 114.0},
                          {"soft": 0.5, "gold": 0.5, "hidden-norm": 4.1}, 0.04),
        "x/cal-6": _entry("x/cal-6", "start", {"soft": 0.6, "gold": 0.5, "hidden": 0.5, "attention": 0.5},
                          {"soft": 0.5, "gold": 0.5, "hidden": 0.4, "attention": 16.0}, 0.95),
        "x/hinton-6": _entry("x/hinton-6", "start", {"soft": 0.6, "gold": 0.5},
                             {"soft": 0.5, "gold": 0.5}, 1.0),
        "x/pkd-6 @ m-s14": _entry("x/pkd-6", "m-s14", {"soft": 0.1, "gold": 0.2, "hidden-norm": 4.0},
                                  {"soft": 0.01, "gold": 0.05, "hidden-norm": 0.4}, 0.3, seed=14),
    }
    results = {"x/pkd-6": {"f1": 0.8617, "f1_sd": 0.0012, "seeds": [13, 14, 15],
                           "runs": [{"seed": s, "f1": f} for s, f in ((13, 0.8631), (14, 0.8611), (15, 0.8609))]},
               "x/cal-6": {"f1": 0.8587},
               "x/hinton-6": {"f1": 0.8543}}
    text = "\n".join(rp.pull_section({"entries": entries}, results))
    assert ("| `x/pkd-6` | 6 | start | 86.17 ± 0.12 (n=3) | 0.6 (1.2x) | 0.5 (1x) | – "
            "| 114 (228x) | – | 228x | 0.04 |") in text
    assert "| `x/pkd-6` | 6 | trained: `m-s14` | 86.11 (seed 14) |" in text
    assert ("At 6 layers, at the start the matching terms pull, over the gold term: "
            "`x/pkd-6` 228x, all hidden-norm (devel 86.17); "
            "`x/cal-6` 2x, shared by hidden and attention "
            "(devel 85.87)") in text
    assert "| `x/hinton-6` | 6 | start | 85.43 | 0.6 (1.2x) | 0.5 (1x) | – | – | – | – | 1.00 |" in text
    assert "the one whose matching pull is strongest" in text
    assert "`m-s14` (trained, `x/pkd-6`): its matching terms still pull 20x the gold term (at the start 228x)" in text
    assert "hidden-norm 4.1 → 0.4" in text
    # A row that leads on devel without the strongest pull is not credited with it.
    results["x/cal-6"]["f1"] = 0.87
    assert "strongest" not in "\n".join(rp.pull_section({"entries": entries}, results))


def test_a_trained_calibrated_student_is_measured_with_the_scales_its_run_recorded():
    import pytest
    from experiments.tests.bench_scripts import register
    from fastbioner.models.registry import Registry

    ls = load("loss_scales")
    cal = {"scales": {"hidden": 0.9, "attention": 0.0087}, "reference": "gold", "ratio": 1.0, "batches": 4}
    register("x-cal-6-s13", training={"calibration": cal})
    register("x-pkd-6-s13", training={})
    got = ls.recorded_calibration("x-cal-6-s13", Registry())
    assert got.scales == cal["scales"] and got.reference == "gold"
    with pytest.raises(SystemExit, match="x-pkd-6-s13: its manifest records no calibration"):
        ls.recorded_calibration("x-pkd-6-s13", Registry())


def test_rows_of_different_depths_are_read_apart():
    """A 3-layer row's pull is not ranked against 6-layer rows' devel F1."""
    rp = load("report_pull")
    entries = {"x/pkd-6": _entry("x/pkd-6", "start", {"gold": 0.5, "hidden-norm": 100.0}, {}, 0.1),
               "x/cal-6": _entry("x/cal-6", "start", {"gold": 0.5, "hidden": 0.5}, {}, 0.9),
               "x/pkd-3": _entry("x/pkd-3", "start", {"gold": 0.5, "hidden-norm": 50.0}, {}, 0.2),
               "x/cal-3": _entry("x/cal-3", "start", {"gold": 0.5, "hidden": 0.5}, {}, 0.9)}
    results = {"x/pkd-6": {"f1": 0.86}, "x/cal-6": {"f1": 0.85}, "x/pkd-3": {"f1": 0.82}, "x/cal-3": {"f1": 0.83}}
    text = " ".join(rp.reading(entries, results))
    six, three = text.split("At 3 layers")
    assert six.startswith("At 6 layers") and "x/pkd-3" not in six and "x/pkd-6" not in three
    assert "`x/pkd-6`, is the one whose matching pull is strongest" in six
    assert "strongest" not in three  # at 3 layers the harder-pulling row is not the one ahead


def test_loss_scales_script_prints_terms_gradients_and_the_calibration(trained, tmp_path, monkeypatch, capsys):
    """experiments/loss_scales.py reproduces the loss-scale figures of any distill
    configuration (values, weighted gradient norms, attention forms, the schedule)
    and what calibration would do, training and registering nothing."""
    import shutil

    registry, bio = trained
    home = tmp_path / "home"
    shutil.copytree(registry.root / "tiny-teacher", home / "models" / "tiny-teacher")
    monkeypatch.setenv("FASTBIONER_HOME", str(home))
    module = load("loss_scales")
    out_json = tmp_path / "scales.json"
    assert module.main(["--batches", "2", "--json", str(out_json), "--", "--teacher", "tiny-teacher",
                        "--train", str(bio), "--name", "probe", "--layers", "2", "--batch-size", "5",
                        "--temperature", "2", "--method", "fastbioner"]) == 0
    figures = json.loads(out_json.read_text())
    assert len(figures["batches"]) == 2
    first = figures["batches"][0]
    assert set(first["values"]) == {"soft", "gold", "hidden", "attention"}
    assert all(v >= 0 for v in first["weighted_grad_norms"].values())
    assert -1.0 <= first["label_cosine"] <= 1.0
    forms = figures["attention_forms"][0]
    assert forms["centred"] <= forms["scores"] + 1e-9  # centring only removes what softmax ignores
    assert set(figures["would_calibrate"]["scales"]) == {"hidden", "attention"}
    assert figures["schedule"]["w_zero_step"] is not None
    assert "calibration" not in figures
    assert [p.name for p in (home / "models").iterdir()] == ["tiny-teacher"]  # nothing registered
