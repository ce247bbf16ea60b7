"""The experiment queue's state: the jobs in ``queue.json`` of the experiment folder
(read and written under a lock), where each job's code, model, checkpoint and log
live, and the edits ``experiments/experiment_queue.py`` makes to the queue (add,
reorder, drop, repin, retry). The runner that works through it is
``queue_runner.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path

import fastbioner

from . import runs
from .paths import REPO

EXP = Path(os.environ.get("FASTBIONER_EXPERIMENTS", Path.home() / "fastbioner-experiments"))


def slug(row_id: str, seed: int) -> str:
    return f"{row_id.replace('/', '__')}@{seed}"


@contextmanager
def locked_state():
    """The queue's state, read and written under a lock (``add`` and the runner
    may touch it at the same time)."""
    from filelock import FileLock  # the same flock as before on POSIX (a runner of an older
    # commit still excludes this one); also on Windows

    EXP.mkdir(parents=True, exist_ok=True)
    path = EXP / "queue.json"
    with FileLock(EXP / "queue.lock"):
        state = json.loads(path.read_text()) if path.is_file() else {"jobs": []}
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        os.replace(tmp, path)


def head_commit() -> str:
    return resolve_commit("HEAD")


def resolve_commit(ref: str) -> str:
    """``ref`` (a hash of any length, a branch, ``HEAD~2``) as the 12-digit hash jobs are
    pinned to, so one commit always gets one worktree however it was named."""
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", "--short=12",
                           f"{ref}^{{commit}}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{ref}: not a commit of {REPO}")
    return done.stdout.strip()


def code_dir(commit: str) -> Path:
    """The job's code: a worktree pinned to ``commit`` (made on first use)."""
    folder = EXP / "code" / commit
    if not (folder / "core" / "fastbioner").is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), commit],
                       check=True, capture_output=True)
    return folder


def registered(model: str) -> bool:
    return (EXP / "home" / "models" / model / "fastbioner.json").is_file()


def manifest(model: str) -> dict:
    return json.loads((EXP / "home" / "models" / model / "fastbioner.json").read_text())


def checkpoint_state(job: dict) -> dict | None:
    """The progress of the job's last checkpoint (step, total_steps, history, written),
    or None when it has none (or one being written): the library's
    :func:`fastbioner.checkpoint_progress` in the queue's registry."""
    return fastbioner.checkpoint_progress(job["model"], EXP / "home" / "models")


def has_checkpoint(job: dict) -> bool:
    """Whether the job has run far enough to leave a checkpoint (it resumes from it)."""
    return checkpoint_state(job) is not None


def checkpoint_written(job: dict) -> float | None:
    """When the job's last checkpoint was written (epoch seconds), or None."""
    return (checkpoint_state(job) or {}).get("written")


def finish_by() -> float | None:
    """The time (epoch seconds) by which every run should have ended, when one is set
    (``experiment_queue.py finish-by``): the end of a working block, after which the
    machine may be replaced and a run still going is lost with its checkpoints."""
    try:
        return float((EXP / "FINISH_BY").read_text().strip())
    except (OSError, ValueError):
        return None


def set_finish_by(when: float | None) -> None:
    EXP.mkdir(parents=True, exist_ok=True)
    if when is None:
        (EXP / "FINISH_BY").unlink(missing_ok=True)
    else:
        (EXP / "FINISH_BY").write_text(f"{when:.0f}\n")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a reused pid is not our run
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.split(")")[-1].split()[0] == "Z":
            return False
        return b"fastbioner" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def failed_with_error(job: dict) -> bool:
    """Whether the job's last attempt ended in an error (its log ends with a
    traceback or the CLI's error line) rather than being stopped."""
    path = EXP / "logs" / f"{slug(job['row'], job['seed'])}.log"
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - 4000))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return False
    tail = tail.rsplit("\n=== ", 1)[-1]
    return "Traceback" in tail or "fastbioner: error" in tail


def normalised(args: list[str]) -> list[str]:
    """A command without its model name, its paths as :func:`runs.portable` writes them:
    two commands that differ only there are one run."""
    out, skip = [], False
    for a in map(runs.portable, args):
        if skip:
            skip = False
            continue
        if a == "--name":
            skip = True
            continue
        out.append(a)
    return out


def job_for(row: runs.Row, seed: int, commit: str) -> dict:
    args = row.command(seed)[1:]  # without the program name
    return {"row": row.id, "seed": seed, "args": args, "model": row.model_name(seed), "commit": commit,
            "requires": list(row.requires), "state": "pending", "attempts": 0}


