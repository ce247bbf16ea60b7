"""``fastbioner train-teacher``, ``evaluate`` and ``models ...`` as a user runs them."""

from __future__ import annotations

import json
import re

import pytest

from fastbioner.cli.main import main
from tiny_models import make_tiny_encoder

BIO = """cocaine\tB-Chemical
induced\tO
heart\tB-Disease
failure\tI-Disease

lithium\tB-Chemical
toxicity\tB-Disease
in\tO
rats\tO

the\tO
dose\tO
"""


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return make_tiny_encoder(tmp_path_factory.mktemp("base") / "encoder")


@pytest.fixture
def bio(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(BIO, encoding="utf-8")
    return path


def test_train_evaluate_and_manage_models(encoder, bio, tmp_path, capsys):
    rc = main(["train-teacher", "--train", str(bio), "--dev", str(bio), "--base", str(encoder),
               "--name", "cli-teacher", "--epochs", "2", "--batch-size", "2", "--device", "cpu",
               "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "registered cli-teacher" in out and "overall" in out and "Chemical" in out

    assert main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert "cli-teacher" in listing and "teacher" in listing

    assert main(["models", "show", "cli-teacher", "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["name"] == "cli-teacher" and manifest["config"]["training"]["epochs"] == 2

    out_json = tmp_path / "scores.json"
    assert main(["evaluate", "cli-teacher", str(bio), "--json", str(out_json), "--quiet"]) == 0
    shown = capsys.readouterr()
    assert "overall" in shown.out and "trained on" in shown.err  # scores on its own training text, said so
    # ... and never stored as the model's devel scores (a final build on train + devel).
    assert main(["evaluate", "cli-teacher", str(bio), "--record", "--quiet"]) == 2
    assert "not recorded" in capsys.readouterr().err
    scores = json.loads(out_json.read_text())
    assert scores["sentences"] == 3 and set(scores["per_type"]) <= {"Chemical", "Disease"}
    other = tmp_path / "other.conll"  # scores on another file, recorded as the model's metrics
    other.write_text("Naloxone\tB-Chemical\nhelps\tO\n", encoding="utf-8")
    assert main(["evaluate", "cli-teacher", str(other), "--record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["models", "show", "cli-teacher", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["sentences"] == 1 and metrics["source"]["file"] == str(other)

    assert main(["models", "export", "cli-teacher", str(tmp_path / "exported")]) == 0
    assert main(["models", "delete", "cli-teacher"]) == 0
    capsys.readouterr()
    assert main(["models", "list"]) == 0
    assert "cli-teacher" not in capsys.readouterr().out
    assert main(["models", "import", str(tmp_path / "exported"), "--name", "again"]) == 0
    assert "imported again" in capsys.readouterr().out
    long_name = "bc5cdr-hinton-minilm3-ft-s13-compact"  # longer than the usual column
    assert main(["models", "import", str(tmp_path / "exported"), "--name", long_name]) == 0
    capsys.readouterr()
    assert main(["models", "list"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    kind_column = header.index("kind")
    assert {row.split()[0]: row[kind_column:].split()[0] for row in rows} == {"again": "teacher",
                                                                              long_name: "teacher"}
    # A final model's card: what it is for, in plain words, and the devel scores of its twin
    # (the same recipe trained without devel), said as the twin's.
    assert main(["models", "describe", "again", "--summary", "The accurate  one.", "--scores-from", long_name]) == 0
    assert "devel scores of" in capsys.readouterr().out
    assert main(["models", "show", "again", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["summary"] == "The accurate one."
    assert described["metrics"]["source"]["twin"] == long_name and described["metrics"]["sentences"] == 1
    assert main(["models", "show", "again"]) == 0
    shown = capsys.readouterr().out
    assert f"devel scores (of its twin {long_name}" in shown
    assert "reads: each sentence on its own, up to" in shown  # trained on sentences: tags them so
    assert main(["models", "list"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert re.search(r" \d\.\d{4}\* ", listed["again"]) and "*" not in listed[long_name]  # its F1, marked
    assert "* its twin's devel F1" in listed["*"]
    assert main(["models", "describe", "again", "--scores-from", "again"]) == 2
    assert "names the model itself" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "exported"), str(bio), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == 10
    assert main(["evaluate", str(tmp_path / "exported"), str(bio), "--record", "--quiet"]) == 2
    assert "needs a registered model" in capsys.readouterr().err
    # Two models combined word by word (what a student of both learns from), scored as one.
    assert main(["evaluate", "again", str(bio), "--ensemble-with", long_name, "--json", "-"]) == 0
    combined = json.loads(capsys.readouterr().out)
    assert combined["source"] == {"model": f"again + {long_name}", "file": str(bio), "combination": "confidence"}
    assert main(["evaluate", "again", str(bio), "--ensemble-with", long_name, "--record", "--quiet"]) == 2
    assert "--record stores one model's own scores" in capsys.readouterr().err


def test_user_errors_are_one_line(encoder, bio, tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("cocaine\tB-Chemical\nheart\tX-Disease\n", encoding="utf-8")
    rc = main(["train-teacher", "--train", str(bad), "--base", str(encoder), "--name", "x", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and f"{bad}:2:" in err
    assert main(["evaluate", "no-such-model", str(bio)]) == 2
    assert "no model named 'no-such-model'" in capsys.readouterr().err
    assert main(["models", "show", "ghost"]) == 2
    assert main(["train-teacher", "--train", str(bio), "--base", str(encoder), "--name", "y",
                 "--epochs", "0"]) == 2
    assert "epochs must be at least 1" in capsys.readouterr().err
    assert main(["train-teacher", "--train", str(bio), "--base", str(tmp_path / "nothing"),
                 "--name", "z", "--quiet"]) == 2
    assert "no such model folder" in capsys.readouterr().err


@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_cancelled_run_says_nothing_was_registered_and_how_to_resume_only_when_it_can(
        tmp_path, monkeypatch, capsys, checkpointed):
    import argparse

    from fastbioner.cli.training_options import run_training
    from fastbioner.base.jobs import Cancelled
    from fastbioner.models.registry import Registry
    from fastbioner.train.runs import checkpoint_folder

    monkeypatch.setenv("FASTBIONER_HOME", str(tmp_path))

    def run(config, name, *, registry, on_event, cancel, **flags):
        if checkpointed:  # as a run stopped after its first checkpoint leaves it
            state = checkpoint_folder(registry, name) / "latest" / "state.json"
            state.parent.mkdir(parents=True)
            state.write_text("{}")
        raise Cancelled()

    args = argparse.Namespace(estimate=0, quiet=True, name="run", resume=False, restart=False, overwrite=False)
    assert run_training(run, object(), args) == 130
    err = capsys.readouterr().err
    assert "cancelled; nothing registered" in err
    assert ("--resume" in err) == checkpointed
    assert Registry().list() == []
