"""The benchmark scripts and the report's tables: the teacher ablations, convergence,
fit on train, the GPU figures (the spaCy peer and the frontier:
test_spacy_peer_frontier.py; the report's judgements of the rows: test_benchmark_standing.py). Nothing is timed or
trained: the subprocesses are replaced."""

from __future__ import annotations

import json

import pytest

from experiments.tests.bench_scripts import load, register
from fastbioner.models.manifest import Manifest, write_manifest


def test_a_student_is_measured_against_its_own_teacher_and_teachers_against_the_first(tmp_path, monkeypatch):
    report = load("benchmark_report")
    tables = load("runs")
    Row = tables.Row
    rows = [Row("bc5cdr/teacher", 1, "bc5cdr", "teacher", "t", (), 3, per_seed_name=False),
            Row("bc5cdr/teacher-packed", 5, "bc5cdr", "packed teacher", "t-packed", (), 3, per_seed_name=False),
            Row("bc5cdr/s", 5, "bc5cdr", "student of the first", "s", (), 3, teacher="t"),
            Row("bc5cdr/s-packed", 5, "bc5cdr", "student of the packed", "sp", (), 3, teacher="t-packed")]

    def run(f1, disease=0.8):
        return {"f1": f1, "per_type": {"Disease": {"f1": disease}}, "best_step": 9, "steps": 9,
                "wall_seconds": 60.0, "layers": 6}

    results = {"bc5cdr/teacher": run(0.86), "bc5cdr/teacher-packed": run(0.87, 0.82),
               "bc5cdr/s": run(0.84), "bc5cdr/s-packed": run(0.86)}
    table = report.depth_table(rows, results, 5)
    assert next(line for line in table if "`bc5cdr/s`" in line).split(" | ")[6] == "2.00"
    assert next(line for line in table if "`bc5cdr/s-packed`" in line).split(" | ")[6] == "1.00"
    assert next(line for line in table if "`bc5cdr/teacher-packed`" in line).split(" | ")[6] == "–"
    monkeypatch.setattr(report, "TEACHER_CONTROL", tmp_path / "none.json")  # no control measured
    monkeypatch.setattr(report, "TEACHER_ENSEMBLE", tmp_path / "teacher_ensemble.json")  # nor the ensemble
    lines = report.teacher_ablation(rows, results)
    assert any("`bc5cdr/teacher-packed`" in l and "87.00 (+1.00), Disease 82.00" in l for l in lines)
    assert not any("control" in l for l in lines)
    assert "combined word by word" in lines[-1] and "not yet run" in lines[-1]


def test_table_1_gives_each_student_its_gap_to_the_teacher_build_it_learnt_from():
    """Two students of one teacher command, one finished before a rebuild (86.80) and one
    after it (86.18): the method table sets each against its own build, so rows that
    learnt from a weaker build are not judged by their F1 alone."""
    report = load("benchmark_report")
    tables = load("runs")
    Row = tables.Row
    rows = [Row("bc5cdr/teacher", 1, "bc5cdr", "teacher", "t", (), 3, per_seed_name=False),
            Row("bc5cdr/a-6", 1, "bc5cdr", "before the rebuild", "a", (), 6, teacher="t"),
            Row("bc5cdr/b-6", 1, "bc5cdr", "after the rebuild", "b", (), 6, teacher="t")]

    def run(f1, finished):
        return {"f1": f1, "precision": f1, "recall": f1, "epochs": 6, "best_step": 9, "steps": 9,
                "wall_seconds": 60.0, "finished": finished, "per_type": {"Disease": {"f1": f1}}}

    teacher = {**run(0.8618, "2026-12-04T18:54"), "earlier": [{"f1": 0.8680, "finished": "2026-12-03T15:56"}]}
    results = {"bc5cdr/teacher": teacher, "bc5cdr/a-6": run(0.8617, "2026-12-03T20:00"),
               "bc5cdr/b-6": run(0.8553, "2026-12-04T19:44")}
    table = report.method_table(rows, results, "bc5cdr")
    assert "gap to its teacher" in table[0].split(" | ")[5]
    gap = {row: next(line for line in table if f"`{row}`" in line).split(" | ")[5]
           for row in ("bc5cdr/teacher", "bc5cdr/a-6", "bc5cdr/b-6")}
    assert gap == {"bc5cdr/teacher": "–", "bc5cdr/a-6": "0.63", "bc5cdr/b-6": "0.65"}


