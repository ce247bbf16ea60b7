"""The figures the README and the guides quote (F1 scores, sizes, timings) are the ones
in the files that recorded them: the shipped models' manifests (their cards) and the
results files the runs wrote. A new model or a rerun that changes a figure fails here
until the text says the new one.

Each row of ``FIGURES`` is one quoted passage: the document, its words with ``{}`` for
each figure (whitespace as in one line: the page's line breaks do not matter), and the
figures, each read from its source and rounded as the page prints it. A page reworded
changes its row here.
"""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path
from typing import Any, Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO / "assets" / "default-model" / "fastbioner.json"
FAST_MODEL = REPO / "assets" / "more-models" / "bc5cdr-cnn-fast-v2" / "fastbioner.json"
# Where the research runs' results live: the one place to change when they move (the
# first folder that holds the file wins).
RESULTS = (REPO / "experiments" / "results", REPO / "benchmarks" / "results")


@functools.cache
def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def result(name: str) -> Any:
    """A results file by name (``spacy_peer.json``), wherever the results now live."""
    for folder in RESULTS:
        if (folder / name).is_file():
            return _json(folder / name)
    raise AssertionError(f"no results file {name} in {', '.join(str(f.relative_to(REPO)) for f in RESULTS)}")


def at(data: Any, *keys: str | int) -> Any:
    for key in keys:
        data = data[key]
    return data


def points(f1: float) -> str:
    """An F1 (0 to 1) as the pages print it: points, two decimals."""
    return f"{100 * f1:.2f}"


def default(*keys: str | int) -> Any:
    return at(_json(DEFAULT_MODEL), *keys)


def fast(*keys: str | int) -> Any:
    return at(_json(FAST_MODEL), *keys)


def spacy_timing(model: str) -> dict:
    """The last timing run's entry for ``model`` (benchmarks: ``experiments.spacy_peer time``)."""
    return next(m for m in result("spacy_peer.json")["time"]["models"] if m["model"] == model)


def paper_f1(row: str, seed: str = "13") -> float:
    return result("paper_rows.json")[row][seed]["f1"]


def seeds_f1(row: str) -> list[float]:
    return [100 * run["f1"] for run in result("paper_rows.json")[row].values()]


def engine(*keys: str) -> Any:
    return at(result("bench-inference-minilm.json"), "engine", *keys)


