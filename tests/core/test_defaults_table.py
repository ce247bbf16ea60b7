"""The defaults table (fastbioner/base/defaults.toml) is the one source of a distillation's
defaults: the CLI, the recipes and the config resolve through it, each entry names its
decision record, and a changed table changes what they resolve."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from fastbioner.base import defaults as defaults_table
from fastbioner.base.config import ConfigError
from fastbioner.base.defaults import load, table

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "core" / "fastbioner" / "base" / "defaults.toml"


def _anchors(page: Path) -> set[str]:
    """The heading anchors of a markdown page, as GitHub makes them."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 -]", "", title).replace(" ", "-"))
    return out


def test_every_default_points_at_a_decision_record_that_exists():
    defaults = table()
    entries = [*defaults.by_depth.values(), *defaults.small.values(), defaults.encoder]
    pointers = {e.decision for e in entries} | {defaults.teacher_epochs_decision, defaults.compaction_decision}
    for pointer in pointers:
        page, _, anchor = pointer.partition("#")
        assert (REPO / page).is_file(), pointer
        assert anchor in _anchors(REPO / page), f"{pointer}: no such section"


def test_the_small_kinds_are_the_librarys():
    from fastbioner.train.distill.config import SMALL_SOURCES

    assert set(table().small) == set(SMALL_SOURCES)


def test_the_table_travels_with_the_package():
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "base/defaults.toml" in data["tool"]["setuptools"]["package-data"]["fastbioner"]
    assert load(SHIPPED) == table()


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = SHIPPED.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "defaults.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_changed_table_changes_the_clis_defaults(tmp_path, monkeypatch):
    from fastbioner.cli.distill import config_from_args
    from fastbioner.cli.main import build_parser
    from fastbioner.train.guided import recipe

    base = ["distill", "--teacher", "t", "--train", "x.tsv", "--name", "s"]
    before = config_from_args(build_parser().parse_args(base + ["--layers", "3"]))
    assert before.training.learning_rate == table().by_depth[3].learning_rate
    assert before.method.name == table().by_depth[3].method
    # the 3-layer entry rewritten: another rate and method
    edited = _edited(tmp_path, '[teacher.depth.3]\nmethod = "pkd"\nlearning_rate = 4e-4',
                     '[teacher.depth.3]\nmethod = "tinybert"\nlearning_rate = 3e-4')
    monkeypatch.setattr(defaults_table, "table", lambda: load(edited))
    after = config_from_args(build_parser().parse_args(base + ["--layers", "3"]))
    assert (after.training.learning_rate, after.method.name) == (3e-4, "tinybert")
    assert recipe("Fast").learning_rate() == 3e-4 and recipe("Fast").method() == "tinybert"
    # the epochs of the teacher's layers, and a small kind's
    edited = _edited(tmp_path, "default_layers = 6\nepochs = 6", "default_layers = 4\nepochs = 9")
    monkeypatch.setattr(defaults_table, "table", lambda: load(edited))
    cfg = config_from_args(build_parser().parse_args(base))
    assert cfg.student.layers == 4 and cfg.training.epochs == 9
    assert cfg.training.learning_rate == table().by_depth[4].learning_rate
    edited = _edited(tmp_path, "[small.cnn]\nmethod = \"pkd\"\nlearning_rate = 1e-3\nepochs = 10",
                     "[small.cnn]\nmethod = \"og\"\nlearning_rate = 2e-3\nepochs = 12")
    monkeypatch.setattr(defaults_table, "table", lambda: load(edited))
    cfg = config_from_args(build_parser().parse_args(base + ["--student-from", "cnn"]))
    assert (cfg.method.name, cfg.training.learning_rate, cfg.training.epochs) == ("og", 2e-3, 12)


def test_the_clis_help_states_the_tables_values(monkeypatch, capsys):
    from fastbioner.cli.main import build_parser

    real = table()
    by_depth = {n: replace(d, learning_rate=0.000123) for n, d in real.by_depth.items()}
    monkeypatch.setattr(defaults_table, "table", lambda: replace(real, by_depth=by_depth))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["distill", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0.000123 at 3, 4 and 6 layers" in text


def test_ui_strings_carry_no_result_figures():
    from fastbioner.train import guided

    # the note under the app's recipes points at the records, it does not copy them
    assert not re.search(r"\d", guided.RECIPE_NOTE)
    assert "docs/research/decisions.md" in guided.RECIPE_NOTE


@pytest.mark.parametrize("old,new,said", [
    ("learning_rate = 1e-3\nepochs = 10", "learning_rate = -1\nepochs = 10", "learning_rate must be a positive"),
    ('decision = "docs/research/decisions.md#other-encoders"', 'decision = "somewhere"', "decision (a docs/ page)"),
    ("[compaction]", "[compactions]", "missing 'compaction'"),
    ("epochs = 6\n", "epochs = 6\n[[[", "not valid TOML"),
])
def test_a_broken_table_is_one_clear_error_naming_the_file(tmp_path, old, new, said):
    path = _edited(tmp_path, old, new)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value).startswith(str(path)) and said in str(err.value)