def test_the_teachers_combined_are_set_against_the_best_of_them_and_marked_stale_when_rebuilt(
        tmp_path, monkeypatch):
    """experiments/teacher_ensemble.py's figure: against the table-1 teacher and the best
    teacher it combined; a teacher rebuilt since makes the figure the earlier builds'."""
    report = load("benchmark_report")
    ensemble = tmp_path / "teacher_ensemble.json"
    monkeypatch.setattr(report, "TEACHER_ENSEMBLE", ensemble)
    built = {"bc5cdr/teacher-packed": ("t13", 0.8774, "2026-12-02T09:00"),
             "bc5cdr/teacher-packed-s14": ("t14", 0.8749, "2026-12-02T10:00")}
    ensemble.write_text(json.dumps({
        "command": "fastbioner evaluate t13 dev --ensemble-with t14", "combination": "confidence", "f1": 0.8811,
        "per_type": {"Disease": 0.8301},
        "teachers": {row: {"model": m, "f1": f1, "finished": when} for row, (m, f1, when) in built.items()}}))
    results = {row: {"f1": f1, "finished": when} for row, (_, f1, when) in built.items()}
    line = report.ensemble_line(results, {"f1": 0.8681})
    assert "by confidence: 88.11 (+1.30), Disease 83.01" in line
    assert "the best of the three alone `t13` 87.74 (+0.37)" in line and "rebuilt since" not in line
    results["bc5cdr/teacher-packed-s14"]["finished"] = "2026-12-03T08:00"
    assert "`bc5cdr/teacher-packed-s14` rebuilt since" in report.ensemble_line(results, {"f1": 0.8681})


def test_the_training_precision_bench_reads_the_step_time_estimate_prints():
    """bench_training_precision parses the line `--estimate` prints: a change to that
    line must not leave the script reading nothing (or the wrong number)."""
    from fastbioner.train.estimate import RunEstimate

    bench = load("bench_training_precision")
    line = RunEstimate(total_seconds=5000.0, setup_seconds=30.0, step_seconds=1.23, steps=1710,
                       teacher_seconds=60.0, evaluation_seconds=300.0, evaluations=18,
                       measured_steps=20).describe()
    found = bench.STEP.search(line)
    assert found and float(found.group(2)) == 1.23 and found.group(1) == "1,710"


def test_the_precision_check_pairs_an_fp32_run_with_the_bf16_run_of_the_same_row_and_seed():
    """Section 8 sets the fp32 run beside the row's bf16 run of the same seed; a run of
    the row that was not trained in bf16 (an earlier fp32 result) is not its pair."""
    tables = load("runs")
    precision = load("report_precision")
    rows = [r for r in tables.all_rows() if r.table == 8]
    assert [r.id for r in rows] == ["bc5cdr/og-3-fp32", "bc5cdr/fastbioner-cal-3-fp32"]
    assert all("--cpu-bf16" not in r.args for r in rows)
    bf16_row = next(r for r in tables.all_rows() if r.id == "bc5cdr/og-3")
    assert "--cpu-bf16" in bf16_row.args and bf16_row.model_name(13) != rows[0].model_name(13)

    def run(f1, command):
        return {"seed": 13, "f1": f1, "command": command, "per_type": {"Disease": {"f1": f1 - 0.05}}}

    results = {"bc5cdr/og-3-fp32": {"runs": [run(0.81, "fastbioner distill --lr 4e-4")]},
               "bc5cdr/og-3": {"runs": [run(0.8125, "fastbioner distill --lr 4e-4 --cpu-bf16")]},
               "bc5cdr/fastbioner-cal-3": {"runs": [run(0.80, "fastbioner distill --calibrate grad-norm")]}}
    text = "\n".join(precision.precision_section(rows, results))
    assert "| `bc5cdr/og-3` | 13 | 81.00 | 81.25 | +0.25 | 76.00 / 76.25 | – / – |" in text
    assert "| `bc5cdr/fastbioner-cal-3` | 13 | not yet run | not yet run | | | |" in text
    assert "+0.25 F1 points" in text


