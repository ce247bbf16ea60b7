"""Section 8 of docs/research/benchmarks.md: the tables' students train under CPU bf16 autocast;
table 8 runs two of their rows in fp32 with the same seed, and this section sets the
pairs side by side with the step speed-up ``bench_training_precision.py`` measured."""

from __future__ import annotations

import json

from .paths import TRAINING_PRECISION
from .report_format import NOT_RUN, minutes, pct

SPEED = TRAINING_PRECISION
CHECK_TABLE = 8
SUFFIX = "-fp32"


def _speed_lines() -> list[str]:
    if not SPEED.is_file():
        return ["Step speed: not measured yet (`python -m experiments.bench_training_precision --json "
                "experiments/results/training_precision.json`)."]
    speed = json.loads(SPEED.read_text(encoding="utf-8"))
    parts = [f"`{row}` {s['fp32_step_seconds']:.2f} s against {s['bf16_step_seconds']:.2f} s "
             f"({s['speed_up']:.2f}x)" for row, s in speed.get("rows", {}).items()]
    return [f"Seconds per optimisation step, fp32 against bf16 (one thread, median of {speed.get('repeat')} "
            f"alternated `--estimate {speed.get('steps')}` runs of each row's own command, {speed.get('cpu')}, "
            f"{speed.get('date', '')[:10]}): " + "; ".join(parts) + "."]


def precision_section(rows, results: dict) -> list[str]:
    """``results``: the aggregated results (each row's ``runs`` per seed)."""
    out = ["| row | seed | F1 fp32 | F1 bf16 (`--cpu-bf16`) | bf16 - fp32 (points) | Disease fp32 / bf16 | "
           "wall time fp32 / bf16 |", "|---|---|---|---|---|---|---|"]
    diffs = []
    for r in rows:
        if r.table != CHECK_TABLE or not r.id.endswith(SUFFIX):
            continue
        pair = r.id[: -len(SUFFIX)]
        by_seed = {run["seed"]: run for run in (results.get(pair) or {}).get("runs", [])
                   if "--cpu-bf16" in (run.get("command") or "")}
        fp32_runs = {run["seed"]: run for run in (results.get(r.id) or {}).get("runs", [])}
        for seed in r.seeds:
            a, b = fp32_runs.get(seed), by_seed.get(seed)
            if a is None or b is None:
                out.append(f"| `{pair}` | {seed} | {pct(a['f1']) if a else NOT_RUN} | "
                           f"{pct(b['f1']) if b else NOT_RUN} | | | |")
                continue
            d = 100 * (b["f1"] - a["f1"])
            diffs.append(d)
            dis = [(x.get("per_type") or {}).get("Disease", {}).get("f1") for x in (a, b)]
            out.append(f"| `{pair}` | {seed} | {pct(a['f1'])} | {pct(b['f1'])} | {d:+.2f} | "
                       f"{pct(dis[0])} / {pct(dis[1])} | {minutes(a.get('wall_seconds'))} / "
                       f"{minutes(b.get('wall_seconds'))} |")
    out += ["", *_speed_lines()]
    if diffs:
        out.append(f"Across the {len(diffs)} pair(s) run, bf16 minus fp32: "
                   + ", ".join(f"{d:+.2f}" for d in diffs) + " F1 points; compare with each row's "
                   "seed-to-seed spread in the tables above before calling it a difference. Wall times are "
                   "whole runs beside one other job on two cores (devel scorings included), so they move "
                   "with what ran beside them.")
    return out
