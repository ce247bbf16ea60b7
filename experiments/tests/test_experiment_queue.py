"""experiments/experiment_queue.py (with queue_state.py and queue_runner.py) and the results it writes through runs.py:
wall time over attempts, a fresh machine's prerequisites, re-queueing only what was
never recorded, and rebuilt teachers. No run is started: the starter is replaced."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from experiments.tests.bench_scripts import load
from experiments.tests.queue_helpers import latest_checkpoint


def test_a_jobs_wall_time_sums_its_attempts_and_leaves_out_its_pauses():
    queue = load("experiment_queue")
    job = {"started": 1000.0}
    queue.queue_runner.tick(job, 1100.0)          # ran 100 s
    job["stopped"] = True            # the pause switch stopped it
    queue.queue_runner.tick(job, 1150.0)
    job["stopped"] = False
    queue.queue_runner.tick(job, 1180.0)          # ran 30 s more, then the session ended
    job["started"] = job["ticked"] = 5000.0   # resumed in a later session
    queue.queue_runner.tick(job, 5020.0)
    assert job["run_seconds"] == pytest.approx(150.0)


def test_a_run_that_ended_while_no_runner_watched_adds_no_time(tmp_path, monkeypatch):
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # The last runner ticked it at t = 1000 and the session ended; this runner starts much later.
    job = {"row": "bc5cdr/og-3", "seed": 13, "args": ["distill", "--epochs", "3"], "model": "m-s13",
           "commit": "abc", "requires": [], "state": "running", "attempts": 0, "pid": dead.pid,
           "started": 900.0, "ticked": 1000.0, "run_seconds": 100.0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [job]}))
    queue.queue_runner.step(0)   # no slot: it only settles the ended run
    (settled,) = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert settled["state"] == "pending"        # it resumes from its checkpoint
    assert settled["run_seconds"] == pytest.approx(100.0)


def test_on_a_fresh_machine_a_missing_prerequisite_takes_the_free_slot_first(tmp_path, monkeypatch):
    """The teacher is gone (a replaced machine): it is queued and started before a later
    job that needs nothing, however the queue was ordered."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    teacher = queue.runs.Row("x/teacher", 1, "x", "teacher", "teacher-x", ("train-teacher",), 3,
                                     per_seed_name=False)
    monkeypatch.setattr(queue.runs, "all_rows", lambda: [teacher])
    started = []
    monkeypatch.setattr(queue.queue_runner, "start_job", lambda job, threads=1: started.append(job["row"]) or 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid == 4242)
    student = {"row": "x/og-3", "seed": 13, "args": ["distill"], "model": "og-s13", "commit": "abc",
               "requires": ["x/teacher"], "state": "pending", "attempts": 0}
    free = {"row": "x/other-teacher", "seed": 14, "args": ["train-teacher"], "model": "other-s14",
            "commit": "abc", "requires": [], "state": "pending", "attempts": 0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [student, free]}))
    queue.queue_runner.step(1)
    assert started == ["x/teacher"]
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert [(j["row"], j["state"]) for j in jobs] == [
        ("x/teacher", "running"), ("x/og-3", "pending"), ("x/other-teacher", "pending")]


