"""The benchmark scripts behind issue 12's default model: the spaCy peer's timing
record for several models and the report's accuracy/speed frontier. Nothing is timed
or trained: the subprocesses are replaced."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from fastbioner.registry import Manifest, Registry, write_manifest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    """A benchmark script as a module (a fresh one per test, so patches stay local)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def register(name: str, **fields) -> Path:
    """A registry entry holding only its manifest: enough for what reads manifests."""
    folder = Registry().root / name
    folder.mkdir(parents=True)
    write_manifest(folder, Manifest(name=name, **fields))
    return folder


# -- spacy_peer.py time --------------------------------------------------------------

def test_commands_alternate_round_by_round():
    peer = load("spacy_peer")
    ran = []
    times = peer.alternate([["spacy"], ["a"], ["b"]], 2, lambda cmd: ran.append(cmd[0]) or float(len(ran)))
    assert ran == ["spacy", "a", "b", "spacy", "a", "b"]
    assert times == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]


def test_timing_record_has_one_entry_per_model_against_spacy():
    peer = load("spacy_peer")
    rec = peer.timing_result("devel.txt", 3, 2, [8.0, 7.0, 9.0], ["big", "small"],
                             [[40.0, 42.0, 41.0], [4.004, 3.5, 3.6]])
    assert rec["median_seconds"] == {"spacy": 8.0} and rec["seconds"] == {"spacy": [8.0, 7.0, 9.0]}
    big, small = rec["models"]
    assert big == {"model": "big", "seconds": [40.0, 42.0, 41.0], "median_seconds": 41.0,
                   "vs_spacy_speed": round(8.0 / 41.0, 3)}
    assert small["seconds"] == [4.0, 3.5, 3.6] and small["median_seconds"] == 3.6
    assert small["vs_spacy_speed"] == round(8.0 / 3.6, 3)
    with pytest.raises(ValueError):  # a model without its times is a bug, not a shorter list
        peer.timing_result("devel.txt", 1, 2, [1.0], ["a", "b"], [[1.0]])


def test_model_flag_repeats(tmp_path, monkeypatch):
    peer = load("spacy_peer")
    seen = []
    monkeypatch.setattr(peer, "timing", lambda args: seen.append(args.model) or {"models": []})
    monkeypatch.setattr(peer, "RESULTS", tmp_path / "spacy_peer.json")
    assert peer.main(["time", "--model", "a", "--model", "b"]) == 0
    assert seen == [["a", "b"]]
    recorded = json.loads((tmp_path / "spacy_peer.json").read_text())["time"]
    assert recorded["command"].endswith("time --model a --model b")


# -- the report's frontier -----------------------------------------------------------

def test_pareto_keeps_points_no_other_beats():
    report = load("benchmark_report")
    points = [{"seconds": 8.0, "f1": 0.80}, {"seconds": 40.0, "f1": 0.82}, {"seconds": 20.0, "f1": 0.79},
              {"seconds": 5.0, "f1": None}, {"seconds": 40.0, "f1": 0.81}, {"seconds": 30.0, "f1": 0.82}]
    # 2 is slower and worse than 0; 4 ties 1 on time but is worse; 1 ties 5 on F1 but is slower;
    # 3 has no F1 to place it.
    assert report.pareto(points) == {0, 5}
    assert report.pareto([{"seconds": 1.0, "f1": 0.5}, {"seconds": 1.0, "f1": 0.5}]) == {0, 1}


