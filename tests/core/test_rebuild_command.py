"""fastbioner.research.rebuild_command: the command that made a registered model, rebuilt from
its manifest, parses back to the same configuration."""

from __future__ import annotations

import shlex

import fastbioner
from fastbioner.research import rebuild_command
from fastbioner.cli import distill, train
from fastbioner.cli.main import build_parser
from fastbioner.models.manifest import Manifest


def _parsed(command: str) -> dict:
    argv = shlex.split(command)[1:]
    from_args = distill.config_from_args if argv[0] == "distill" else train.config_from_args
    return from_args(build_parser().parse_args(argv)).to_dict()


def test_a_students_command_parses_back_to_its_configuration(tmp_path):
    config = fastbioner.DistillConfig(
        teacher="t-mpnet", extra_teachers=["t-mpnet-s14"],
        student=fastbioner.StudentConfig(source="minilm-ft", layers=None),
        method=fastbioner.MethodConfig(name="hinton", temperature=2.0, drop_terms=["attention"]),
        train_files=[str(tmp_path / "train.tsv")], dev_file=str(tmp_path / "devel.tsv"))
    config.training.learning_rate, config.training.epochs, config.training.seed = 1e-4, 2, 14
    manifest = Manifest(name="student", kind="student", config=config.to_dict())
    command, lost = rebuild_command("again", manifest)
    assert command.startswith("fastbioner distill --name again ")
    assert lost == []
    got, want = _parsed(command), config.to_dict()
    assert {k: v for k, v in got.items() if k != "name"} == {k: v for k, v in want.items() if k != "name"}


def test_a_teachers_command_names_only_what_differs_from_the_defaults(tmp_path):
    config = fastbioner.TeacherConfig(base_model="/bases/mpnet", train_files=[str(tmp_path / "train.tsv")],
                                      dev_file=str(tmp_path / "devel.tsv"))
    config.training.epochs = 5
    command, lost = rebuild_command("t", Manifest(name="t", kind="teacher", config=config.to_dict()))
    argv = shlex.split(command)
    assert argv[:4] == ["fastbioner", "train-teacher", "--name", "t"] and lost == []
    assert argv[argv.index("--epochs") + 1] == "5" and "--batch-size" not in argv  # a default is left out
    assert _parsed(command) == config.to_dict()
