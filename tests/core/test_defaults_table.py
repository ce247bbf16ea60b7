"""The defaults table (fastbioner/base/defaults.toml) is the one source of the product's
defaults: a distillation's (the CLI, the recipes and the config resolve through it) and
the training loop's, the encoding's, fine-tune's, the precision rules' and tagging's
(the settings dataclasses take them); each entry names its decision record, and a
changed table changes what they resolve."""

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
    entries = [*defaults.by_depth.values(), *defaults.small.values(), defaults.encoder,
               *(e for section in defaults.sections.values() for e in section.entries.values())]
    pointers = {e.decision for e in entries} | {defaults.teacher_epochs_decision, defaults.compaction_decision}
    assert len(pointers) > 10
    for pointer in pointers:
        page, _, anchor = pointer.partition("#")
        assert (REPO / page).is_file(), pointer
        assert anchor in _anchors(REPO / page), f"{pointer}: no such section"


def test_every_section_of_the_product_is_in_the_table():
    shipped = tomllib.loads(SHIPPED.read_text(encoding="utf-8"))
    assert set(defaults_table.SECTIONS) == {"training", "encoding", "fine-tune", "precision", "tagging"}
    assert set(shipped) == {"teacher", "small", "encoder", "compaction", *defaults_table.SECTIONS}
    for name in defaults_table.SECTIONS:
        assert table().section(name).entries, name
    with pytest.raises(ConfigError, match=r"no \[nothing\] section"):
        table().section("nothing")
    with pytest.raises(ConfigError, match="has no 'nothing'"):
        table().section("tagging")["nothing"]


def test_every_entry_of_the_table_is_read_by_the_library():
    """An entry nothing reads would be a figure that decides nothing."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "core" / "fastbioner").rglob("*.py"))
    for name in defaults_table.SECTIONS:
        for key in table().section(name).entries:
            assert f'["{key}"]' in source, f"[{name}] {key} is read nowhere"


def test_the_settings_take_their_defaults_from_the_table():
    from fastbioner.models import precision
    from fastbioner.base.config import EncodingConfig, LossConfig, TeacherConfig, TrainingConfig
    from fastbioner.train.finetune_config import FineTuneConfig, default_learning_rate, held_back_count
    from fastbioner.infer.inference import TaggerConfig
    from fastbioner.scale.corpus import CorpusOptions

    training, encoding = table().section("training"), table().section("encoding")
    fine_tune, bounds, tagging = table().section("fine-tune"), table().section("precision"), table().section("tagging")
    run = TrainingConfig()
    for key in ("epochs", "learning_rate", "batch_size", "eval_batch_size", "grad_accum_steps", "warmup_ratio",
                "weight_decay", "max_grad_norm", "seed", "mixed_precision", "cpu_bf16", "keep_weights"):
        assert getattr(run, key) == training[key], key
    loss = LossConfig()
    assert (loss.kind, loss.focal_gamma, loss.class_weight_power) == \
        (training["loss"], training["focal_gamma"], training["class_weight_power"])
    assert TeacherConfig().head == training["head"]
    assert EncodingConfig() == EncodingConfig(**{k: encoding[k] for k in encoding.entries})
    # fine-tune: its own budget over the training loop's other settings, its rate by kind of model
    settings = FineTuneConfig()
    for key in ("epochs", "batch_size", "seed", "early_stopping_patience", "keep_weights"):
        assert getattr(settings.training, key) == fine_tune[key], key
    assert settings.training.learning_rate is None and settings.training.warmup_ratio == training["warmup_ratio"]
    assert default_learning_rate("transformer") == fine_tune["learning_rate_transformer"]
    assert default_learning_rate("cnn") == default_learning_rate("recurrent") == fine_tune["learning_rate_small"]
    assert (settings.holdout_share, settings.holdout_min) == (fine_tune["holdout_share"], fine_tune["holdout_min"])
    assert held_back_count(100) == round(100 * fine_tune["holdout_share"])
    # precision's rules and the tagger's batches
    assert precision.MAX_F1_LOSS_POINTS == bounds["max_f1_loss_points"]
    assert (precision.SPEEDUP_WORTH_F1, precision.SAME_F1_POINTS) == \
        (bounds["speedup_worth_f1"], bounds["same_f1_points"])

    class Device:
        def __init__(self, type):
            self.type = type

    P = precision.Precision
    assert [precision.default_token_budget(Device("cpu"), p) for p in (P.FP32, P.INT8, P.BF16, P.FP16)] == \
        [tagging[f"token_budget_cpu_{k}"] for k in ("fp32", "int8", "bf16", "other")]
    assert precision.default_token_budget(Device("cuda"), P.FP16) == tagging["token_budget_gpu"]
    assert TaggerConfig().max_batch_size == tagging["max_batch_size"]
    assert CorpusOptions().chunk_documents == tagging["chunk"]


def test_a_check_passes_up_to_the_tables_bound():
    from fastbioner.models.precision import PrecisionCheck

    bound = table().section("precision")["max_f1_loss_points"]
    assert PrecisionCheck("bf16", agreement=1 - bound / 100).passes
    assert not PrecisionCheck("bf16", agreement=1 - bound / 100 - 0.0005).passes


def test_the_commands_state_the_tables_figures(monkeypatch, capsys):
    """The help formats the precision bound and the chunk from the table, not a copy."""
    from fastbioner.cli import tag
    from fastbioner.cli.main import build_parser

    chunk = table().section("tagging")["chunk"]
    for command in (["tag", "x", "--out", "y", "--format", "jsonl"], ["rank", "x", "--top", "1", "--out", "y"]):
        assert build_parser().parse_args(command).chunk == chunk
    monkeypatch.setattr(tag, "MAX_F1_LOSS_POINTS", 0.7)
    for command in ("tag", "benchmark"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "lost at most 0.7 devel F1" in text
    assert "at least 99.3% (F1), which bounds its loss at 0.7 points" in text


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
    ("[tagging]", "[taggings]", "missing 'tagging'"),
    ('seed = { value = 13, decision = "docs/research/decisions.md#fine-tune-budget" }', "seed = 13",
     "[fine-tune] seed: an entry"),
    ('holdout_min = { value = 5, decision = "docs/research/decisions.md#fine-tune-budget" }',
     'holdout_min = { value = 5, decision = "why" }', "[fine-tune] holdout_min: decision (a docs/ page)"),
])
def test_a_broken_table_is_one_clear_error_naming_the_file(tmp_path, old, new, said):
    path = _edited(tmp_path, old, new)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value).startswith(str(path)) and said in str(err.value)
