#!/usr/bin/env python
"""The owner of the benchmark runs: a resumable queue of (row, seed) jobs that runs
in the background, two at a time, one torch thread each.

Two CPU cores, no GPU, a machine that may be replaced between working blocks and
whose processes stop when a session ends: so every run is a job in a queue kept in
an experiment folder outside the repository (``$FASTBIONER_EXPERIMENTS``, default
``~/fastbioner-experiments``), with its own model registry (``home/``), logs
(``logs/``) and the code each job runs (``code/<commit>``: a git worktree pinned to
the commit the job was queued at, so editing the repository never changes a running
experiment, and a resumed job continues with the code it started with).

    python -m experiments.experiment_queue add bc5cdr/og-3 bc5cdr/hinton-3 [--seeds 13 14 15]
    python -m experiments.experiment_queue add --table 0          # every row (and seed) of a table not
                                                                 # recorded yet (--again: those too)
    python -m experiments.experiment_queue start                  # the runner, detached; logs to queue.log
    python -m experiments.experiment_queue status
    python -m experiments.experiment_queue retry bc5cdr/og-3              # a failed job again, at HEAD
    python -m experiments.experiment_queue front bc5cdr/og-3 bc5cdr/hinton-3   # these pending jobs next
    python -m experiments.experiment_queue front bc5cdr/og-6@13 bc5cdr/hinton-6@13  # one seed of each first
    python -m experiments.experiment_queue drop bc5cdr/cnn384-minilm       # pending jobs out of the queue
    python -m experiments.experiment_queue drop --stop bc5cdr/og-6@14       # and a running one, stopped
    python -m experiments.experiment_queue finish-by 17:55        # start no run that would not end by then
                                                                 # (+90: in 90 minutes; off: no limit)
    python -m experiments.experiment_queue pause                  # SIGSTOP the runs (a quiet machine for timing)
    python -m experiments.experiment_queue resume
    python -m experiments.experiment_queue stop                   # stop the runner; runs stop at once, and
                                                                 # resume from their checkpoint next start

The runner starts the first pending job whose prerequisites are registered (a
row's teacher, say); a missing prerequisite (a fresh machine) is queued first. A job
whose process ended without registering its model is retried with ``--resume`` (it
continues from its last checkpoint) up to three times. Each finished job's result
is written at once to ``experiments/results/paper_rows.json`` of the repository the
runner was started from, so it can be committed. A job whose command (but for the
model's name) equals one already recorded is recorded from that run, not run again
(a sweep row at the tables' learning rate is the table row).

A working block ends with its machine, and a run still going then is lost with its
checkpoints: ``finish-by`` gives the block's end, and the runner then starts only the
runs expected to end before it (from the walls recorded for the same row, else for the
longest run of the same shape: corpus, student, depth, epochs, precision, unlabelled
text; scaled by this machine's pace once one of its runs has ended), taking later jobs
in the queue that fit rather than leaving the core to one that cannot finish. A run already going is not stopped.

This file is the command line; the queue's state is ``queue_state.py`` and the
runner ``queue_runner.py``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from . import queue_runner
from . import queue_state as qs
from . import runs


def parse_finish_by(text: str, now: float | None = None) -> float | None:
    """``HH:MM`` (the next such time, today or tomorrow), ``+MINUTES`` or ``off``."""
    now = time.time() if now is None else now
    if text == "off":
        return None
    if text.startswith("+"):
        return now + 60 * float(text[1:])
    hours, minutes = (int(x) for x in text.split(":"))
    day = time.localtime(now)
    when = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, hours, minutes, 0, 0, 0, -1))
    return when if when > now else when + 86400


def status() -> None:
    with qs.locked_state() as state:
        jobs = list(state["jobs"])
        pace = queue_runner.machine_pace(state)
    pid = qs.runner_pid()
    deadline = qs.finish_by()
    print(f"runner: {'running, pid ' + str(pid) if pid else 'not running'}"
          f"{'; PAUSED' if (qs.EXP / 'PAUSE').exists() else ''}"
          f"{'; finish by ' + time.strftime('%Y-%m-%d %H:%M', time.localtime(deadline)) if deadline else ''}"
          f"{f'; runs here take {pace:.2f}x the recorded walls' if pace != 1.0 else ''}")
    results = runs.load_results()
    for j in jobs:
        parts = []
        ran = None
        if j["state"] == "running" and not (j.get("pid") and qs.alive(j["pid"])):
            # The runner was stopped (or the session ended) with this run under way: its
            # clock stopped with it, and the next start resumes it.
            parts.append(f"stopped, resumes at the next start; {j.get('run_seconds', 0.0) / 60:.0f} min run "
                         "over its attempts")
        elif j["state"] == "running":
            ran = j.get("run_seconds", 0.0) + (0.0 if j.get("stopped") else
                                               time.time() - j.get("ticked", j["started"]))
            parts.append(f"pid {j.get('pid')}, {ran / 60:.0f} min run over its attempts")
        saved = qs.checkpoint_state(j) if j["state"] in ("running", "pending") else None
        if saved:
            parts.append(f"checkpoint at step {saved.get('step')} of {saved.get('total_steps')}")
            history = [h for h in saved.get("history") or [] if h.get("f1") is not None]
            if history:  # how the run is going, without waiting for its end
                best = max(history, key=lambda h: h["f1"])
                parts.append(f"devel F1 {100 * history[-1]['f1']:.2f} at step {history[-1]['step']} "
                             f"(best {100 * best['f1']:.2f} at {best['step']})")
        if j["state"] == "pending":
            # On a fresh machine the teacher is rebuilt first: its time comes before this one's.
            for req in j["requires"]:
                built = [x for x in jobs if x["row"] == req and qs.registered(x["model"])]
                if not built:
                    parts.append(f"waits for {req} (not built on this machine"
                                 f"{'' if any(x['row'] == req for x in jobs) else '; the runner queues it first'})")
        if j["state"] in ("pending", "running"):
            need = queue_runner.expected_seconds(j, results, ran, pace=pace)
            if need is not None:
                parts.append(f"about {need / 60:.0f} min {'to run' if j['state'] == 'pending' else 'left'}"
                             + (" (does not fit before the finish-by time)"
                                if deadline and time.time() + need > deadline else ""))
        if j.get("same_as"):
            parts.append(f"same run as {j['same_as']}")
        print(f"{j['state']:<8} {j['row']:<40} s{j['seed']:<3} {j['commit']} {', '.join(parts)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="queue rows (each of its seeds, or --seeds)")
    a.add_argument("rows", nargs="*")
    a.add_argument("--table", type=int)
    a.add_argument("--dataset")
    a.add_argument("--seeds", type=int, nargs="+")
    a.add_argument("--commit", help="code to run (default: the repository's HEAD)")
    a.add_argument("--front", action="store_true", help="before the jobs already queued")
    a.add_argument("--again", action="store_true", help="also a (row, seed) whose result is recorded")
    r = sub.add_parser("run", help="the runner, in the foreground")
    r.add_argument("--slots", type=int, default=2)
    s = sub.add_parser("start", help="the runner, detached (logs to EXP/queue.log)")
    s.add_argument("--slots", type=int, default=2)
    s.add_argument("--finish-by", metavar="HH:MM|+MIN|off", help="as the finish-by command, set before starting")
    fb = sub.add_parser("finish-by", help="start no run expected to end after this time (HH:MM, +MINUTES, off)")
    fb.add_argument("when", metavar="HH:MM|+MIN|off")
    rp = sub.add_parser("repin", help="move the pending jobs that never started to other code (default: HEAD)")
    rp.add_argument("--commit")
    rt = sub.add_parser("retry", help="failed jobs of these rows back to pending, at other code (default: HEAD; "
                        "the fix of what made them fail)")
    rt.add_argument("rows", nargs="+")
    rt.add_argument("--commit")
    fr = sub.add_parser("front", help="these rows' pending jobs next, in the order given (ROW@SEED: that seed)")
    fr.add_argument("rows", nargs="+")
    dr = sub.add_parser("drop", help="these rows' pending jobs out of the queue (a checkpoint stays on disk; "
                        "`add` queues the row again and it resumes; ROW@SEED: that seed)")
    dr.add_argument("rows", nargs="+")
    dr.add_argument("--stop", action="store_true", help="also stop and drop their running jobs, "
                    "as `stop` stops every run (a "
                    "checkpoint, then exit); the others run on, and `add` resumes a dropped one from its checkpoint")
    sub.add_parser("status")
    sub.add_parser("pause")
    sub.add_parser("resume")
    sub.add_parser("stop")
    args = parser.parse_args(argv)

    if args.cmd == "add":
        rows = runs.all_rows()
        unknown = set(args.rows) - {r.id for r in rows}
        if unknown:
            parser.error(f"unknown row(s): {', '.join(sorted(unknown))}")
        chosen = [r for r in rows if (not args.rows or r.id in args.rows)
                  and (args.table is None or r.table == args.table)
                  and (args.dataset is None or r.dataset == args.dataset)]
        if args.rows:  # in the order given
            chosen.sort(key=lambda r: args.rows.index(r.id))
        commit = qs.resolve_commit(args.commit or "HEAD")
        try:
            n = qs.add(chosen, args.seeds, commit, args.front, args.again)
        except ValueError as e:
            parser.error(str(e))
        print(f"queued {n} job(s) at {commit}")
        return 0
    if args.cmd == "run":
        return queue_runner.run(args.slots)
    text = getattr(args, "when", None) or getattr(args, "finish_by", None)  # finish-by, or start --finish-by
    if text:
        try:
            when = parse_finish_by(text)
        except ValueError:
            parser.error(f"finish-by: {text!r} is not HH:MM, +MINUTES or off")
        qs.set_finish_by(when)
        print("finish-by: " + (time.strftime("%Y-%m-%d %H:%M", time.localtime(when)) if when else "off"))
        if args.cmd == "finish-by":
            return 0
    if args.cmd == "start":
        stale = qs.finish_by()
        if stale is not None and stale <= time.time():  # a past block's end would hold every job
            qs.set_finish_by(None)
            print(f"finish-by {time.strftime('%Y-%m-%d %H:%M', time.localtime(stale))} had passed: cleared")
        if qs.runner_pid():
            print(f"the runner is already running (pid {qs.runner_pid()})")
            return 0
        qs.EXP.mkdir(parents=True, exist_ok=True)
        out = open(qs.EXP / "queue.log", "a")
        proc = subprocess.Popen([sys.executable, "-m", "experiments.experiment_queue",
                                 "run", "--slots", str(args.slots)],
                                cwd=qs.REPO, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        print(f"runner started (pid {proc.pid}); log: {qs.EXP / 'queue.log'}")
        return 0
    if args.cmd == "front":
        print(f"{qs.move_to_front(args.rows)} pending job(s) moved to the front")
        return 0
    if args.cmd == "drop":
        dropped, stopped = qs.drop(args.rows, stop=args.stop)
        print(f"{dropped} pending job(s) dropped" +
              (f", {stopped} running job(s) stopped and dropped" if stopped else ""))
        return 0
    if args.cmd == "repin":
        commit = qs.resolve_commit(args.commit or "HEAD")
        print(f"{qs.repin(commit)} pending job(s) now run at {commit}")
        return 0
    if args.cmd == "retry":
        commit = qs.resolve_commit(args.commit or "HEAD")
        print(f"{qs.retry(args.rows, commit)} failed job(s) pending again at {commit}")
        return 0
    if args.cmd == "status":
        status()
        return 0
    if args.cmd == "pause":
        (qs.EXP / "PAUSE").touch()
        print("paused: runs are stopped within a few seconds (the runner must be running)")
        return 0
    if args.cmd == "resume":
        (qs.EXP / "PAUSE").unlink(missing_ok=True)
        print("resumed")
        return 0
    if args.cmd == "stop":
        pid = qs.runner_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
        with qs.locked_state() as state:
            for j in state["jobs"]:
                if j["state"] == "running" and j.get("pid") and qs.alive(j["pid"]):
                    os.killpg(j["pid"], signal.SIGINT)  # the CLI's Ctrl-C: a checkpoint, then exit
        print("stopping: runs checkpoint and exit; `start` resumes them")
        return 0
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `status | head`: the reader stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
