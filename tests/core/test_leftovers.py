"""Interrupted runs' checkpoints (fastbioner.train.leftovers): listed with their size and the
step reached, the settings a run recorded read back for a resume, deleted by model
name only (no path escapes the registry's .checkpoints)."""

from __future__ import annotations

import json

import pytest

from fastbioner.base.config import TeacherConfig
from fastbioner.base.errors import ModelError
from fastbioner.base.units import human_size
from fastbioner.train.leftovers import checkpoints_root, delete_leftover, list_leftovers, record_run
from fastbioner.models.registry import Registry


def _checkpoint(registry, name, step, total, size):
    folder = checkpoints_root(registry) / name
    (folder / "latest").mkdir(parents=True)
    (folder / "latest" / "state.json").write_text(json.dumps({"state": {"step": step, "total_steps": total}}))
    (folder / "latest" / "weights-student.safetensors").write_bytes(b"\0" * size)
    return folder


def test_interrupted_runs_are_listed_with_size_step_and_settings(tmp_path):
    registry = Registry(tmp_path / "models")
    assert list_leftovers(registry) == []
    folder = _checkpoint(registry, "student-a", 48, 300, 5000)
    config = TeacherConfig(base_model="enc", train_files=["train.conll"])
    record_run(folder, "teacher", config)
    (checkpoints_root(registry) / "early").mkdir()  # stopped before its first checkpoint
    (checkpoints_root(registry) / "early" / "soft-labels-t.npz").write_bytes(b"\0" * 10)
    found = {left.name: left for left in list_leftovers(registry)}
    assert set(found) == {"student-a", "early"}
    a = found["student-a"]
    assert (a.step, a.total_steps, a.kind, a.resumable) == (48, 300, "teacher", True)
    assert a.size_bytes == 5000 + len(json.dumps({"state": {"step": 48, "total_steps": 300}})) + \
        (folder / "run.json").stat().st_size
    assert TeacherConfig.from_dict(a.run["config"]) == config
    early = found["early"]
    assert (early.step, early.kind, early.resumable, early.size_bytes) == (0, "", False, 10)


def test_delete_removes_one_run_by_name_and_refuses_paths(tmp_path):
    registry = Registry(tmp_path / "models")
    keep = _checkpoint(registry, "keep", 1, 2, 10)
    gone = _checkpoint(registry, "gone", 1, 2, 2_000_000)
    freed = delete_leftover("gone", registry)
    assert freed >= 2_000_000 and not gone.exists() and keep.is_dir()
    assert human_size(freed).endswith("MB")
    with pytest.raises(ModelError):
        delete_leftover("../models", registry)
    with pytest.raises(ModelError, match="no interrupted run"):
        delete_leftover("gone", registry)
    assert (tmp_path / "models").is_dir() and keep.is_dir()


def test_sizes_are_printed_in_decimal_units_as_the_docs_quote_them():
    # The shipped default model's safetensors: 29.7 MB in the README, 28.3 "MB" when
    # the card counted in MiB.
    assert human_size(29_682_000) == "29.7 MB"
    assert human_size(999) == "999 B" and human_size(1_500) == "1.5 KB" and human_size(2.5e9) == "2.5 GB"
