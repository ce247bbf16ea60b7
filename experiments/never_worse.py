#!/usr/bin/env python
"""The never-worse table (issue 65): how `fine-tune` learns from few reviews without
forgetting, measured on three proxies, one row per command, resumable.

- ``new``: a guideline the shipped model never saw: its ``rank --top 100`` of the NCBI
  training abstracts, ``fine-tune`` without ``--dev``, Disease F1 on NCBI devel;
- ``same``: the guideline the model already follows: M1 (the shipped model fine-tuned
  on that top 100 with today's recipe, row ``new-today-s13``) fine-tuned again with the
  row's recipe on 20 and 50 further NCBI training abstracts (the first in file order
  not in the top 100), scored on NCBI devel against M1;
- ``forget``: the shipped model fine-tuned on the first 20 / 50 BC5CDR devel abstracts
  and scored on the other 450. The shipped model was trained on them: a drop there
  measures forgetting, not accuracy on unseen text.

Every row is a list of ``fastbioner`` commands (one torch thread each) run in a
private registry (``FASTBIONER_HOME`` under the work folder); the results go to
``paths.NEVER_WORSE``, one record per row, written after each, and rows already there
are skipped::

    OMP_NUM_THREADS=1 python -m experiments.never_worse run --work WORK [--only ROW...]
    python -m experiments.never_worse list
    python -m experiments.never_worse render   # the table into docs/research/curator-loop.md

Never a test: it trains models for an hour.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import runs
from .paths import CURATOR_PAGE as PAGE
from .paths import NEVER_WORSE as RESULTS

TABLE_START, TABLE_END = "<!-- never-worse-table -->", "<!-- /never-worse-table -->"
SHIPPED = "assets/default-model"
NCBI = runs.DATA / "ncbi-disease"
BC5 = runs.DATA / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"
NCBI_DEVEL = NCBI / "iob" / "devel.tsv"
MAP = " ".join(f"--map-label {t}=Disease" for t in ("SpecificDisease", "DiseaseClass", "Modifier",
                                                    "CompositeMention"))
FT = "fastbioner fine-tune {start} --train {train} --name {name} --threads 1 --quiet --overwrite {flags}"
EVAL = "fastbioner evaluate {name} {file} --threads 1 --quiet --json {work}/eval-{name}.json"

# Recipes: the flags of `fine-tune` each stands for ("today": the recipe before issue 65).
RECIPES = {
    "today": "--distill-docs 0 --l2sp 0 --keep-worse",
    "distill20": "--distill-docs 20 --l2sp 0 --keep-worse",
    "l2sp": "--distill-docs 0 --l2sp 0.01 --keep-worse",
    "both": "--distill-docs 20 --l2sp 0.01 --keep-worse",
    "distill100": "--distill-docs 100 --l2sp 0 --keep-worse",
    "lrdocs": "--distill-docs 0 --l2sp 0 --lr-docs 100 --keep-worse",
    "distill20-lrdocs": "--distill-docs 20 --l2sp 0 --lr-docs 100 --keep-worse",
    "lrdocs-b8": "--distill-docs 0 --l2sp 0 --lr-docs 100 --batch-size 8 --keep-worse",
    "lrdocs-2threads": "--distill-docs 0 --l2sp 0 --lr-docs 100 --keep-worse --threads 2",  # a timing row
}
# The order run (two shared cores: an update of 100 abstracts takes about ten minutes there):
# today's recipe against the chosen one on each proxy first, one seed, then the others.
ORDER = ([("new", r, 13, 0) for r in ("today", "distill20")]
         + [(case, r, 13, 20) for case in ("forget", "same") for r in ("today", "distill20")]
         + [("forget", r, 13, 20) for r in ("l2sp", "both")]
         + [(case, r, 13, 20) for r in ("lrdocs", "distill20-lrdocs") for case in ("forget", "same")]
         + [("forget", "distill100", 13, 20), ("new", "lrdocs", 13, 0)]
         + [(case, r, 13, 50) for case in ("forget", "same") for r in ("lrdocs", "today")]
         + [(case, r, s, 20) for case in ("forget", "same") for s in (14, 15) for r in ("today", "lrdocs")]
         + [("new", "lrdocs-2threads", 13, 0), ("new", "lrdocs-b8", 13, 0)]
         + [("new", r, s, 0) for s in (14, 15) for r in ("today", "lrdocs")]
         + [("same", "distill100", 13, 20), ("same", "l2sp", 13, 20), ("same", "both", 13, 20)]
         + [(case, r, 13, 50) for case in ("forget", "same") for r in ("distill20", "distill20-lrdocs")]
         + [("new", r, 13, 0) for r in ("distill20-lrdocs", "l2sp", "both", "distill100")])


def _prep_rows() -> list[dict]:
    return [
        {"id": "prep-ncbi", "cmds": [f"fastbioner convert {NCBI}/pubtator/NCBItrainset_corpus.txt "
                                     f"{{work}}/ncbi-train.pubtator {MAP}"]},
        {"id": "prep-top100", "cmds": [f"fastbioner rank {{work}}/ncbi-train.pubtator --model {SHIPPED} --top 100 "
                                       f"--out {{work}}/top100.pubtator --threads 1 --precision fp32 --quiet"]},
        {"id": "prep-splits", "python": "splits"},
        {"id": "shipped-ncbi", "cmds": [EVAL.format(name=SHIPPED, file=NCBI_DEVEL, work="{work}")],
         "eval": f"eval-{SHIPPED}.json"},
        {"id": "shipped-bc5-rest", "cmds": [EVAL.format(name=SHIPPED, file="{work}/bc5-rest450.pubtator",
                                                        work="{work}").replace(".json", "-bc5.json")],
         "eval": f"eval-{SHIPPED}-bc5.json"},
    ]


def _ft_row(row_id: str, start: str, train: str, recipe: str, seed: int, file: str) -> dict:
    name = row_id
    flags = f"{RECIPES[recipe]} --seed {seed}"
    return {"id": row_id, "recipe": recipe, "seed": seed, "start": start, "train": train,
            "cmds": [FT.format(start=start, train=train, name=name, flags=flags),
                     EVAL.format(name=name, file=file, work="{work}")],
            "eval": f"eval-{name}.json", "timed": 0}


def rows() -> list[dict]:
    out = _prep_rows()
    for case, recipe, seed, n in ORDER:
        if case == "new":
            out.append(_ft_row(f"new-{recipe}-s{seed}", SHIPPED, "{work}/top100.pubtator", recipe, seed,
                               str(NCBI_DEVEL)))
        elif case == "forget":
            out.append(_ft_row(f"forget-{recipe}-{n}-s{seed}", SHIPPED, f"{{work}}/bc5-first{n}.pubtator",
                               recipe, seed, "{work}/bc5-rest450.pubtator"))
        else:  # M1 (today's recipe on the top 100, seed 13) updated again on further NCBI abstracts
            out.append(_ft_row(f"same-{recipe}-{n}-s{seed}", "new-today-s13",
                               f"{{work}}/ncbi-further{n}.pubtator", recipe, seed, str(NCBI_DEVEL)))
    return out


def splits(work: Path) -> None:
    """bc5-first20/50 and bc5-rest450 (BC5CDR devel in file order); ncbi-further20/50:
    the first NCBI training abstracts (file order) not in the top 100."""
    from fastbioner import read_documents, write_documents

    bc5 = list(read_documents(BC5))
    for n in (20, 50):
        write_documents(bc5[:n], work / f"bc5-first{n}.pubtator")
    write_documents(bc5[50:], work / "bc5-rest450.pubtator")
    top = {d.id for d in read_documents(work / "top100.pubtator")}
    seen: set[str] = set()
    rest = []
    for d in read_documents(work / "ncbi-train.pubtator"):
        if d.id not in top and d.id not in seen:
            seen.add(d.id)
            rest.append(d)
    for n in (20, 50):
        write_documents(rest[:n], work / f"ncbi-further{n}.pubtator")


def _load() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}


def _save(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def run_row(row: dict, work: Path, env: dict) -> dict:
    record: dict = {k: row[k] for k in ("recipe", "seed", "start", "train") if k in row}
    record["commands"] = []
    if row.get("python") == "splits":
        splits(work)
        return record
    def relative(text: str) -> str:
        """A recorded line without this machine's folders (the registry, the work folder,
        the data): the registry by the variable that names it, so no line reads as a
        machine's /home."""
        return (text.replace(str(work / "home"), "FASTBIONER_HOME").replace(str(work), "WORK")
                .replace(str(runs.DATA), "../shared/data"))

    for i, template in enumerate(row["cmds"]):
        cmd = template.format(work=work)
        record["commands"].append(relative(cmd))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        argv = shlex.split(cmd)
        if argv[0] == "fastbioner":  # the library on PYTHONPATH (a snapshot of the code), not an installed one
            argv = [sys.executable, "-c", "from fastbioner.cli.main import run_and_exit; run_and_exit()", *argv[1:]]
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        (work / "logs").mkdir(exist_ok=True)
        (work / "logs" / f"{row['id']}-{i}.log").write_text(done.stdout + "\n--stderr--\n" + done.stderr)
        if i == row.get("timed"):
            record.update(wall_s=round(wall, 1), cpu_s=round(cpu, 1), load_at_start=round(load, 2),
                          output=[relative(line) for line in done.stdout.strip().splitlines()])
        if done.returncode != 0:
            record.update(failed=relative(cmd), code=done.returncode, stderr=relative(done.stderr.strip()[-500:]))
            return record
    if "eval" in row:
        scores = json.loads((work / row["eval"]).read_text(encoding="utf-8"))
        record["scores"] = _scores(scores)
    return record


