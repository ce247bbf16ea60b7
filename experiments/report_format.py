"""Formatting shared by the report's modules: percentages, sizes, times, an F1 cell
with its seed spread, where a run's kept weights came from, and which teacher build a
row learnt from."""

from __future__ import annotations

NOT_RUN = "not yet run"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.2f}"


def mb(n: int | None) -> str:
    return "–" if not n else f"{n / 1e6:.1f}"


def millions(n: int | None) -> str:
    return "–" if not n else f"{n / 1e6:.1f}M"


def minutes(s: float | None) -> str:
    return "–" if s is None else f"{s / 60:.0f} min"


def wall_cell(r: dict) -> str:
    """A row's wall time: its one run's, or the mean over its seeds' runs with their
    range (walls depend on the machine and on what ran beside them; seeds run on more
    than one kind of CPU say so, since their walls do not compare)."""
    timed = [x for x in (r.get("runs") or [r]) if x.get("wall_seconds") is not None]
    walls = [x["wall_seconds"] for x in timed]
    if len(walls) < 2:
        return minutes(walls[0] if walls else None)
    cpus = len({x.get("cpu") for x in timed})
    return (f"{minutes(sum(walls) / len(walls))} (mean; {min(walls) / 60:.0f}-{max(walls) / 60:.0f}"
            f"{f'; {cpus} kinds of CPU' if cpus > 1 else ''})")


def f1_cell(r: dict) -> str:
    """F1 as the mean over seeds, with the sample standard deviation and the seed
    count when more than one seed was run."""
    if r.get("f1") is None:
        return "–"
    if r.get("f1_sd") is not None:
        return f"{pct(r['f1'])} ± {100 * r['f1_sd']:.2f} (n={len(r.get('seeds') or [])})"
    return pct(r["f1"])


def converged(r: dict) -> str:
    """Where the kept weights came from: the best devel step of each seed against
    the run's steps. A best step at the last evaluation means the run may not have
    converged."""
    runs = r.get("runs") or [r]
    cells = []
    for x in runs:
        if x.get("best_step") is None or not x.get("steps"):
            continue
        last = " (last)" if x["best_step"] == x["steps"] else ""
        fell = diverged_at(x)
        cells.append(f"{x['best_step']}/{x['steps']}{last}" + (f" (diverged at step {fell})" if fell else ""))
    return ", ".join(cells) or "–"


def diverged_at(run: dict) -> int | None:
    """Where a recorded run diverged (:func:`fastbioner.research.diverged_at`)."""
    from fastbioner.research import diverged_at as diverged

    return diverged(run.get("history") or [])


def teacher_builds(teacher: dict) -> list[dict]:
    """A teacher row's builds, oldest first: the current one and those a rebuild on a
    replaced machine kept under ``earlier``."""
    return sorted([teacher, *(teacher.get("earlier") or [])], key=lambda b: b.get("finished") or "")


def build_before(builds: list[dict], done: str, key: str = "finished") -> dict:
    """Of a model's builds (oldest first), the one a run finished at ``done`` used: the
    last finished before it, else the oldest."""
    before = [b for b in builds if (b.get(key) or "") <= done]
    return before[-1] if before else builds[0]


def teacher_f1_for(teacher: dict | None, student: dict) -> float | None:
    """The F1 of the teacher build the student learnt from (the last one finished
    before each of its runs; their mean over the runs): a teacher rebuilt later is not
    the one it was distilled from."""
    if not teacher or teacher.get("f1") is None:
        return None
    builds = teacher_builds(teacher)
    f1s = []
    for run in student.get("runs") or [student]:
        done = run.get("finished")
        if not done:  # no date to place it by: the current build
            f1s.append(teacher.get("f1"))
            continue
        f1s.append(build_before(builds, done).get("f1"))
    f1s = [f for f in f1s if f is not None]
    return sum(f1s) / len(f1s) if f1s else None
