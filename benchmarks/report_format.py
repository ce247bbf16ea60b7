"""Formatting shared by the report's modules: percentages, sizes, times, an F1 cell
with its seed spread, where a run's kept weights came from."""

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
    """Where a recorded run diverged (:func:`fastbioner.training.diverged_at`)."""
    from fastbioner.training import diverged_at as first_collapse

    return first_collapse(run.get("history") or [])
