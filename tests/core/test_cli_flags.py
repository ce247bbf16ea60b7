"""The training commands' flags come from the configs: every setting has one, the
defaults are the dataclasses', and every command this project has written down (the
README and the docs pages, the benchmark rows and their recorded results) still parses."""

import json
import re
import shlex
from pathlib import Path

import pytest

from fastbioner.cli.config_flags import config_fields
from fastbioner.cli.main import build_parser
from fastbioner.base.config import TeacherConfig
from fastbioner.train.distill.config import DistillConfig

REPO = Path(__file__).resolve().parents[2]


def _commands() -> list[list[str]]:
    """`fastbioner train-teacher|distill ...` commands from the README, the docs pages
    and the results."""
    out = []
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    text = "\n".join(re.sub(r"\\\n\s*", " ", page.read_text(encoding="utf-8")) for page in pages)
    for line in text.splitlines():
        m = re.search(r"fastbioner (train-teacher|distill) [^`|#)]*", line)
        argv = shlex.split(m.group(0).replace("$D", "D").replace("$B", "B"))[1:] if m else []
        if argv and "--help" not in argv:  # prose may point at `fastbioner distill --help`
            out.append(argv)
    for path in (REPO / "experiments" / "results").glob("paper_rows*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        for row in data.values():
            for entry in (row.values() if "command" not in row else [row]):
                if isinstance(entry, dict) and "command" in entry:
                    # a recorded command may carry a note in brackets after it
                    out.append(shlex.split(entry["command"].split(" (", 1)[0])[1:])
    return out


COMMANDS = _commands()


def test_commands_were_found():
    # The results also record other commands the queue ran (transfer-embeddings for DRET).
    assert len(COMMANDS) >= 10 and {"train-teacher", "distill"} <= {c[0] for c in COMMANDS}


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a)[:60])
def test_every_recorded_command_still_parses(argv):
    args = build_parser().parse_args(argv)
    config = args.func.__module__  # the command resolved to its module
    assert config.startswith("fastbioner.cli.")


@pytest.mark.parametrize("cls,command", [(TeacherConfig, "train-teacher"), (DistillConfig, "distill")])
def test_every_setting_has_a_flag_with_the_configs_default(cls, command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    dests = {a.dest: a for a in sub._actions}
    defaults = cls()
    for path, _field, _hint in config_fields(cls):
        action = dests.get(path.replace(".", "__"))
        assert action is not None, f"{cls.__name__}.{path} has no flag"
        value = defaults
        for part in path.split("."):
            value = getattr(value, part)
        if path in ("training.learning_rate", "training.epochs", "student.layers", "method.name") and \
                command == "distill":
            continue  # decided from the student once it is known (see test below)
        if action.required:
            continue  # no default: it must be given
        if isinstance(value, list) and action.default == ",".join(value):
            continue  # a comma list
        if isinstance(value, dict):
            assert action.default == [] and value == {}
            continue
        assert action.default == value, f"{path}: flag default {action.default!r}, config {value!r}"


def test_distill_defaults_follow_the_student():
    """The CLI resolves each default from the defaults table (fastbioner/base/defaults.toml) by
    the student's kind and depth; tests/core/test_defaults_table.py shows that a changed
    table changes them."""
    from fastbioner.cli.distill import config_from_args
    from fastbioner.base.defaults import table

    defaults = table()
    parser = build_parser()
    base = ["distill", "--teacher", "t", "--train", "x.tsv", "--name", "s"]
    cfg = config_from_args(parser.parse_args(base))
    assert cfg.student.layers == defaults.teacher_layers == DistillConfig().student.layers
    assert cfg.training.learning_rate == DistillConfig().training.learning_rate
    assert cfg.training.learning_rate == defaults.for_depth(defaults.teacher_layers).learning_rate
    assert cfg.training.epochs == defaults.teacher_epochs == DistillConfig().training.epochs
    # the method of the table's entry, with that method's own T
    assert cfg.method.name == defaults.for_depth(None).method and cfg.method.temperature is None
    # by depth: a depth between those listed takes the nearest (the deeper on a tie)
    listed = sorted(defaults.by_depth)
    for n in range(1, max(listed) + 3):
        got = config_from_args(parser.parse_args(base + ["--layers", str(n)]))
        nearest = min(listed, key=lambda d: (abs(d - n), -d))
        assert (got.method.name, got.training.learning_rate) == (defaults.by_depth[nearest].method,
                                                                 defaults.by_depth[nearest].learning_rate)
    named = config_from_args(parser.parse_args(base + ["--layers", "4", "--method", "fastbioner-cal"]))
    assert named.method.name == "fastbioner-cal"
    cfg = config_from_args(parser.parse_args(base + ["--student-from", "some-org/some-encoder"]))
    assert (cfg.training.learning_rate, cfg.training.epochs, cfg.method.name) == (
        defaults.encoder.learning_rate, defaults.encoder.epochs, defaults.encoder.method)
    for kind in ("bigru", "bilstm", "cnn"):
        cfg = config_from_args(parser.parse_args(base + ["--student-from", kind]))
        assert cfg.student.source == kind
        assert (cfg.training.learning_rate, cfg.training.epochs, cfg.method.name) == (
            defaults.small[kind].learning_rate, defaults.small[kind].epochs, defaults.small[kind].method)
    cfg = config_from_args(parser.parse_args(base + ["--student-from", "cnn", "--method", "fastbioner"]))
    assert cfg.training.epochs == defaults.small["cnn"].epochs and cfg.method.name == "fastbioner"
    cfg = config_from_args(parser.parse_args(base + ["--epochs", "2"]))
    assert cfg.training.epochs == 2
    cfg = config_from_args(parser.parse_args(base + ["--lr", "1e-4", "--no-crf", "--drop-terms", "attention,hidden",
                                                     "--window-overlap", "16", "--selection-metric", "f1_Disease"]))
    assert cfg.training.learning_rate == 1e-4 and cfg.student.crf is False
    assert cfg.method.drop_terms == ["attention", "hidden"] and cfg.encoding.window_overlap == 16
    assert cfg.training.selection_metric == "f1_Disease"
    assert Path(cfg.train_files[0]).is_absolute()


def test_distill_help_names_each_depths_method_once(monkeypatch, capsys):
    """--help states the by-depth rule from core's table, one clause per method, so the
    rule reads the same whichever depths share a method."""
    from dataclasses import replace

    from fastbioner.base import defaults as defaults_table
    from fastbioner.train.distill import config

    real = defaults_table.table()

    def with_methods(methods):
        by_depth = {n: replace(real.by_depth[3], method=m) for n, m in methods.items()}
        monkeypatch.setattr(defaults_table, "table", lambda: replace(real, by_depth=by_depth))

    with_methods({3: "pkd", 4: "hinton", 6: "pkd"})
    assert config.teacher_layers_methods_summary().startswith("pkd at 3 and 6 layers, hinton at 4 layers (")
    with_methods({3: "pkd", 4: "pkd", 6: "pkd"})
    assert config.teacher_layers_methods_summary().startswith("pkd at 3, 4 and 6 layers (")
    monkeypatch.undo()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["distill", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert config.teacher_layers_methods_summary() in help_text