def test_a_benchmark_json_written_again_keeps_the_earlier_figures(tmp_path):
    results_file = load("benchmarks.results_file")
    out = tmp_path / "startup.json"
    results_file.write_keeping_earlier(out, {"cpu": "A", "ms": 41.0})
    results_file.write_keeping_earlier(out, {"cpu": "B", "ms": 30.0})
    results_file.write_keeping_earlier(out, {"cpu": "C", "ms": 20.0})
    got = json.loads(out.read_text())
    assert got["cpu"] == "C" and [e["cpu"] for e in got["earlier"]] == ["A", "B"]
    assert "earlier" not in got["earlier"][1]


def test_convergence_gives_each_epochs_last_scoring_averaged_over_seeds_and_where_the_best_fell(tmp_path):
    """Section 9: rows meant for several seeds, F1 at each epoch's last scoring (mean over
    the seeds), the last epoch's gain, each seed's best scoring and the drop after it."""
    tables = load("runs")
    report = load("benchmark_report")  # puts the report's modules on the path, as the report runs them
    convergence = load("report_convergence")
    row = tables.Row("x/og-3", 2, "x", "og, 3 layers", "og", ("distill",), 2, seeds=(13, 14))
    one_seed = tables.Row("x/other-3", 2, "x", "other", "other", ("distill",), 2)

    def run(seed, f1s):  # 2 epochs of 4 steps, devel scored every 2 steps
        return {"seed": seed, "epochs": 2, "steps": 8, "layers": 3,
                "history": [{"step": 2 * (i + 1), "f1": f} for i, f in enumerate(f1s)]}

    results = {"x/og-3": {"runs": [run(13, [0.70, 0.75, 0.80, 0.79]), run(14, [0.72, 0.77, 0.81, 0.83])]},
               "x/other-3": {"runs": [run(13, [0.5, 0.6, 0.7, 0.8])]}}
    assert convergence.epoch_scores(results["x/og-3"]["runs"][0]) == [0.75, 0.79]
    text = "\n".join(convergence.convergence_section([row, one_seed], results, tmp_path / "c.png", plotting=False))
    line = next(x for x in text.splitlines() if x.startswith("| `x/og-3`"))
    # epochs 76.00 and 81.00; the last epoch added 5 points; best at epoch 1.5 (s13) and 2.0 (s14);
    # the last scoring 1 point below the best for s13, 0 for s14
    assert line == "| `x/og-3` | 13, 14 | 76.00 | 81.00 | +5.00 | 1.5, 2.0 | 0.50 |"
    assert "x/other-3" not in text and "needs matplotlib" in text
    assert convergence.convergence_section([one_seed], results, tmp_path / "c.png") == [
        "No row with several seeds has run yet."]
    # FastBioNER's phi is 0 for the last b of training: the section says from which epoch
    assert convergence.gold_only_from({"method": "fastbioner", "epochs": 6, "command": "fastbioner distill"}) \
        == pytest.approx(4.2)
    assert convergence.gold_only_from({"method": "fastbioner", "epochs": 6, "command": "distill --b 0.5"}) == 3.0
    assert convergence.gold_only_from({"method": "fastbioner", "epochs": 6,
                                       "command": "distill --schedule constant --alpha 0.5"}) is None
    assert convergence.gold_only_from({"method": "hinton", "epochs": 6, "command": "distill"}) is None
    cal = tables.Row("x/cal-3", 2, "x", "cal", "cal", ("distill",), 2, seeds=(13, 14))
    results["x/cal-3"] = {"runs": [{**run(s, [0.7, 0.8, 0.8, 0.8]), "method": "fastbioner",
                                    "command": "fastbioner distill --method fastbioner"} for s in (13, 14)]}
    text = "\n".join(convergence.convergence_section([row, cal], results, tmp_path / "c.png", plotting=False))
    assert "phi reaches 0" in text and "epoch 1.4 of 2 for `x/cal-3`" in text
    if report.HAVE_MATPLOTLIB:
        convergence.convergence_section([row, cal], results, tmp_path / "c.png")
        assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_the_teacher_is_timed_against_only_the_students_named(monkeypatch):
    """Several seeds of one architecture tag at one speed: ``--students`` keeps section
    3 to the ones named; without it every student of the teacher is timed."""
    from types import SimpleNamespace

    bench = load("benchmarks.bench_inference")
    register("teacher", kind="teacher", metrics={"f1": 0.87})
    for name in ("og-3-s13", "og-3-s14", "cal-3-s13"):
        register(name, kind="student", parent="teacher", metrics={"f1": 0.82})
    register("other-student", kind="student", parent="another-teacher")

    def fake_load(name, config):
        return SimpleNamespace(precision=SimpleNamespace(value=config.precision), tag=lambda docs: None)

    def fake_timing(systems, docs, chunk_documents):
        speed = SimpleNamespace(tokens_per_s=100.0, to_dict=lambda: {"tokens_per_s": 100.0})
        return {key: (None, speed) for key in systems}

    monkeypatch.setattr(bench.Tagger, "load", staticmethod(fake_load))
    monkeypatch.setattr(bench, "interleaved_timing", fake_timing)

    def timed(students):
        args = SimpleNamespace(teacher="teacher", students=students, also=[], compare_modes=["fp32"],
                               device="cpu", threads=1, round_docs=1)
        return sorted(r["model"] for r in bench.section_students(args, [])["rows"])

    assert timed(["og-3-s13", "cal-3-s13"]) == ["cal-3-s13", "og-3-s13", "teacher"]
    assert timed(None) == ["cal-3-s13", "og-3-s13", "og-3-s14", "teacher"]