def test_a_teacher_every_waiting_job_needs_runs_on_every_slots_core(tmp_path, monkeypatch):
    """On a fresh machine the rebuilt teacher is all the queue can run: it gets both
    cores instead of one; beside a job that needs nothing from it, one core."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    threads = {}
    monkeypatch.setattr(queue.queue_runner, "start_job",
                        lambda job, threads_=1: threads.setdefault(job["row"], threads_) and 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid == 4242)

    def job(row, requires=()):
        return {"row": row, "seed": 13, "args": ["distill"], "model": row.replace("/", "-"), "commit": "abc",
                "requires": list(requires), "state": "pending", "attempts": 0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [
        job("x/teacher"), job("x/og-6", ["x/teacher"]), job("x/hinton-6", ["x/teacher"])]}))
    queue.queue_runner.step(2)
    assert threads == {"x/teacher": 2}

    threads.clear()
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [
        job("x/teacher"), job("x/og-6", ["x/teacher"]), job("y/teacher")]}))
    queue.queue_runner.step(2)
    assert threads == {"x/teacher": 1, "y/teacher": 1}


def test_a_job_queued_beside_a_teacher_on_both_cores_waits_for_a_free_core(tmp_path, monkeypatch):
    """The teacher runs on both cores; a job added by hand meanwhile needs nothing from
    it, yet must not start a third thread on two cores: it starts once the teacher ends."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    monkeypatch.setattr(queue.qs, "registered", lambda model: False)
    started = {}
    pids = iter(range(4242, 4300))
    monkeypatch.setattr(queue.queue_runner, "start_job",
                        lambda job, threads_=1: started.setdefault(job["row"], (threads_, next(pids)))[1])
    live = {4242, 4243}
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid in live)

    def job(row, requires=()):
        return {"row": row, "seed": 13, "args": ["distill"], "model": row.replace("/", "-"), "commit": "abc",
                "requires": list(requires), "state": "pending", "attempts": 0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [job("x/teacher"), job("x/og-6", ["x/teacher"])]}))
    queue.queue_runner.step(2)
    assert started == {"x/teacher": (2, 4242)}

    state = json.loads((tmp_path / "queue.json").read_text())
    state["jobs"].append(job("y/teacher"))   # queued by hand while the teacher runs
    (tmp_path / "queue.json").write_text(json.dumps(state))
    queue.queue_runner.step(2)
    assert "y/teacher" not in started

    live.discard(4242)   # the teacher ended (its model is registered now)
    monkeypatch.setattr(queue.qs, "registered", lambda model: model == "x-teacher")
    monkeypatch.setattr(queue.queue_runner, "record", lambda job, wall: 0.9)
    queue.queue_runner.step(2)
    assert started["y/teacher"][0] == 1 and started["x/og-6"][0] == 1


def test_adding_a_table_again_queues_only_the_runs_not_recorded(tmp_path, monkeypatch):
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {"x/og-3": {"13": {"f1": 0.8}}})
    row = queue.runs.Row("x/og-3", 2, "x", "og", "og", ("distill",), 6, seeds=(13, 14, 15))
    assert queue.qs.add([row], None, "abc") == 2
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert [j["seed"] for j in jobs] == [14, 15]
    assert queue.qs.add([row], None, "abc", again=True) == 1   # seed 13 again, on request
    assert queue.qs.add([row], None, "abc") == 0


