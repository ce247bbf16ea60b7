"""The paper tables' command line: which rows have run, recording a row from a model
made by hand, and writing the report.

    python -m experiments.paper_tables list
    python -m experiments.paper_tables report        # docs/research/benchmarks.md, from the results

The rows are ``experiments/runs.toml`` (read by ``experiments/runs.py``), run by
``python -m experiments.experiment_queue`` (in the background, two at a time,
resumable, each row's seeds as separate runs); each finished run is stored in
``experiments/results/paper_rows.json`` as ``{row: {seed: result}}``. The one-epoch rows
of the first sessions are kept in ``paper_rows_1epoch.json``. A row that has not been
run is shown as such in the report, never with a guessed number.

The speed and compression table (the paper's Figure 3) comes from
``benchmarks/bench_inference.py``'s JSON, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .benchmark_report import write_report
from .report_preamble import protocol_text
from .paths import PAPER_ROWS_1EPOCH, REPORT
from .runs import (EPOCH_SWEEP, STUDENT_EPOCHS, SWEEP_EPOCHS, aggregate, all_rows,
                   load_results, manifest_of, record, result_entry, student_rates)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the rows, and which seeds have been run")
    adopt = sub.add_parser("adopt", help="record a row from a model already registered by the given "
                           "command (run by hand or by another script); the command is stored as given")
    adopt.add_argument("row")
    adopt.add_argument("--command", required=True, help="the exact command that made the model")
    adopt.add_argument("--model", help="registry name, if not the row's")
    adopt.add_argument("--seed", type=int, required=True)
    rep = sub.add_parser("report", help="write docs/research/benchmarks.md")
    rep.add_argument("--out", default=str(REPORT))
    args = parser.parse_args(argv)

    rows = all_rows()
    if args.cmd == "list":
        done = load_results()
        for r in rows:
            got = done.get(r.id, {})
            seeds = ", ".join(f"s{k} {100 * v['f1']:.2f}" for k, v in sorted(got.items()) if v.get("f1") is not None)
            missing = [s for s in r.seeds if str(s) not in got]
            state = seeds + (f"; not yet run: {', '.join(f's{s}' for s in missing)}" if missing else "")
            print(f"table {r.table}  {r.id:<36} {state or 'not yet run':<40} {r.title}")
        return 0
    if args.cmd == "adopt":
        row = next((r for r in rows if r.id == args.row), None)
        if row is None:
            parser.error(f"unknown row {args.row}")
        name = args.model or row.model_name(args.seed)
        m = manifest_of(name)
        entry = result_entry(row, args.seed, args.command, (m.get("training") or {}).get("seconds"), m)
        record(row, args.seed, entry)
        print(f"recorded {row.id} seed {args.seed} from {name}: devel F1 {entry['f1']:.4f}")
        return 0
    STUDENT_LR, DEEP_STUDENT_LR = student_rates()
    archive = load_results(PAPER_ROWS_1EPOCH)
    results = load_results()
    preamble = protocol_text(rows, results, epochs=STUDENT_EPOCHS, steps=285 * STUDENT_EPOCHS,  # 285 batches of 16
                             shallow_lr=STUDENT_LR, deep_lr=DEEP_STUDENT_LR)
    write_report(rows, aggregate(results), Path(args.out), preamble, archive=archive,
                 student_lr=f"{STUDENT_LR:g} (3 layers) and {DEEP_STUDENT_LR:g} (4 and 6 layers, the MiniLM "
                            f"students), for {STUDENT_EPOCHS} epochs (the grid ran {SWEEP_EPOCHS}; the "
                            f"{EPOCH_SWEEP}-epoch rows show whether the best scoring comes before the last; the "
                            f"6-layer rows ran {STUDENT_EPOCHS}: at 4e-4 the 6-layer student diverged)",
                 grid_lr=f"{STUDENT_LR:g}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