def test_a_run_that_collapsed_is_marked_diverged_in_the_tables():
    """A student whose devel F1 fell to about 0 after scoring well diverged (the
    6-layer og at the 3-layer rate): the tables say so beside its best step; a run
    that merely wobbled, or never learnt, is not marked."""
    fmt = load("report_format")
    fell = {"best_step": 190, "steps": 1710, "history": [
        {"step": 95, "f1": 0.70}, {"step": 190, "f1": 0.75}, {"step": 285, "f1": 0.0}, {"step": 1520, "f1": 0.58}]}
    assert fmt.diverged_at(fell) == 285
    assert fmt.converged(fell) == "190/1710 (diverged at step 285)"
    steady = {"best_step": 1710, "steps": 1710, "history": [{"step": 95, "f1": 0.70}, {"step": 190, "f1": 0.66}]}
    assert fmt.diverged_at(steady) is None and fmt.converged(steady) == "1710/1710 (last)"
    assert fmt.diverged_at({"history": [{"step": 95, "f1": 0.0}, {"step": 190, "f1": 0.05}]}) is None


def test_a_rows_wall_time_is_its_seeds_mean_with_their_range_not_the_first_seeds():
    fmt = load("report_format")
    runs = [{"wall_seconds": 60 * m} for m in (81, 77, 76)]
    assert fmt.wall_cell({"wall_seconds": 60 * 81, "runs": runs}) == "78 min (mean; 76-81)"
    assert fmt.wall_cell({"wall_seconds": 60 * 81, "runs": runs[:1]}) == "81 min"
    assert fmt.wall_cell({"wall_seconds": None}) == "–"
    # Seeds run on different machines: their walls do not compare, and the cell says so.
    mixed = [{"wall_seconds": 60 * 60, "cpu": "AMD EPYC"}, {"wall_seconds": 60 * 27, "cpu": "Intel Xeon"}]
    assert fmt.wall_cell({"runs": mixed}) == "44 min (mean; 27-60; 2 kinds of CPU)"


def test_the_reports_count_of_rows_run_is_taken_from_the_results_not_typed():
    """The preamble's "not yet run" sentence counts the rows from the results file each
    time the report is written: a row counts as run only with all of its seeds."""
    tables = load("runs")
    preamble = load("report_preamble")
    rows = [tables.Row("d/a", 1, "d", "a", "a", (), 6, seeds=(13, 14, 15)),
            tables.Row("d/b", 1, "d", "b", "b", (), 6, seeds=(13,)),
            tables.Row("d/c", 1, "d", "c", "c", (), 6, seeds=(13, 14))]
    some = {"d/a": {"13": {}, "14": {}, "15": {}}, "d/c": {"13": {}}}
    assert preamble.run_progress(rows, some) == ("Of the 3 rows, 1 has run with all their seeds, 1 with some of them; "
                                              "1 has not run yet.")
    every = {**some, "d/b": {"13": {}}, "d/c": {"13": {}, "14": {}}}
    assert preamble.run_progress(rows, every) == "Of the 3 rows, 3 have run with all their seeds: every row has run."