def test_a_teacher_row_of_a_fixed_seed_refuses_other_seeds(tmp_path, monkeypatch, capsys):
    """`add bc5cdr/teacher-packed-s14 --seeds 13` would have queued seed 14's teacher at
    seed 13: the same command as the seed-13 row, recorded from it under the wrong row."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    teacher = queue.runs.Row("x/teacher-s14", 5, "x", "teacher, seed 14", "teacher-x-s14",
                                     ("train-teacher",), 3, seeds=(14,), per_seed_name=False)
    student = queue.runs.Row("x/og-3", 2, "x", "og", "og", ("distill",), 6)
    with pytest.raises(ValueError, match="x/teacher-s14.*seed\\(s\\) 14"):
        queue.qs.add([student, teacher], [13], "abc")
    assert not (tmp_path / "queue.json").exists() or json.loads((tmp_path / "queue.json").read_text())["jobs"] == []
    assert queue.qs.add([teacher], [14], "abc") == 1 and queue.qs.add([student], [15], "abc") == 1
    assert queue.qs.add([teacher], None, "abc") == 0  # its one seed, queued already
    monkeypatch.setattr(queue.runs, "all_rows", lambda: [teacher])
    with pytest.raises(SystemExit):
        queue.main(["add", "x/teacher-s14", "--seeds", "13"])
    assert "--seeds does not apply" in capsys.readouterr().err


def test_a_run_from_before_its_teacher_was_rebuilt_is_not_the_same_run():
    queue = load("experiment_queue")
    job = {"row": "x/og-3", "seed": 13, "args": ["distill", "--lr", "4e-4", "--name", "x-og-3-s13"],
           "requires": ["x/teacher"]}
    sweep = {"command": "fastbioner distill --lr 4e-4 --name x-sweep-s13", "finished": "2026-12-01T06:00:00"}
    teacher = {"f1": 0.87, "finished": "2026-12-01T12:00:00", "earlier": [{"f1": 0.86}]}
    assert queue.queue_runner.same_run_recorded(job, {"x/sweep": {"13": sweep}})[0] == "x/sweep"
    assert queue.queue_runner.same_run_recorded(job, {"x/sweep": {"13": sweep}, "x/teacher": {"13": teacher}}) is None
    later = {**sweep, "finished": "2026-12-01T13:00:00"}   # distilled from the rebuilt teacher
    assert queue.queue_runner.same_run_recorded(job, {"x/sweep": {"13": later},
                                                      "x/teacher": {"13": teacher}})[0] == "x/sweep"


def test_results_hold_portable_commands_and_a_recorded_run_matches_this_machines_job():
    """Results files are committed: their commands name ../shared and ~, never this
    machine's folders, and the queue still knows a recorded run when it meets it again."""
    from pathlib import Path

    queue = load("experiment_queue")
    runs = queue.runs
    here = f"{runs.REPO.parent / 'shared'}/data/bc5cdr/iob/train.tsv"
    base = f"{Path.home()}/.cache/fastbioner/base-models/all-MiniLM-L6-v2"
    args = ["distill", "--train", here, "--student-from", base, "--name", "x-s13"]
    row = runs.Row("x/pkd", 5, "x", "t", "x", tuple(args[:-2]), 6)
    entry = runs.result_entry(row, 13, "fastbioner " + " ".join(args), None, {}, "abc")
    assert entry["command"] == ("fastbioner distill --train ../shared/data/bc5cdr/iob/train.tsv --student-from "
                                "~/.cache/fastbioner/base-models/all-MiniLM-L6-v2 --name x-s13")
    job = {"row": "x/other", "seed": 13, "args": [*args[:-1], "x-other-s13"], "requires": []}
    assert queue.queue_runner.same_run_recorded(job, {"x/pkd": {"13": entry}})[0] == "x/pkd"
    assert queue.queue_runner._shape(job["args"]) == queue.queue_runner._shape(entry["command"].split()[1:])


def test_a_row_run_again_keeps_the_earlier_result_beside_the_new(tmp_path):
    tables = load("runs")
    path = tmp_path / "rows.json"
    row = tables.Row("x/teacher", 1, "x", "teacher", "teacher-x", ("train-teacher",), 3, per_seed_name=False)
    tables.record(row, 13, {"f1": 0.86, "command": "c", "finished": "day 1"}, path)
    tables.record(row, 13, {"f1": 0.85, "command": "c", "finished": "day 2"}, path)
    entry = tables.load_results(path)["x/teacher"]["13"]
    assert entry["f1"] == 0.85
    assert [e["f1"] for e in entry["earlier"]] == [0.86]
    report = load("benchmark_report")
    run = {"seed": 13, "epochs": 3, "wall_seconds": 60.0, "cpu": "cpu", "cores": 2}
    tables.record(row, 13, {**run, "f1": 0.84, "command": "c", "finished": "day 3"}, path)
    lines = report.commands_section([row], tables.aggregate(tables.load_results(path)))
    text = "\n".join(lines)
    assert "finished day 3" in text and "F1 85.00" in text and "F1 86.00" in text  # both earlier builds
    assert text.index("F1 85.00") < text.index("F1 86.00")