def add(rows: list[runs.Row], seeds: list[int] | None, commit: str, front: bool = False,
        again: bool = False) -> int:
    """Queue each row's seeds (or ``seeds``) not queued yet. A (row, seed) already in
    the results is left out unless ``again``: on a replaced machine, whose queue went
    with it, re-adding a whole table queues only what was never run (a missing
    teacher is still rebuilt, as the prerequisite of the rows that need it).

    A row of one model (a teacher: no seed in its model's name) has its seeds fixed:
    other ``seeds`` would register that model again from another seed, or repeat
    another row (``teacher-packed-s14`` at seed 13 is ``teacher-packed``), so they are
    refused before anything is queued."""
    fixed = [r.id for r in rows if seeds and not r.per_seed_name and set(seeds) - set(r.seeds)]
    if fixed:
        raise ValueError(f"{', '.join(fixed)}: one model each, of seed(s) "
                         f"{', '.join(str(s) for r in rows if r.id in fixed for s in r.seeds)}; "
                         "--seeds does not apply (queue them without it)")
    added = 0
    recorded = {} if again else runs.load_results()
    with locked_state() as state:
        known = {(j["row"], j["seed"]) for j in state["jobs"]}
        known |= {(row_id, int(seed)) for row_id, by_seed in recorded.items() for seed in by_seed}
        new = []
        for row in rows:
            for seed in seeds or row.seeds:
                if (row.id, seed) in known:
                    continue
                new.append(job_for(row, seed, commit))
                known.add((row.id, seed))
        state["jobs"] = new + state["jobs"] if front else state["jobs"] + new
        added = len(new)
    return added


def selects(job: dict, specs: list[str]) -> bool:
    """Whether a job is one of ``specs``: a row id (each of its seeds) or ``ROW@SEED``."""
    return job["row"] in specs or f"{job['row']}@{job['seed']}" in specs


def spec_order(job: dict, specs: list[str]) -> int:
    """The position in ``specs`` that selected the job (``ROW@SEED`` before ``ROW``)."""
    seeded = f"{job['row']}@{job['seed']}"
    return specs.index(seeded) if seeded in specs else specs.index(job["row"])


def move_to_front(specs: list[str]) -> int:
    """The pending jobs ``specs`` select (in the order given; a row's seeds in
    order) before every other pending job."""
    with locked_state() as state:
        jobs = state["jobs"]
        chosen = sorted((j for j in jobs if j["state"] == "pending" and selects(j, specs)),
                        key=lambda j: (spec_order(j, specs), j["seed"]))
        rest = [j for j in jobs if not any(j is c for c in chosen)]
        first = next((i for i, j in enumerate(rest) if j["state"] == "pending"), len(rest))
        state["jobs"] = rest[:first] + chosen + rest[first:]
    return len(chosen)


def drop(specs: list[str], stop: bool = False) -> tuple[int, int]:
    """The pending jobs ``specs`` select out of the queue (a checkpoint stays on disk:
    queued again, the job resumes from it); with ``stop``, the running ones they select
    too, their runs stopped as ``stop`` stops every run (the CLI's Ctrl-C to the run's
    process group: a checkpoint, then exit; a paused run is continued so that it can):
    to give a core to another job now, without stopping the runner and every other run
    with it. Returns (pending dropped, running stopped)."""
    with locked_state() as state:
        chosen = [j for j in state["jobs"] if selects(j, specs) and
                  (j["state"] == "pending" or (stop and j["state"] == "running"))]
        stopped = 0
        for j in chosen:
            if j["state"] == "running" and j.get("pid") and alive(j["pid"]):
                os.killpg(j["pid"], signal.SIGINT)
                if j.get("stopped"):
                    os.killpg(j["pid"], signal.SIGCONT)
                stopped += 1
        state["jobs"] = [j for j in state["jobs"] if not any(j is c for c in chosen)]
    return len(chosen) - stopped, stopped


def repin(commit: str) -> int:
    """The pending jobs that never started move to ``commit``'s code, their commands
    rebuilt from the rows at that code (a job under way keeps the code it began with)."""
    moved = 0
    with locked_state() as state:
        rows = {r.id: r for r in runs.all_rows()}
        for j in state["jobs"]:
            started = has_checkpoint(j) or j.get("started")
            if j["state"] == "pending" and not started:
                if j["row"] in rows:
                    j.update(job_for(rows[j["row"]], j["seed"], commit))
                else:
                    j["commit"] = commit
                moved += 1
    return moved


def retry(row_ids: list[str], commit: str) -> int:
    """The failed jobs of ``row_ids`` pending again at ``commit`` (the fix of what
    made them fail). A job that never registered anything restarts whole: its
    checkpoint, if any, was made by the failing code."""
    rows = {r.id: r for r in runs.all_rows()}
    retried = 0
    with locked_state() as state:
        for j in state["jobs"]:
            if j["state"] == "failed" and j["row"] in row_ids and j["row"] in rows:
                j.update(job_for(rows[j["row"]], j["seed"], commit))
                retried += 1
    return retried


def runner_pid() -> int | None:
    path = EXP / "runner.pid"
    if not path.is_file():
        return None
    pid = int(path.read_text())
    try:
        os.kill(pid, 0)
        return pid
    except OSError:
        return None
