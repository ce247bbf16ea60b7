"""experiments/final_build.py: a chosen recipe's command turned into its final build on
train + devel, for the steps its train-only twin kept; nothing is trained here."""

from __future__ import annotations

import json

import pytest

from experiments.tests.bench_scripts import load, register

ROW_ARGS = ("distill", "--teacher", "t", "--train", "/d/train.tsv", "--dev", "/d/devel.tsv", "--method", "pkd",
            "--epochs", "6", "--batch-size", "16", "--eval-every", "334", "--checkpoint-every", "100", "--resume",
            "--unlabeled", "/d/a.txt", "/d/b", "--cpu-bf16")


@pytest.fixture
def final(tmp_path, monkeypatch):
    module = load("final_build")
    monkeypatch.setattr(module, "FINAL_BUILDS", tmp_path / "final_builds.json")
    row = module.runs.Row("bc5cdr/pkd-x", 5, "bc5cdr", "pkd x", "bc5cdr-pkd-x-bf16", ROW_ARGS, 6)
    results = {"bc5cdr/pkd-x": {"13": {"best_step": 6006, "steps": 6006, "f1": 0.8611, "command": "twin cmd",
                                       "per_type": {"Disease": {"f1": 0.8147}}}}}
    return module, row, results


def test_devel_joins_train_nothing_is_scored_and_the_twins_steps_are_kept(final):
    module, row, results = final
    command = module.final_command(row, 13, results)
    assert command[:9] == ["fastbioner", "distill", "--teacher", "t", "--train", "/d/train.tsv", "/d/devel.tsv",
                           "--method", "pkd"]
    for gone in ("--dev", "--eval-every", "334"):
        assert gone not in command
    assert command[command.index("--epochs"):command.index("--epochs") + 4] == ["--epochs", "6", "--max-steps",
                                                                                 "6006"]
    assert command[command.index("--unlabeled") + 1:command.index("--unlabeled") + 3] == ["/d/a.txt", "/d/b"]
    assert command[-9:] == ["--name", "bc5cdr-pkd-x-trdev-s13", "--seed", "13", "--threads", "1", "--quiet",
                            "--teacher-cache", "shared"]


def test_a_recipe_without_a_twin_run_or_without_devel_is_refused(final):
    module, row, results = final
    with pytest.raises(module.FinalBuildError, match="seed 14 has no recorded run"):
        module.final_command(row, 14, results)
    no_dev = module.runs.Row("r", 5, "bc5cdr", "t", "m", ("distill", "--train", "/d/train.tsv", "--epochs", "3"), 3)
    with pytest.raises(module.FinalBuildError, match="no --train and --dev"):
        module.final_args(no_dev, 100)


def test_a_finished_build_is_recorded_with_its_twin(final):
    module, row, results = final
    register("bc5cdr-pkd-x-trdev-s13", kind="student", training={"steps": 6006, "epoch_seconds": [600.0, 500.5]},
             config={"training": {"max_steps": 6006}})
    assert module.registered_from("bc5cdr-pkd-x-trdev-s13", 6006)
    assert not module.registered_from("bc5cdr-pkd-x-trdev-s13", 5000) and not module.registered_from("none", 1)
    command = module.final_command(row, 13, results)
    entry = module.record_build(row, 13, command, results)
    stored = json.loads(module.FINAL_BUILDS.read_text())["bc5cdr-pkd-x-trdev-s13"]
    assert stored == entry
    assert entry["twin"] == "bc5cdr-pkd-x-bf16-s13" and entry["twin_f1"] == 0.8611
    assert entry["twin_best_step"] == 6006 and entry["steps"] == 6006 and entry["train_seconds"] == 1100.5
    assert entry["twin_per_type"] == {"Disease": 0.8147} and "--max-steps 6006" in entry["command"]


def test_a_build_started_before_its_twin_ended_trains_the_steps_given_and_says_so(final, capsys):
    module, row, results = final
    later = module.runs.Row("bc5cdr/pkd-y", 5, "bc5cdr", "pkd y", "bc5cdr-pkd-y-bf16", ROW_ARGS, 6)
    command = module.final_command(later, 13, results, steps=7000)  # no twin recorded yet: the steps given
    assert command[command.index("--max-steps") + 1] == "7000"
    with pytest.raises(module.FinalBuildError, match="no recorded run"):
        module.final_command(later, 13, results)
    register("bc5cdr-pkd-x-trdev-s13", kind="student", training={"steps": 7000},
             config={"training": {"max_steps": 7000}})
    entry = module.record_build(row, 13, module.final_command(row, 13, results, steps=7000), results)
    assert entry["max_steps"] == 7000 and entry["twin_best_step"] == 6006  # both kept: they differ