def test_the_teacher_ensemble_script_scores_the_teachers_combined_and_records_their_builds(tmp_path, monkeypatch):
    from fastbioner.models.registry import Registry
    from tests.tiny_models import make_tiny_model

    script = load("teacher_ensemble")
    Row = script.runs.Row
    rows = [Row("x/t13", 5, "x", "t", "t13", (), 3, per_seed_name=False),
            Row("x/t14", 5, "x", "t", "t14", (), 3, per_seed_name=False)]
    for seed, row in enumerate(rows):
        folder = make_tiny_model(Registry().root / row.model, seed=seed)
        write_manifest(folder, Manifest(name=row.model, kind="teacher"))
    monkeypatch.setattr(script, "ROWS", tuple(r.id for r in rows))
    monkeypatch.setattr(script.runs, "all_rows", lambda: rows)
    monkeypatch.setattr(script.runs, "load_results", lambda *a: {
        "x/t13": {"13": {"f1": 0.5, "finished": "2026-12-02T09:00"}}})
    devel = tmp_path / "dev.conll"
    devel.write_text("-DOCSTART- 1\n\ncocaine\tB-Chemical\ntoxicity\tB-Disease\n\nthe\tO\nrats\tO\n", encoding="utf-8")
    out = tmp_path / "teacher_ensemble.json"
    assert script.main(["--devel", str(devel), "--out", str(out)]) == 2   # x/t14 has not run
    assert not out.exists()
    monkeypatch.setattr(script.runs, "load_results", lambda *a: {
        "x/t13": {"13": {"f1": 0.5, "finished": "2026-12-02T09:00"}},
        "x/t14": {"14": {"f1": 0.4, "finished": "2026-12-02T10:00"}}})
    assert script.main(["--devel", str(devel), "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["command"].endswith("evaluate t13 dev.conll --ensemble-with t14 --combination confidence")
    assert saved["teachers"]["x/t14"] == {"model": "t14", "f1": 0.4, "finished": "2026-12-02T10:00",
                                          "disease_f1": None}
    assert 0.0 <= saved["f1"] <= 1.0 and saved["combination"] == "confidence"


# -- train_fit.py and section 10 -----------------------------------------------------
def test_the_train_fit_script_scores_each_registered_seed_and_its_teacher_once(tmp_path, monkeypatch, capsys):
    """Every seed of the named rows whose model is in the registry is scored on the
    training file, then the teacher they learnt from (once); a seed whose model is gone
    is named, not scored; a second call scores only what is new."""
    from fastbioner.models.registry import Registry
    from tests.tiny_models import make_tiny_model

    script = load("train_fit")
    Row = script.runs.Row
    rows = [Row("x/a-4", 2, "x", "a", "a", (), 6, seeds=(13, 14)), Row("x/b-4", 2, "x", "b", "b", (), 6)]
    for name, kind in (("a-s13", "student"), ("b-s13", "student"), ("t", "teacher")):
        write_manifest(make_tiny_model(Registry().root / name), Manifest(name=name, kind=kind))
    recorded = {"x/a-4": {"13": {"model": "a-s13", "parent": "t", "f1": 0.8, "layers": 4},
                          "14": {"model": "a-s14", "parent": "t", "f1": 0.82, "layers": 4}},
                "x/teacher": {"13": {"model": "t", "f1": 0.87, "layers": 12}}}
    monkeypatch.setattr(script.runs, "all_rows", lambda: rows)
    monkeypatch.setattr(script.runs, "load_results", lambda *a: recorded)
    train = tmp_path / "train.tsv"
    train.write_text("cocaine\tB-Chemical\ntoxicity\tB-Disease\n\nthe\tO\nrats\tO\n", encoding="utf-8")
    out = tmp_path / "fit.json"
    assert script.main(["x/a-4", "x/b-4", "--train", str(train), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "x/a-4 seed 14: its model a-s14 is not in this registry" in err and "x/b-4 has not run" in err
    saved = json.loads(out.read_text())["models"]
    assert sorted(saved) == ["a-s13", "t"]
    assert saved["a-s13"]["row"] == "x/a-4" and saved["a-s13"]["seed"] == 13 and saved["a-s13"]["devel_f1"] == 0.8
    assert saved["t"]["row"] == "x/teacher" and saved["a-s13"]["parent"] == "t"
    assert 0.0 <= saved["a-s13"]["train_f1"] <= 1.0 and saved["a-s13"]["file"] == "train.tsv"
    assert saved["a-s13"]["command"].endswith("fastbioner evaluate a-s13 train.tsv")
    recorded["x/b-4"] = {"13": {"model": "b-s13", "parent": "t", "f1": 0.81, "layers": 4}}
    saved["t"]["train_f1"] = 0.5  # a model already scored is not scored again
    out.write_text(json.dumps({"models": saved}))
    assert script.main(["x/a-4", "x/b-4", "--train", str(train), "--out", str(out)]) == 0
    again = json.loads(out.read_text())["models"]
    assert sorted(again) == ["a-s13", "b-s13", "t"] and again["t"]["train_f1"] == 0.5
    # The teacher rebuilt since (its row records a later build): this build is scored,
    # the earlier scoring kept, since older students learnt from that one.
    recorded["x/teacher"]["13"]["finished"] = "2026-12-03T15:56:43+00:00"
    assert script.main(["x/a-4", "--train", str(train), "--out", str(out)]) == 0
    assert "t: rebuilt since it was scored" in capsys.readouterr().out
    rebuilt = json.loads(out.read_text())["models"]["t"]
    assert rebuilt["devel_finished"] == "2026-12-03T15:56:43+00:00" and rebuilt["train_f1"] != 0.5
    assert [e["train_f1"] for e in rebuilt["earlier"]] == [0.5]
    assert script.main(["x/a-4", "--train", str(train), "--out", str(out)]) == 0  # now current: not again
    assert json.loads(out.read_text())["models"]["t"] == rebuilt
    assert script.main(["x/nope", "--train", str(train), "--out", str(out)]) == 2


def _fit(train_t, devel_t, students):
    models = {"t": {"row": "x/teacher", "seed": 13, "layers": 12, "file": "train.tsv", "train_f1": train_t,
                    "devel_f1": devel_t, "parent": None}}
    for name, row, layers, train, devel in students:
        models[name] = {"row": row, "seed": int(name[-2:]), "layers": layers, "file": "train.tsv",
                        "train_f1": train, "devel_f1": devel, "parent": "t"}
    return {"models": models}


def test_section_10_sets_each_depths_order_on_train_against_its_order_on_devel():
    section = load("report_fit")
    assert "Not measured yet" in section.fit_section(None)[0]
    # The row behind on devel also fits train less: the same order.
    text = "\n".join(section.fit_section(_fit(0.99, 0.87, [
        ("h-s13", "x/hinton-4", 4, 0.985, 0.84), ("h-s14", "x/hinton-4", 4, 0.985, 0.83),
        ("c-s13", "x/cal-4", 4, 0.98, 0.82)])))
    assert "| `h-s13` | `x/hinton-4`, 13 | 4 | 98.50 | 84.00 | 14.50 | \u22120.50 | \u22123.00 |" in text
    assert "`x/hinton-4` (n=2): \u22120.50 against its teacher on train, \u22123.50 on devel" in text
    assert "opens on unseen text" not in text  # they fit train less than the teacher: no such reading
    assert ("At 4 layers (means over the seeds scored) the order on train is `x/hinton-4` 98.50 > `x/cal-4` 98.00; "
            "on devel `x/hinton-4` 83.50 > `x/cal-4` 82.00: the same order") in text
    assert "`x/cal-4` scores 1.50 below `x/hinton-4` on devel and fits train 0.50 less." in text
    # The row that fits the gold tags best scores lowest on devel: the orders differ, and
    # no verdict about capacity is drawn from train F1.
    text = "\n".join(section.fit_section(_fit(0.99, 0.87, [
        ("o-s13", "x/og-6", 6, 0.995, 0.85), ("c-s13", "x/cal-6", 6, 0.97, 0.86),
        ("h-s13", "x/hinton-3", 3, 0.95, 0.82)])))
    assert ("the order on train is `x/og-6` 99.50 > `x/cal-6` 97.00; on devel `x/cal-6` 86.00 > `x/og-6` 85.00: "
            "not the same order") in text
    assert "`x/og-6` scores 1.00 below `x/cal-6` on devel and fits train 2.50 more." in text
    assert "At 3 layers" not in text  # one row at that depth: nothing to set it against
    # Every student fits train at least as well as the teacher and scores below it on devel.
    text = "\n".join(section.fit_section(_fit(0.955, 0.87, [
        ("o-s13", "x/og-6", 6, 0.995, 0.85), ("c-s13", "x/cal-6", 6, 0.97, 0.86)])))
    assert ("Every student scored (2) fits the gold tags of the text it trained on at least as well as its "
            "teacher (+1.50 to +4.00) and scores below it on devel (\u22121.00 to \u22122.00)") in text
    assert "it opens on unseen text" in text
    assert "capacity" not in text.split("|---")[-1]


def test_section_10_sets_each_student_against_the_teacher_build_it_learnt_from():
    """A teacher rebuilt on a replaced machine scores differently on train; a student
    is compared with the build finished before its run, and each build is a line."""
    section = load("report_fit")
    fit = _fit(0.96, 0.87, [("old-s13", "x/hinton-4", 4, 0.97, 0.84), ("new-s13", "x/pkd-4", 4, 0.95, 0.85)])
    t = fit["models"]["t"]
    fit["models"]["t"] = {**t, "train_f1": 0.955, "devel_finished": "2026-12-03T15:56",
                          "earlier": [{**t, "devel_finished": "2026-12-02T14:00"}]}
    fit["models"]["old-s13"]["devel_finished"] = "2026-12-02T17:00"  # learnt from the first build (96.00)
    fit["models"]["new-s13"]["devel_finished"] = "2026-12-03T18:00"  # from the rebuild (95.50)
    text = "\n".join(section.fit_section(fit))
    assert "| `t` (build of 2026-12-02) | `x/teacher`, 13 | 12 | 96.00 |" in text
    assert "| `t` (build of 2026-12-03) | `x/teacher`, 13 | 12 | 95.50 |" in text
    assert "| `old-s13` | `x/hinton-4`, 13 | 4 | 97.00 | 84.00 | 13.00 | +1.00 | \u22123.00 |" in text
    assert "| `new-s13` | `x/pkd-4`, 13 | 4 | 95.00 | 85.00 | 10.00 | \u22120.50 | \u22122.00 |" in text


def test_the_gpu_figures_in_the_report_are_read_from_the_check_s_files(tmp_path, monkeypatch):
    """Section 7's GPU part says "not yet measured" until gpu_check.sh has written its
    files, then renders each mode's speed from them and the first and second pass
    times gpu_passes.py printed, with the steady speed worked out from those."""
    gpu = load("report_gpu")
    monkeypatch.setattr(gpu, "GPU", tmp_path)
    assert "not yet measured" in gpu.gpu_section()[0]
    mode = {"documents": 10, "tokens": 2000, "tokens_per_s": 1000.0, "ms_per_abstract": 200.0,
            "agreement": 1.0, "f1": 0.85, "f1_loss_points": 0.0}
    (tmp_path / "tagging.json").write_text(json.dumps({
        "hardware": "Some GPU", "date": "2026-12-04T13:38:50+00:00", "documents": 10,
        "modes": {"fp32": mode, "bf16": {**mode, "tokens_per_s": 250.0, "agreement": 0.99}}}))
    (tmp_path / "tests.txt").write_text(".....\n5 passed in 14.79s\n")
    (tmp_path / "second-pass.txt").write_text(
        "10 docs\nauto         fp32: 1.00s then 0.50s for 10 docs; budget 32768\n"
        "auto         bf16: 3.00s then 0.40s for 10 docs; budget 32768\n"
        "transformers fp32: 1.20s then 0.60s for 10 docs; budget 32768\n")
    text = "\n".join(gpu.gpu_section())
    assert "Some GPU" in text and "5 passed in 14.79s" in text
    assert "| bf16 | 250 |" in text and "0.9900" in text
    assert "first pass fp32 1.00 s, bf16 3.00 s; second pass fp32 0.50 s, bf16 0.40 s" in text
    assert "about 4,000 tokens/s in fp32" in text   # 2000 tokens in 0.50 s
    assert "transformers engine's second pass: fp32 0.60 s" in text
