"""The simulated curator's report (experiments/simulated_curator.py): its table and plot
are written from the results into the research page, between the page's markers and
nowhere else (no user guide). Nothing is trained here."""

from __future__ import annotations

from experiments import paths
from experiments.tests.bench_scripts import load


def test_simulated_curator_renders_its_table_and_plot_from_the_results(tmp_path, monkeypatch):
    bench = load("simulated_curator")
    page = tmp_path / "page.md"
    page.write_text(f"intro\n{bench.TABLE_START}\nold\n{bench.TABLE_END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(bench, "DOC_PAGE", page)
    monkeypatch.setattr(bench, "PLOT", tmp_path / "plot.svg")
    runs = [{"strategy": s, "seed": seed, "size": 25, "f1_disease": f1, "update_seconds": 30.0, "command": "cmd"}
            for s, seed, f1 in (("random", 13, 70.0), ("random", 14, 72.0), ("queue", 13, 75.0))]
    bench.render({"runs": runs})
    text = page.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "| not recorded | 25 | 71.00 ± 1.41 | 75.00 | +4.00 | 30 s / 30 s | 13, 14 |" in text
    assert "    cmd" in text
    assert (tmp_path / "plot.svg").read_text(encoding="utf-8").count("<circle") == 3


def test_the_committed_table_is_the_render_of_the_committed_results(tmp_path, monkeypatch):
    """The research page's table is what ``--render`` writes from curator_loop.json, and
    the page it writes is a research page, not a guide."""
    bench = load("simulated_curator")
    assert bench.DOC_PAGE == paths.CURATOR_PAGE and bench.DOC_PAGE.parent.name == "research"
    page = tmp_path / "page.md"
    page.write_text(paths.CURATOR_PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(bench, "DOC_PAGE", page)
    monkeypatch.setattr(bench, "PLOT", tmp_path / "plot.svg")
    bench.render(bench.load_results())
    assert page.read_text(encoding="utf-8") == paths.CURATOR_PAGE.read_text(encoding="utf-8")
    assert (tmp_path / "plot.svg").read_text(encoding="utf-8") == paths.CURATOR_PLOT.read_text(encoding="utf-8")
