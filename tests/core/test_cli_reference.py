"""docs/reference/cli.md is generated from the parsers and the configs' metadata
(``python -m fastbioner.cli.reference``): it must be what the generator writes today,
so a flag added, renamed or given a new default shows up as a failing test until the
page is regenerated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fastbioner.cli.main import build_parser
from fastbioner.cli.reference import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
REGENERATE = "python -m fastbioner.cli.reference > docs/reference/cli.md"


def test_committed_cli_reference_is_current():
    assert PAGE.read_text(encoding="utf-8") == render(), f"the CLI reference is stale: run `{REGENERATE}`"


def test_reference_names_every_command_and_flag():
    text = render()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():
        assert f"## `fastbioner {name}`" in text
        for action in command._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in text, (name, flag)


def test_config_flags_name_their_setting():
    text = render()
    assert "| `--lr` |" in text and "`DistillConfig.training.learning_rate`" in text
    assert "`TeacherConfig.training.learning_rate`" in text and "`FineTuneConfig.train_files`" in text


def test_module_entry_point_writes_the_page():
    proc = subprocess.run([sys.executable, "-m", "fastbioner.cli.reference"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert proc.stdout == render()
