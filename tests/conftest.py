"""Shared test set-up: offscreen Qt, no network for Hugging Face, and a private
user-data folder for every test so no test touches a real registry or settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny test models run faster on one thread, and two threads per process fight
# for the cores when anything else runs beside the suite.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Property-based tests: in CI (the CI variable set) every run tries the same examples,
# so a red build is reproducible and never depends on luck; locally they vary, and
# hypothesis's example database keeps any failure found for the next run.
from hypothesis import settings as _hypothesis_settings

_hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
_hypothesis_settings.register_profile("dev", deadline=None)
_hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()


@pytest.fixture(autouse=True)
def private_user_data(tmp_path_factory, monkeypatch):
    """Every test gets its own FASTBIONER_HOME (registry, settings, autosave)."""
    home = tmp_path_factory.mktemp("fastbioner-home")
    monkeypatch.setenv("FASTBIONER_HOME", str(home))
    return home


@pytest.fixture
def shared_data() -> Path:
    """The real corpora in ../shared/data; the test is skipped where they are absent
    (a user's fresh clone)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (fresh clone): real-corpus test skipped")
    return SHARED_DATA
