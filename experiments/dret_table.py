"""The DRET page's measured table (docs/research/dret.md, issue 68), generated from the
recorded runs: MiniLM fine-tuned on BC5CDR train from each base (today's, and the DRET
bases: merge, average, priority), with and without frozen embeddings, devel F1 by seed;
and the students distilled over those bases (the MiniLM student, the convolutional one).

    python -m experiments.dret_table          # rewrites the table between the page's markers
    python -m experiments.dret_table --check  # exit 1 when the page is not the table of the records

Rows are table 9's ``bc5cdr/dret-ft-*`` rows of ``runs.toml`` (and, in the second table,
its ``dret-hinton-minilm-*`` and ``dret-cnn-*`` rows); a row with no recorded
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
STUDENT_START, STUDENT_END = "<!-- dret-students:start -->", "<!-- dret-students:end -->"
STUDENT_PREFIXES = ("bc5cdr/dret-hinton-minilm-", "bc5cdr/dret-cnn-")
# Today's students as recorded before this machine (bf16 where that CPU had it; the
# convolutional one in fp32), listed above the rows run beside the DRET ones.
STUDENT_REFERENCES = [
    ("bc5cdr/hinton-minilm", ["MiniLM, 6 layers", "all-MiniLM-L6-v2", "trained"], "recorded earlier, bf16"),
    ("bc5cdr/cnn-minilm", ["CNN 4 × 256", "minilm-bc5cdr", "trained"], "recorded earlier, fp32"),
]


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


def _row_line(name: str, cells: list[str], by_seed: dict) -> str:
    """One row: ``name`` (the first cell, as written), ``cells``, then the figures."""
    f1s = _f1s(by_seed)
    return (f"| {name} | {' | '.join(cells)} | {', '.join(f's{s} {v:.2f}' for s, v in f1s) or '-'} "
            f"| {_cell([v for _, v in f1s])} | {_types(by_seed) if f1s else '-'} | {_wall(by_seed)} |")


def _reference_line(row_id: str, cells: list[str], by_seed: dict, how: str) -> str | None:
    if not by_seed:
        return None
    cpu = next(iter(by_seed.values())).get("cpu", "?")
    return _row_line(f"`{row_id}` ({how}, {cpu})", cells, by_seed)


def _base_name(value: str | None) -> str:
    return (value or "?").rsplit("/", 1)[-1]


# DRET 3.1's layer-wise rates, as the embeddings cell names them (off: the flag's default, 1).
LAYERWISE = (("--embedding-lr-scale", "embeddings × {}"), ("--layer-lr-decay", "layer decay {}"),
             ("--head-lr-scale", "head × {}"))


def _embeddings(row: runs.Row) -> str:
    """How the row trains its embeddings: frozen or trained, and at which rates when the
    rates are layer-wise (a row that sets none trains every part at one rate)."""
    how = "frozen" if "--freeze-embeddings" in row.args else "trained"
    rates = [words.format(value) for flag, words in LAYERWISE
             if (value := runs.flag(row, flag)) is not None and float(value) != 1.0]
    if not rates:
        return how
    # A model with no transformer layers (the CNN) has rates by part, none by layer.
    kind = "layer-wise rates" if runs.flag(row, "--layer-lr-decay") is not None else "rates by part"
    return f"{how}, {kind} ({', '.join(rates)})"


def table(results: dict | None = None) -> str:
    """MiniLM fine-tuned on BC5CDR from each base, no teacher (the ``dret-ft-*`` rows)."""
    results = runs.load_results() if results is None else results
    lines = ["| row | base | embeddings | devel F1 by seed | devel F1 | per type (mean) | wall (one thread) |",
             "|---|---|---|---|---|---|---|"]
    ref = _reference_line(REFERENCE, ["all-MiniLM-L6-v2", "trained"], results.get(REFERENCE) or {},
                          "recorded earlier")
    lines += [ref] if ref else []
    for row in runs.all_rows():
        if row.id.startswith(PREFIX):
            cells = [_base_name(runs.flag(row, "--base")), _embeddings(row)]
            lines.append(_row_line(f"`{row.id}`", cells, results.get(row.id) or {}))
    return "\n".join(lines)


def students_table(results: dict | None = None) -> str:
    """The students distilled from the fine-tuned MPNet teacher over each base (the
    ``dret-hinton-minilm-*`` and ``dret-cnn-*`` rows), after today's recorded students."""
    results = runs.load_results() if results is None else results
    lines = ["| row | student | base | embeddings | devel F1 by seed | devel F1 | per type (mean) "
             "| wall (one thread) |", "|---|---|---|---|---|---|---|---|"]
    for row_id, cells, how in STUDENT_REFERENCES:
        ref = _reference_line(row_id, cells, results.get(row_id) or {}, how)
        lines += [ref] if ref else []
    for row in runs.all_rows():
        if row.id.startswith(STUDENT_PREFIXES):
            if row.id.startswith("bc5cdr/dret-cnn-"):
                cells = ["CNN 4 × 256", _base_name(runs.flag(row, "--student-embeddings"))]
            else:
                cells = ["MiniLM, 6 layers", _base_name(runs.flag(row, "--student-from"))]
            lines.append(_row_line(f"`{row.id}`", [*cells, _embeddings(row)], results.get(row.id) or {}))
    return "\n".join(lines)


def page_with(text: str, body: str, start: str = START, end: str = END) -> str:
    head, found, rest = text.partition(start)
    if not found:
        raise SystemExit(f"{PAGE}: no {start} marker")
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    results = runs.load_results()
    new = page_with(page_with(text, table(results)), students_table(results), STUDENT_START, STUDENT_END)
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
