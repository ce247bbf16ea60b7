"""The DRET page's measured table (docs/research/dret.md, issue 68), generated from the
recorded runs: MiniLM fine-tuned on BC5CDR train from each base (today's, and the DRET
bases: merge, average, priority), with and without frozen embeddings, devel F1 by seed.

    python -m experiments.dret_table          # rewrites the table between the page's markers
    python -m experiments.dret_table --check  # exit 1 when the page is not the table of the records

Rows are table 9's ``bc5cdr/dret-ft-*`` rows of ``runs.toml``; a row with no recorded
seed says "not yet run", never a figure. The recorded ``bc5cdr/minilm-ft`` (today's
recipe, run on another machine in an earlier session) is listed beside them.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from . import runs
from .paths import REPO

PAGE = REPO / "docs" / "research" / "dret.md"
START, END = "<!-- dret-table:start -->", "<!-- dret-table:end -->"
PREFIX = "bc5cdr/dret-ft-"
REFERENCE = "bc5cdr/minilm-ft"


def _f1s(by_seed: dict) -> list[tuple[int, float]]:
    return sorted((int(seed), 100 * e["f1"]) for seed, e in by_seed.items() if e.get("f1") is not None)


def _cell(values: list[float]) -> str:
    if not values:
        return "not yet run"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f} ({len(values)} seeds)"


def _types(by_seed: dict) -> str:
    per = {}
    for entry in by_seed.values():
        for label, scores in (entry.get("per_type") or {}).items():
            per.setdefault(label, []).append(100 * scores["f1"])
    return ", ".join(f"{label} {statistics.mean(v):.2f}" for label, v in sorted(per.items())) or "-"


def _wall(by_seed: dict) -> str:
    walls = [e["wall_seconds"] / 60 for e in by_seed.values() if e.get("wall_seconds")]
    return f"{statistics.mean(walls):.0f} min" if walls else "-"


def table(results: dict | None = None) -> str:
    results = runs.load_results() if results is None else results
    rows = [r for r in runs.all_rows() if r.id.startswith(PREFIX)]
    lines = ["| row | base | embeddings | devel F1 by seed | devel F1 | per type (mean) | wall (one thread) |",
             "|---|---|---|---|---|---|---|"]
    reference = results.get(REFERENCE) or {}
    if reference:
        f1s = _f1s(reference)
        lines.append(f"| `{REFERENCE}` (recorded earlier, {next(iter(reference.values())).get('cpu', '?')}) "
                     f"| all-MiniLM-L6-v2 | trained | {', '.join(f's{s} {v:.2f}' for s, v in f1s)} "
                     f"| {_cell([v for _, v in f1s])} | {_types(reference)} | {_wall(reference)} |")
    for row in rows:
        by_seed = results.get(row.id) or {}
        f1s = _f1s(by_seed)
        base = runs.flag(row, "--base") or "?"
        base = base.rsplit("/", 1)[-1]
        frozen = "frozen" if "--freeze-embeddings" in row.args else "trained"
        lines.append(f"| `{row.id}` | {base} | {frozen} | {', '.join(f's{s} {v:.2f}' for s, v in f1s) or '-'} "
                     f"| {_cell([v for _, v in f1s])} | {_types(by_seed) if f1s else '-'} | {_wall(by_seed)} |")
    return "\n".join(lines)


def page_with(text: str, body: str) -> str:
    head, found, rest = text.partition(START)
    if not found:
        raise SystemExit(f"{PAGE}: no {START} marker")
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{body}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    new = page_with(text, table())
    if args.check:
        if new != text:
            print(f"{PAGE.relative_to(REPO)} is not the table of the records: run python -m experiments.dret_table")
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
