"""README.md is what a newcomer reads first: short, with the two set-up commands at the
top (the app's installs what the app needs and no more; the test suite's is the one CI
runs), and screenshots that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def commands() -> list[str]:
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


def test_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_app_command_installs_the_gui_extra_only():
    app = next(c for c in commands() if c.endswith(".venv/bin/fastbioner-gui"))
    extras = re.search(r'-e "\.\[([^\]]*)\]"', app).group(1).split(",")
    assert extras == ["gui"]  # not the test tools, not Ray


def test_ci_runs_the_readmes_test_command_verbatim():
    test = next(c for c in commands() if c.endswith("-m pytest -q"))
    assert 'pip install -q -e ".[gui,test,scale]"' in test
    assert test in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_set_up_comes_before_the_quick_starts():
    setup = README.index("## Set up")
    assert setup < README.index("## Quick start")
    assert commands()[0].endswith("fastbioner-gui")


def test_three_quick_starts_and_three_screenshots():
    assert len(re.findall(r"^## Quick start", README, flags=re.M)) == 3
    shots = re.findall(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", README)
    assert len(set(shots)) >= 3
    assert all((REPO / s).is_file() for s in shots)