@pytest.fixture
def frontier_files(tmp_path, monkeypatch):
    """A spacy_peer.json timing three of our models (one recorded in paper_rows, one
    only registered, one unknown) and a shipped default of its own."""
    report = load("benchmark_report")
    missing = report.REPO / "benchmarks" / "results" / "absent-for-tests.json"  # the report names it repo-relative
    for attr in ("SPEED", "SCALE", "STREAM"):
        monkeypatch.setattr(report, attr, missing)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    write_manifest(shipped, Manifest(name="shipped-default", kind="student", size_bytes=29_000_000,
                                     metrics={"f1": 0.8211}))
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(shipped))
    register("only-registered", kind="student", size_bytes=12_000_000, metrics={"f1": 0.79})
    sp = {"score": {"devel_f1": 0.8067, "per_type_f1": {"Chemical": 0.85, "Disease": 0.76}},
          "time": {"documents": "CDR_DevelopmentSet.PubTator.txt", "rounds": 3, "threads": 2,
                   "seconds": {"spacy": [7.7, 7.8, 7.6]}, "median_seconds": {"spacy": 7.7},
                   "command": "python benchmarks/spacy_peer.py time --model a", "models": [
                       {"model": "shipped-default", "seconds": [42.0], "median_seconds": 42.9, "vs_spacy_speed": 0.18},
                       {"model": "cand-s13", "seconds": [6.0], "median_seconds": 6.5, "vs_spacy_speed": 1.185},
                       {"model": "only-registered", "seconds": [9.0], "median_seconds": 9.0, "vs_spacy_speed": 0.856},
                       {"model": "unknown", "seconds": [3.0], "median_seconds": 3.0, "vs_spacy_speed": 2.567}]}}
    spacy_json = tmp_path / "spacy_peer.json"
    spacy_json.write_text(json.dumps(sp))
    monkeypatch.setattr(report, "SPACY", spacy_json)
    # aggregated as paper_tables hands them to the report: the timed seed is a run of the row
    results = {"bc5cdr/cand": {"model": "cand-s14", "f1": 0.80, "size_bytes": 1,
                               "runs": [{"model": "cand-s14", "f1": 0.80, "size_bytes": 1},
                                        {"model": "cand-s13", "f1": 0.815, "size_bytes": 18_500_000}]}}
    return report, results, tmp_path


def test_frontier_table_and_plot(frontier_files):
    report, results, tmp_path = frontier_files
    out = tmp_path / "docs" / "benchmarks.md"
    report.write_report([], results, out)
    text = out.read_text()
    section = text[text.index("### The accuracy/speed frontier"):text.index("## 7.")]
    rows = {line.split(" | ")[0].strip("| "): line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| model")}
    assert list(rows) == ["unknown", "cand-s13", "spaCy CNN (peer)", "only-registered", "shipped-default"]
    assert "| 81.50 | 18.5 | paper_rows.json | **yes** |" in rows["cand-s13"]
    assert "| 79.00 | 12.0 | manifest |  |" in rows["only-registered"]   # beaten by cand-s13
    assert "| 82.11 | 29.0 | manifest | **yes** |" in rows["shipped-default"]
    assert "| 80.67 | – | spacy_peer.json |  |" in rows["spaCy CNN (peer)"]  # slower and worse than cand-s13
    assert "| – | – | – |  |" in rows["unknown"]
    assert (tmp_path / "docs" / report.FRONTIER_PLOT).read_bytes()[:4] == b"\x89PNG"
    assert f"]({report.FRONTIER_PLOT})" in section
    peer = text[text.index("### The spaCy peer"):text.index("### The accuracy/speed frontier")]
    assert "`cand-s13` 6.5 s (1.19x spaCy's speed)" in peer


def test_frontier_reads_a_single_model_record_and_says_when_not_run(frontier_files):
    report, results, tmp_path = frontier_files
    legacy = {"score": {"devel_f1": 0.8067}, "time": {
        "documents": "d.txt", "rounds": 2, "threads": 2, "seconds": {"spacy": [7.3, 8.2], "fastbioner": [41.5, 44.3]},
        "median_seconds": {"spacy": 7.72, "fastbioner": 42.89}, "fastbioner_vs_spacy_speed": 0.18,
        "model": report.LEGACY_DEFAULT}}
    png = tmp_path / "f.png"
    section = "\n".join(report.frontier_section(legacy, {}, png))
    assert "| the shipped default | 42.89 | 0.18x | 82.11 | 29.0 | manifest | **yes** |" in section
    not_run = report.frontier_section({"score": {"devel_f1": 0.8}}, {}, tmp_path / "g.png")
    assert report.NOT_RUN in " ".join(not_run) and "spacy_peer.py time --model" in " ".join(not_run)
    assert not (tmp_path / "g.png").exists()
