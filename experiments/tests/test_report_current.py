"""docs/research/benchmarks.md is the report of the committed results, byte for byte: what
`python -m experiments.paper_tables report` writes from experiments/results/ (and the
product benchmarks' results it quotes, benchmarks/results/). A results
file changed without the report regenerated fails here."""

from __future__ import annotations

import importlib

from experiments import paths


def test_the_committed_report_is_the_report_of_the_committed_results(tmp_path, monkeypatch):
    tables = importlib.import_module("experiments.paper_tables")
    report = importlib.import_module("experiments.benchmark_report")
    frontier = importlib.import_module("experiments.report_frontier")
    convergence = importlib.import_module("experiments.report_convergence")
    # The text as written where matplotlib is installed (the bench extra), the plots
    # themselves left out: their pixels depend on matplotlib's version, not the results.
    monkeypatch.setattr(report, "HAVE_MATPLOTLIB", True)
    monkeypatch.setattr(report, "plot_speed", lambda speed, png: False)
    monkeypatch.setattr(frontier, "plot_frontier", lambda *args, **kwargs: True)
    monkeypatch.setattr(convergence, "plot_curves", lambda *args, **kwargs: None)
    out = tmp_path / "benchmarks.md"
    assert tables.main(["report", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == paths.REPORT.read_text(encoding="utf-8")
