"""Helpers for the tests of the research modules (``experiments/``) and the benchmark
scripts they read (``benchmarks/``): each loaded as a fresh module (so a test's patches
stay local), and registry entries holding only a manifest."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from fastbioner.models.registry import Registry
from fastbioner.models.manifest import Manifest, write_manifest

REPO = Path(__file__).resolve().parents[2]


def load(name: str):
    """A module of ``experiments/`` (``"queue_state"``), or of ``benchmarks/``
    (``"benchmarks.bench_inference"``), as a fresh module per test. It is named inside
    its package, so its relative imports find its siblings (shared, not fresh)."""
    package, _, module = name.rpartition(".")
    package = package or "experiments"
    spec = importlib.util.spec_from_file_location(f"{package}._fresh_{module}", REPO / package / f"{module}.py")
    fresh = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fresh  # dataclasses look their module up there
    spec.loader.exec_module(fresh)
    return fresh


def register(name: str, **fields) -> Path:
    """A registry entry holding only its manifest: enough for what reads manifests."""
    folder = Registry().root / name
    folder.mkdir(parents=True)
    write_manifest(folder, Manifest(name=name, **fields))
    return folder


# A fast model's precision checks as `fastbioner benchmark` records them: int8 passed.
SPEED = {"precision": "int8", "hardware": "AMD EPYC (2 cores)", "threads": 1,
         "modes": {"fp32": {"tokens_per_s": 7489.0, "agreement": 1.0, "f1": 0.8042, "f1_loss_points": 0.0,
                            "default_allowed": True},
                   "int8": {"tokens_per_s": 10969.0, "agreement": 0.9978, "f1": 0.8041, "f1_loss_points": 0.01,
                            "default_allowed": True}}}