def _scores(data: dict) -> dict:
    entity = data.get("entity", data)
    out = {k: round(100 * entity[k], 2) for k in ("f1", "precision", "recall") if k in entity}
    per_type = entity.get("per_type") or {}
    for t, s in per_type.items():
        out[f"f1_{t}"] = round(100 * s["f1"], 2)
    return out


def _held_back(record: dict) -> str:
    line = next((x for x in record.get("output", []) if x.startswith("F1 on ")), "")
    return line.removeprefix("F1 on ").removesuffix(", reviewed types only") if line else "-"


def _f1(record: dict) -> float:
    s = record["scores"]
    return s.get("f1_Disease", s["f1"]) if "ncbi" in record["commands"][-1].lower() else s["f1"]


def summary(results: dict) -> str:
    """Per proxy and recipe: the mean F1 over the seeds run (and their spread), against
    what the update started from."""
    import statistics

    cases = [("new", 0, "new: Disease F1 on NCBI devel (shipped model 64.09)"),
             ("same", 20, "same, 20 further abstracts (from M1)"),
             ("same", 50, "same, 50 further abstracts (from M1)"),
             ("forget", 20, "forget, first 20 BC5CDR devel (shipped model 88.07)"),
             ("forget", 50, "forget, first 50 BC5CDR devel (shipped model 88.07)")]
    recipes = list(RECIPES)
    out = ["| proxy | " + " | ".join(recipes) + " |", "|---|" + "---|" * len(recipes)]
    for case, n, title in cases:
        if case == "same" and "new-today-s13" in results:
            title = title.replace("(from M1)", f"(M1 {_f1(results['new-today-s13']):.2f})")
        cells = []
        for recipe in recipes:
            stem = f"{case}-{recipe}-s" if case == "new" else f"{case}-{recipe}-{n}-s"
            f1s = [_f1(r) for k, r in sorted(results.items()) if k.startswith(stem) and k[len(stem):].isdigit()
                   and "scores" in r]
            cells.append("-" if not f1s else f"{f1s[0]:.2f}" if len(f1s) == 1 else
                         f"{statistics.mean(f1s):.2f} ± {statistics.stdev(f1s):.2f} ({len(f1s)} seeds)")
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def table(results: dict) -> str:
    """The rows run so far as a Markdown table (the research page's)."""
    out = [summary(results), "",
           "| row | recipe | seed | F1 on the proxy's test documents | held back: before -> after (interval) "
           "| wall / CPU s (load) |", "|---|---|---|---|---|---|"]
    for row in rows():
        r = results.get(row["id"])
        if not r or "scores" not in r:
            continue
        row = {"recipe": "(no update)", "seed": "-", **row}
        s = r["scores"]
        f1 = (f"Disease {s.get('f1_Disease', s['f1']):.2f}" if "ncbi" in r["commands"][-1].lower()
              else f"{s['f1']:.2f} (Chemical {s.get('f1_Chemical', 0):.2f}, Disease {s.get('f1_Disease', 0):.2f})")
        out.append(f"| {row['id']} | {row['recipe']} | {row['seed']} | {f1} | {_held_back(r)} | "
                   f"{r.get('wall_s', '-')} / {r.get('cpu_s', '-')} ({r.get('load_at_start', '-')}) |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    global RESULTS  # one results file per invocation (--results)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("run", "list", "table", "render"))
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "never-worse")
    p.add_argument("--only", nargs="*", help="row ids (prefixes) to run")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results file (default: %(default)s)")
    args = p.parse_args(argv)
    RESULTS = args.results
    results = _load()
    if args.action == "table":
        print(table(results))
        return 0
    if args.action == "render":  # the table into the research page, between its markers
        text = PAGE.read_text(encoding="utf-8")
        head, rest = text.split(TABLE_START, 1)
        _, tail = rest.split(TABLE_END, 1)
        PAGE.write_text(f"{head}{TABLE_START}\n{table(results)}\n{TABLE_END}{tail}", encoding="utf-8")
        return 0
    if args.action == "list":
        for row in rows():
            r = results.get(row["id"])
            print(row["id"], "-" if r is None else ("FAILED" if "failed" in r else r.get("scores", "done")))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FASTBIONER_HOME": str(args.work / "home"), "OMP_NUM_THREADS": "1"}
    for row in rows():
        if row["id"] in results and "failed" not in results[row["id"]]:
            continue
        if args.only and not any(row["id"].startswith(o) for o in args.only):
            continue
        print(time.strftime("%H:%M:%S"), row["id"], flush=True)
        results[row["id"]] = run_row(row, args.work, env)
        results[row["id"]]["code"] = os.environ.get("NEVER_WORSE_CODE", "")
        _save(results)
        print("   ", results[row["id"]].get("scores") or results[row["id"]].get("stderr", ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