def test_a_run_stopped_part_way_resumes_before_a_new_one_starts(tmp_path, monkeypatch):
    """A session ended two runs part way; the next start resumes the one with a
    checkpoint ahead of a job queued before it that has not begun."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: {})
    started = []
    monkeypatch.setattr(queue.queue_runner, "start_job", lambda job, threads=1: started.append(job["row"]) or 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid == 4242)
    fresh = {"row": "x/og-3", "seed": 13, "args": ["distill"], "model": "og-s13", "commit": "abc",
             "requires": [], "state": "pending", "attempts": 0}
    part_way = {"row": "x/cal-3", "seed": 13, "args": ["distill"], "model": "cal-s13", "commit": "abc",
                "requires": [], "state": "pending", "attempts": 0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [fresh, part_way]}))
    latest = latest_checkpoint(queue, part_way)
    latest.mkdir(parents=True)
    (latest / "state.json").write_text(json.dumps({"state": {"step": 100, "total_steps": 1000}}))
    queue.queue_runner.step(1)
    assert started == ["x/cal-3"]
    queue.queue_runner.step(2)
    assert started == ["x/cal-3", "x/og-3"]


def test_status_shows_a_run_the_stopped_runner_left_as_stopped_with_its_clock_stopped(tmp_path, monkeypatch,
                                                                                     capsys):
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # Stopped at t = 1000 after 30 min of running; status is asked much later.
    job = {"row": "x/og-3", "seed": 15, "args": ["distill"], "model": "og-s15", "commit": "abc",
           "requires": [], "state": "running", "attempts": 1, "pid": dead.pid,
           "started": 900.0, "ticked": 1000.0, "run_seconds": 1800.0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [job]}))
    queue.status()
    line = capsys.readouterr().out.splitlines()[-1]
    assert "stopped, resumes at the next start" in line and "30 min run" in line
    # Its checkpoint says how far it got and how it is scoring.
    latest = tmp_path / "home" / "models" / ".checkpoints" / "og-s15" / "latest"
    latest.mkdir(parents=True)
    (latest / "state.json").write_text(json.dumps({"state": {"step": 200, "total_steps": 855, "history": [
        {"step": 95, "f1": 0.7712}, {"step": 190, "f1": 0.7650}]}}))
    queue.status()
    line = capsys.readouterr().out.splitlines()[-1]
    assert "checkpoint at step 200 of 855, devel F1 76.50 at step 190 (best 77.12 at 95)" in line


def test_status_says_which_jobs_wait_for_a_teacher_not_built_on_this_machine(tmp_path, monkeypatch, capsys):
    """A fresh machine: the students' time to run comes after their teacher's build."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    made = set()
    monkeypatch.setattr(queue.qs, "registered", lambda model: model in made)

    def job(row, requires=(), state="pending"):
        return {"row": row, "seed": 13, "args": ["distill"], "model": f"{row}-m", "commit": "abc",
                "requires": list(requires), "state": state, "attempts": 0}

    jobs = [job("x/og-3", ["x/teacher"]), job("y/og-3", ["y/teacher"]), job("y/teacher")]
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": jobs}))
    queue.status()
    lines = capsys.readouterr().out.splitlines()[1:]
    assert "waits for x/teacher (not built on this machine; the runner queues it first)" in lines[0]
    assert "waits for y/teacher (not built on this machine)" in lines[1] and "queues it" not in lines[1]
    assert "waits for" not in lines[2]
    made.add("y/teacher-m")            # the teacher was built
    queue.status()
    lines = capsys.readouterr().out.splitlines()[1:]
    assert "waits for x/teacher" in lines[0] and "waits for" not in lines[1]


