"""The spaCy peer (experiments/spacy_peer.py: its timing record for several models)
and the report's accuracy/speed frontier drawn from it. Nothing is timed or trained:
the subprocesses are replaced."""

from __future__ import annotations

import json

import pytest

from experiments import paths
from experiments.tests.bench_scripts import SPEED, load, register
from fastbioner.models.manifest import Manifest, write_manifest


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
    missing = paths.BENCHMARK_RESULTS / "absent-for-tests.json"  # the report names it repo-relative
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
                   "command": "python -m experiments.spacy_peer time --model a", "models": [
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


@pytest.mark.parametrize("plotting", [True, False])
def test_frontier_table_and_plot(frontier_files, monkeypatch, plotting):
    report, results, tmp_path = frontier_files
    if plotting and not report.HAVE_MATPLOTLIB:
        pytest.skip("matplotlib (the bench extra) is not installed")
    monkeypatch.setattr(report, "HAVE_MATPLOTLIB", plotting)
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
    if report.HAVE_MATPLOTLIB:  # the bench extra
        assert (tmp_path / "docs" / report.FRONTIER_PLOT).read_bytes()[:4] == b"\x89PNG"
        assert f"]({report.FRONTIER_PLOT})" in section
    else:  # the table stands; the plot says what it needs
        assert not (tmp_path / "docs" / report.FRONTIER_PLOT).exists() and "needs matplotlib" in section
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
    assert report.NOT_RUN in " ".join(not_run) and "experiments.spacy_peer time --model" in " ".join(not_run)
    assert not (tmp_path / "g.png").exists()


def test_scores_stored_with_the_times_make_the_frontier_without_the_registry(frontier_files, monkeypatch):
    report, results, tmp_path = frontier_files
    peer = load("spacy_peer")
    sp = json.loads(report.SPACY.read_text())
    peer.record_model_scores(sp["time"])
    stored = {m["model"]: m.get("devel_f1") for m in sp["time"]["models"]}
    assert stored == {"shipped-default": 0.8211, "cand-s13": None, "only-registered": 0.79, "unknown": None}
    # Another machine: no registry, no shipped default; the stored figures stand.
    monkeypatch.setenv("FASTBIONER_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(tmp_path / "none"))
    points = {p["model"]: p for p in report.frontier_points(sp, {})}
    assert (points["only-registered"]["f1"], points["only-registered"]["source"]) == (0.79, "spacy_peer.json")
    assert points["only-registered"]["size_bytes"] == 12_000_000
    assert points["cand-s13"]["f1"] is None  # never scored: not placed


def test_a_timed_model_is_scored_at_the_precision_auto_runs(tmp_path):
    """The fast model's manifest says auto runs int8 (its check lost 0.01 F1): the frontier
    shows int8's devel F1, the one `fastbioner tag` delivered, and keeps float32's beside it."""
    peer = load("spacy_peer")
    folders = {}
    for name, speed in (("checked", SPEED), ("unchecked", {})):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        write_manifest(folders[name], Manifest(name=name, kind="student", speed=speed,
                                               metrics={"f1": 0.8042, "per_type": {"Chemical": {"f1": 0.831}}}))
    timing = {"models": [{"model": str(folders["checked"])}, {"model": str(folders["unchecked"])}]}
    peer.record_model_scores(timing)
    checked, unchecked = timing["models"]
    assert (checked["precision"], checked["devel_f1"], checked["devel_f1_fp32"]) == ("int8", 0.8041, 0.8042)
    assert checked["per_type_f1"] == {"Chemical": 0.831}
    assert unchecked["devel_f1"] == 0.8042 and "precision" not in unchecked


def test_a_final_build_is_placed_at_its_twins_devel_scores_and_says_so(tmp_path):
    """A model trained on train + devel carries its train-only twin's devel scores
    (`models describe --scores-from`): the timing record and the frontier name the twin."""
    peer = load("spacy_peer")
    report = load("benchmark_report")
    final = tmp_path / "final"
    final.mkdir()
    write_manifest(final, Manifest(name="final", kind="student", size_bytes=9_800_000, metrics={
        "f1": 0.8317, "per_type": {"Chemical": {"f1": 0.8618}}, "source": {"twin": "cnn-s13"}}))
    own = tmp_path / "own"
    own.mkdir()
    write_manifest(own, Manifest(name="own", kind="student", metrics={"f1": 0.80}))
    sp = {"time": {"documents": "d.txt", "rounds": 1, "threads": 2, "seconds": {"spacy": [4.0]},
                   "median_seconds": {"spacy": 4.0},
                   "models": [{"model": str(final), "seconds": [3.0], "median_seconds": 3.0, "vs_spacy_speed": 1.33},
                              {"model": str(own), "seconds": [5.0], "median_seconds": 5.0, "vs_spacy_speed": 0.8}]}}
    peer.record_model_scores(sp["time"])
    final_entry, own_entry = sp["time"]["models"]
    assert final_entry["scores_of_twin"] == "cnn-s13" and final_entry["devel_f1"] == 0.8317
    assert "scores_of_twin" not in own_entry
    points = {p["model"]: p for p in report.frontier_points(sp, {})}
    assert points[f"{final} (its twin's F1)"]["source"] == "its twin cnn-s13 (spacy_peer.json)"
    assert points[str(own)]["source"] == "spacy_peer.json"


def test_a_new_timing_keeps_the_previous_one(tmp_path, monkeypatch):
    peer = load("spacy_peer")
    monkeypatch.setattr(peer, "RESULTS", tmp_path / "spacy_peer.json")
    monkeypatch.setattr(peer, "record_model_scores", lambda timing: None)
    medians = iter([7.06, 8.14])
    monkeypatch.setattr(peer, "timing", lambda args: {"median_seconds": {"spacy": next(medians)}, "models": []})
    for _ in range(2):
        assert peer.main(["time"]) == 0
    saved = json.loads((tmp_path / "spacy_peer.json").read_text())
    assert saved["time"]["median_seconds"] == {"spacy": 8.14}
    assert [t["median_seconds"] for t in saved["earlier_times"]] == [{"spacy": 7.06}]
    # The peer trained again: its last timing was of the old peer, so it moves to the
    # earlier ones with that peer's score, and nothing times the new peer until `time`.
    saved["score"] = {"devel_f1": 0.8067}
    (tmp_path / "spacy_peer.json").write_text(json.dumps(saved))
    monkeypatch.setattr(peer, "train", lambda args: {"train_seconds": 1.0})
    assert peer.main(["train"]) == 0
    again = json.loads((tmp_path / "spacy_peer.json").read_text())
    assert "time" not in again and again["train"]["train_seconds"] == 1.0
    assert again["earlier_times"][-1]["median_seconds"] == {"spacy": 8.14}
    assert again["earlier_times"][-1]["peer"]["score"] == {"devel_f1": 0.8067}