Figure = Callable[[], str]
FIGURES: list[tuple[str, str, tuple[Figure, ...]]] = [
    # -- README: the shipped models and the spaCy peer
    ("README.md", "reads each abstract whole, {}M parameters, {} MB)", (
        lambda: f"{default('parameters') / 1e6:.1f}", lambda: f"{default('size_bytes') / 1e6:.1f}")),
    ("README.md", "scores **{}** devel F1 (Chemical {}, Disease {};", (
        lambda: points(default("metrics", "f1")), lambda: points(default("metrics", "per_type", "Chemical", "f1")),
        lambda: points(default("metrics", "per_type", "Disease", "f1")))),
    # the default's twin's recipe over its three seeds (mean and standard deviation)
    ("README.md", "{} ± {} over three seeds", (
        lambda: f"{statistics.mean(seeds_f1('bc5cdr/pkd-minilm-unl-packed')):.2f}",
        lambda: f"{statistics.stdev(seeds_f1('bc5cdr/pkd-minilm-unl-packed')):.2f}")),
    ("README.md", "its embedding table in int8, {} MB)", (lambda: f"{fast('size_bytes') / 1e6:.1f}",)),
    ("README.md", "scores **{}** on the same terms (Chemical {}, Disease {})", (
        lambda: points(fast("metrics", "f1")), lambda: points(fast("metrics", "per_type", "Chemical", "f1")),
        lambda: points(fast("metrics", "per_type", "Disease", "f1")))),
    ("README.md", "the fast model takes {} s and the default {} s, against {} s for spaCy's CNN NER trained on the "
                  "same data ({} devel F1): the fast model is {} times spaCy's speed", (
        lambda: f"{spacy_timing('assets/more-models/bc5cdr-cnn-fast-v2')['median_seconds']:.1f}",
        lambda: f"{spacy_timing('assets/default-model')['median_seconds']:.1f}",
        lambda: f"{result('spacy_peer.json')['time']['median_seconds']['spacy']:.1f}",
        lambda: points(result("spacy_peer.json")["score"]["devel_f1"]),
        lambda: f"{spacy_timing('assets/more-models/bc5cdr-cnn-fast-v2')['vs_spacy_speed']:.2f}")),
    # -- guides
    ("docs/guides/tagging.md", "against {} on the same abstracts read whole", (
        lambda: points(default("metrics", "f1")),)),
    ("docs/guides/tagging.md", "500 abstracts ({} tokens)", (lambda: f"{engine('modes', 'fp32', 'tokens'):,}",)),
    ("docs/guides/tagging.md", "the engine in `fp32` tags {} times the pipeline's tokens/s ({} against {})", (
        lambda: f"{engine('ratios', 'engine_fp32_vs_pipeline'):.1f}",
        lambda: f"{engine('modes', 'fp32', 'tokens_per_s'):,.0f}",
        lambda: f"{engine('pipeline', 'tokens_per_s'):,.0f}")),
    ("docs/guides/tagging.md", "`bf16` is {} times the pipeline and {} times `fp32` with devel F1 {} against {}", (
        lambda: f"{engine('ratios', 'default_mode_vs_pipeline'):.1f}",
        lambda: f"{engine('ratios', 'bf16_vs_fp32'):.1f}",
        lambda: f"{engine('modes', 'bf16', 'f1'):.4f}", lambda: f"{engine('modes', 'fp32', 'f1'):.4f}")),
    ("docs/guides/tagging.md", "loses {} F1 points and is never a default", (
        lambda: f"{engine('modes', 'int8', 'f1_loss_points'):.1f}",)),
    ("docs/guides/training.md", "3-layer student's step {} to {} times faster on an AVX512-BF16 EPYC", (
        lambda: f"{min(r['speed_up'] for r in result('training_precision.json')['rows'].values()):.2f}",
        lambda: f"{max(r['speed_up'] for r in result('training_precision.json')['rows'].values()):.2f}")),
    ("docs/guides/training.md", "raised og from {} to {} and hinton from {} to {} devel F1 at 3 layers", (
        lambda: points(paper_f1("bc5cdr/sweep-og-3-lr0.0004")),
        lambda: points(paper_f1("bc5cdr/sweep-og-3-lr0.0004-ep6")),
        lambda: points(paper_f1("bc5cdr/sweep-hinton-3-lr0.0004")),
        lambda: points(paper_f1("bc5cdr/sweep-hinton-3-lr0.0004-ep6")))),
]


@functools.cache
def _page(name: str) -> str:
    return " ".join((REPO / name).read_text(encoding="utf-8").split())


@pytest.mark.parametrize("page,words,figures", FIGURES, ids=[f"{p}: {w[:40]}" for p, w, _ in FIGURES])
def test_the_page_quotes_the_recorded_figures(page, words, figures):
    expected = words.format(*(figure() for figure in figures))
    assert expected in _page(page), f"{page} should say: {expected}"


def test_the_readmes_timings_are_of_the_shipped_models():
    """The timing run the README quotes timed the models that ship, as they ship: the
    scores it recorded are the ones their cards show."""
    for manifest, folder in ((default, "assets/default-model"), (fast, "assets/more-models/bc5cdr-cnn-fast-v2")):
        timed = spacy_timing(folder)
        assert timed["devel_f1"] == pytest.approx(manifest("metrics", "f1"))
        assert timed["scores_of_twin"] == manifest("metrics", "source", "twin")