def test_front_and_drop_take_one_seed_of_a_row_or_all_of_them(tmp_path, monkeypatch):
    """`front bc5cdr/og-6@13 bc5cdr/hinton-6@13`: one seed of each row first, so a
    comparison reads early; the rows' other seeds keep their place."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)

    def job(row, seed, state="pending"):
        return {"row": row, "seed": seed, "args": ["distill"], "model": f"{row}-s{seed}", "commit": "abc",
                "requires": [], "state": state, "attempts": 0}

    jobs = [job("x/done", 13, "done"), job("x/teacher", 14), job("x/og-6", 13), job("x/og-6", 14),
            job("x/hinton-6", 13), job("x/hinton-6", 14)]
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": jobs}))

    def order():
        return [(j["row"], j["seed"]) for j in json.loads((tmp_path / "queue.json").read_text())["jobs"]]

    assert queue.main(["front", "x/hinton-6@13", "x/og-6@13"]) == 0
    assert order() == [("x/done", 13), ("x/hinton-6", 13), ("x/og-6", 13), ("x/teacher", 14),
                       ("x/og-6", 14), ("x/hinton-6", 14)]
    assert queue.main(["drop", "x/og-6@14"]) == 0
    assert ("x/og-6", 14) not in order() and ("x/og-6", 13) in order()
    assert queue.main(["drop", "x/hinton-6"]) == 0
    assert [r for r, _ in order()] == ["x/done", "x/og-6", "x/teacher"]
    assert queue.main(["drop", "x/done"]) == 0   # a finished job is not pending: it stays
    assert order()[0] == ("x/done", 13)


def test_drop_stop_ends_one_running_job_and_leaves_the_others_running(tmp_path, monkeypatch, capsys):
    """`drop --stop ROW@SEED` frees a core now: that run's process group is ended and the job
    leaves the queue; the other run goes on; without --stop a running job is left alone."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    # Named so that the queue takes them for its runs (a pid reused by another program is not stopped).
    # Each sets its own Ctrl-C handler, as the CLI does: a test run in the background inherits SIGINT ignored.
    fake_run = ("import signal, sys, time; signal.signal(signal.SIGINT, lambda *_: sys.exit(130)); "
                "print('ready', flush=True); time.sleep(300)")
    runs = [subprocess.Popen([sys.executable, "-c", fake_run, "fastbioner"], start_new_session=True,
                             stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert [run.stdout.readline().strip() for run in runs] == ["ready", "ready"]  # handlers set
    try:
        jobs = [{"row": "x/og-6", "seed": seed, "args": ["distill"], "model": f"x/og-6-s{seed}", "commit": "abc",
                 "requires": [], "state": "running", "attempts": 0, "pid": run.pid}
                for seed, run in zip((13, 14), runs)]
        (tmp_path / "queue.json").write_text(json.dumps({"jobs": jobs}))
        assert queue.main(["drop", "x/og-6@13"]) == 0
        assert "0 pending job(s) dropped" in capsys.readouterr().out and runs[0].poll() is None
        assert queue.main(["drop", "--stop", "x/og-6@13"]) == 0
        assert "1 running job(s) stopped and dropped" in capsys.readouterr().out
        assert runs[0].wait(timeout=30) == 130  # the CLI's Ctrl-C: it checkpoints, then exits
        assert runs[1].poll() is None
        left = json.loads((tmp_path / "queue.json").read_text())["jobs"]
        assert [(j["seed"], j["state"]) for j in left] == [(14, "running")]
    finally:
        for run in runs:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def test_a_commit_however_named_pins_one_worktree(tmp_path, monkeypatch):
    """`add --commit f4927db` and the runner's own `f4927dbf6a0d` are one commit: they must
    share one worktree (two names made two), and a name that is no commit is refused."""
    qs = load("queue_state")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    full = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.setattr(qs, "REPO", tmp_path)
    assert qs.resolve_commit(full[:7]) == qs.resolve_commit(full) == qs.head_commit() == full[:12]
    with pytest.raises(SystemExit, match="nosuchref: not a commit"):
        qs.resolve_commit("nosuchref")


def test_the_runner_outlives_a_full_disk_and_goes_on_watching(tmp_path, monkeypatch, capsys):
    """Session 40: the teacher caches filled the disk, writing the queue's state failed
    and the runner died with its run still going. Now it says so and polls again."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(queue.queue_runner, "POLL_SECONDS", 0)
    monkeypatch.setattr(queue.queue_runner, "ensure_base_models", lambda: None)
    calls = []

    def step(slots):
        calls.append(slots)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return False

    monkeypatch.setattr(queue.queue_runner, "step", step)
    assert queue.queue_runner.run(2) == 0
    assert calls == [2, 2]
    out = capsys.readouterr().out
    assert "could not update the queue" in out and "No space left on device" in out


def test_on_a_cpu_without_bfloat16_a_bf16_row_runs_and_is_recorded_in_fp32(tmp_path, monkeypatch):
    """--cpu-bf16 is refused by a CPU without native bfloat16 (an EPYC without AVX512):
    the row would fail three times there. The runner leaves it off, says so, and records
    the command the run trained with; where bfloat16 is native the flag stays."""
    queue = load("experiment_queue")
    runner = queue.queue_runner
    job = {"row": "bc5cdr/cnn", "seed": 13, "model": "cnn-bf16-s13", "commit": "abc", "attempts": 0,
           "args": ["distill", "--epochs", "10", "--cpu-bf16", "--name", "cnn-bf16-s13"]}
    assert runner.launched_args(dict(job), bf16=True) == job["args"]
    fp32 = dict(job)
    assert "--cpu-bf16" not in runner.launched_args(fp32, bf16=False) and fp32["bf16_left_off"]
    assert runner.recorded_args(fp32) == ["distill", "--epochs", "10", "--name", "cnn-bf16-s13"]
    assert runner.recorded_args(job) == job["args"]
    # The real starter, its process replaced: what it launches and what the result says.
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    monkeypatch.setattr(runner, "bf16_here", lambda: False)
    monkeypatch.setattr(runner.qs, "code_dir", lambda commit: tmp_path / "code" / commit)  # no worktree made
    launched = []
    monkeypatch.setattr(runner.subprocess, "Popen",
                        lambda argv, **kw: launched.append(argv) or type("P", (), {"pid": 4242})())
    assert runner.start_job(job) == 4242
    assert "--cpu-bf16" not in launched[0] and job["bf16_left_off"]
    recorded = {}
    monkeypatch.setattr(runner.runs, "all_rows", lambda: [])
    monkeypatch.setattr(runner.qs, "manifest", lambda model: {})
    monkeypatch.setattr(runner.runs, "result_entry", lambda row, seed, command, *a: {"command": command, "f1": 0.8})
    monkeypatch.setattr(runner.runs, "record", lambda row, seed, entry: recorded.update(entry))
    runner.record(job, 100.0)
    assert recorded["command"] == "fastbioner distill --epochs 10 --name cnn-bf16-s13"


def test_a_prerequisite_recorded_elsewhere_is_still_built_where_a_waiting_job_reads_its_model(tmp_path, monkeypatch):
    """A fine-tuned base whose run is recorded (another machine, or another row's same
    command) but not built here: the student waiting for it would wait forever if the
    record stood in for it, so it runs; a recorded run nothing here reads stays reused."""
    queue = load("experiment_queue")
    monkeypatch.setattr(queue.qs, "EXP", tmp_path)
    recorded = {"x/ft-average": {"13": {"command": "fastbioner train-teacher --base avg --name other-s13",
                                        "finished": "2026-12-06T21:00:00", "f1": 0.77}}}
    monkeypatch.setattr(queue.runs, "load_results", lambda *a, **k: recorded)
    monkeypatch.setattr(queue.runs, "all_rows", lambda: [])
    started = []
    monkeypatch.setattr(queue.queue_runner, "start_job", lambda job, threads=1: started.append(job["row"]) or 4242)
    monkeypatch.setattr(queue.qs, "alive", lambda pid: pid == 4242)
    base = {"row": "x/minilm-ft-average", "seed": 13, "args": ["train-teacher", "--base", "avg", "--name", "ft-avg"],
            "model": "ft-avg", "commit": "abc", "requires": [], "state": "pending", "attempts": 0}
    student = {"row": "x/cnn-average", "seed": 13, "args": ["distill", "--student-embeddings", "ft-avg"],
               "model": "cnn-avg-s13", "commit": "abc", "requires": ["x/minilm-ft-average"], "state": "pending",
               "attempts": 0}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [base, student]}))
    queue.queue_runner.step(1)
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert started == ["x/minilm-ft-average"] and jobs[0]["state"] == "running"
    assert "same_as" not in jobs[0]

    # A queue left by the code before: the base marked done from the record, built nowhere.
    started.clear()
    left = {**base, "state": "done", "same_as": "x/ft-average"}
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [left, student]}))
    queue.queue_runner.step(1)
    jobs = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert started == ["x/minilm-ft-average"] and "same_as" not in jobs[0]

    # Nothing here reads it: the recorded run stands for it, and nothing runs.
    started.clear()
    (tmp_path / "queue.json").write_text(json.dumps({"jobs": [base]}))
    queue.queue_runner.step(1)
    (alone,) = json.loads((tmp_path / "queue.json").read_text())["jobs"]
    assert started == [] and alone["state"] == "done" and alone["same_as"] == "x/ft-average"
