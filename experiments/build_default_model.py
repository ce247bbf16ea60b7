#!/usr/bin/env python
"""Turn a registered distilled student into the shipped default model, with the
README's own CLI steps, and write beside it the commands that made it (issue 12).

    export FASTBIONER_HOME=~/fastbioner-experiments/home    # the experiment queue's registry
    python -m experiments.build_default_model bc5cdr-hinton-minilm3-ft-s13 --dry-run
    python -m experiments.build_default_model bc5cdr-hinton-minilm3-ft-s13 --name bc5cdr-minilm3-distilled

1. ``fastbioner compact MODEL --name NAME --corpus ...``: the vocabulary trimmed to the
   corpora, the weights in float16 (or ``--keep-vocabulary --int8-embeddings``: a
   convolutional student keeps every piece, its table in int8);
2. ``fastbioner evaluate NAME DEVEL --record``: the compacted weights scored on devel,
   the scores stored in its manifest;
3. ``fastbioner benchmark NAME --docs DOCS --devel DEVEL``: every precision this machine
   offers (int8, bf16) timed against float32 on the devel abstracts and scored on devel,
   the checks stored in its manifest, so that ``--precision auto`` (the app's and the
   CLI's default) runs the fastest mode that lost at most 0.3 devel F1 (without a check
   it runs float32);
4. ``fastbioner models export NAME OUT``: exported to a folder beside ``OUT``, given
   ``OUT/BUILD.md`` (the chain of commands from the first teacher to the export, the
   devel scores per type and the files' sizes), then swapped in for ``OUT``.

A final build (``experiments.final_build``: the chosen recipe trained on train + devel)
is built with ``--twin TWIN``: devel taught it, so no devel figure of its own is
recorded or selects anything. Step 2 becomes ``fastbioner models describe NAME
--scores-from TWIN`` (its card shows the devel scores of TWIN, the same recipe trained on
train alone, said as TWIN's), and step 3 times the modes without ``--devel``: each is
compared with float32 by agreement on the devel abstracts, and ``auto`` may take one
whose agreement bounds its F1 loss within 0.3 points. ``--summary TEXT`` sets the
card's first line, what the model is for in plain words.

A shipped folder's precision checks can be run again on another machine (one whose CPU
offers bfloat16, say) without rebuilding it, since a check is about the model's
numerics: ``--recheck-precision`` imports ``OUT`` into a private registry, runs the
benchmark step there (every mode this machine offers; checks of modes it lacks are
kept), and writes the new record into ``OUT``'s manifest and BUILD.md (its precision
section, and the commands under *Precision checked again*); nothing else in ``OUT``
changes.

    python -m experiments.build_default_model --recheck-precision --out assets/default-model

The chain follows the manifests back (a student's teachers and the model it started
from, each of theirs in turn); each model's command is the one recorded for it in
``experiments/results/paper_rows.json``, else rebuilt from the settings in its manifest
through the real command line. Nothing is half-written: when a step fails, ``OUT`` is
left as it was and the message names the step (the registry may hold ``NAME`` by then).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from fastbioner import SMALL_SOURCES
from fastbioner.research import loss_points_text

from . import runs

from .paths import FINAL_BUILDS, REPO

RESULTS = runs.RESULTS
DATA = runs.DATA
OUT = REPO / "assets" / "default-model"
DEVEL = DATA / "bc5cdr" / "iob" / "devel.tsv"
DOCS = DATA / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"  # the devel abstracts, timed
# The README's compact step: the wordpieces of these corpora are kept.
CORPUS = (DATA / "bc5cdr" / "iob" / "train.tsv", DATA / "bc5cdr" / "pubtator" / "CDR_TrainingSet.PubTator.txt",
          DATA / "ncbi-disease" / "iob" / "train.tsv", DATA / "pubmed-xml")
NOT_MODELS = ("teacher", *SMALL_SOURCES)  # student sources that name no model


class BuildError(Exception):
    """A step failed; the message names it."""


@dataclass
class Made:
    """One model of the chain and the command that made it."""

    name: str
    what: str                # "teacher", "student of X, started from Y (method m)", or why unknown
    command: str | None
    origin: str              # where the command comes from
    f1: float | None = None


# -- the chain of models ------------------------------------------------------------

def registry_manifest(name: str):
    from fastbioner import FastBioNERError, Registry

    try:
        return Registry().get(name).manifest
    except FastBioNERError:
        return None


def parents(manifest) -> list[str]:
    """The registry models a student was made from: its teachers, then the model it
    started from, or whose embeddings a recurrent or convolutional student started
    from (a folder or a Hugging Face id is an input, not a step: not listed)."""
    if manifest.kind != "student":
        return []
    config = manifest.config
    student = config.get("student") or {}
    source = student.get("source")
    started = student.get("embeddings") if source in SMALL_SOURCES else source
    names = [config.get("teacher"), *(config.get("extra_teachers") or []),
             None if started in ("teacher", *NOT_MODELS) else started]
    return [n for n in names if n and "/" not in n]


def recorded(name: str, manifest, results: dict) -> tuple[str, str] | None:
    """The command and row recorded for ``name`` in paper_rows.json (or, for a final
    build on train + devel, in final_builds.json). A run whose epoch times differ from
    the registered model's made an earlier model of that name: skipped."""
    mine = (manifest.training or {}).get("epoch_seconds") if manifest else None
    final = final_builds().get(name)
    if final and (not mine or not final.get("epoch_seconds") or final["epoch_seconds"] == mine):
        return final["command"], (f"recorded in `{runs.portable(str(FINAL_BUILDS))}` (the recipe of row "
                                  f"`{final['row']}` on train + devel, {final.get('twin_best_step')} steps as "
                                  f"its train-only twin `{final['twin']}` chose)")
    for row_id, by_seed in results.items():
        for seed, run in by_seed.items():
            if run.get("model") != name:
                continue
            if mine and run.get("epoch_seconds") and run["epoch_seconds"] != mine:
                continue
            return run["command"], f"recorded in `{runs.portable(str(RESULTS))}` (row `{row_id}`, seed {seed})"
    return None


def final_builds() -> dict:
    from .final_build import load_builds

    return load_builds()


def rebuilt_command(name: str, manifest) -> tuple[str, list[str]]:
    """The command that makes ``manifest``'s model again (:func:`fastbioner.research.rebuild_command`)."""
    from fastbioner.research import rebuild_command

    return rebuild_command(name, manifest)


def describe(name: str, manifest, results: dict) -> Made:
    f1 = (manifest.metrics or {}).get("f1") if manifest else None
    if manifest is None:
        what = "not in this registry"
    elif manifest.kind == "student":
        c = manifest.config
        teachers = ", ".join(f"`{t}`" for t in [c.get("teacher"), *(c.get("extra_teachers") or [])])
        student = c.get("student") or {}
        start = (f"a `{student.get('source')}` over the embeddings of `{student.get('embeddings', 'teacher')}`"
                 if student.get("source") in SMALL_SOURCES else f"`{student.get('source')}`")
        what = f"student of {teachers} (method {(c.get('method') or {}).get('name')}), started from {start}"
    else:
        what = f"teacher, fine-tuned from `{manifest.base_model}`"
    found = recorded(name, manifest, results)
    if found:
        return Made(name, what, found[0], found[1], f1)
    if manifest is None:
        return Made(name, what, None, f"no command recorded for it in `{runs.portable(str(RESULTS))}`")
    try:
        command, lost = rebuilt_command(name, manifest)
    except SystemExit:  # argparse's way to refuse a setting this version no longer takes (it says which)
        return Made(name, what, None, "its manifest's settings make no valid command for this version", f1)
    origin = "rebuilt from the settings in its manifest (no run of this model is recorded in `paper_rows.json`)"
    if lost:
        origin += f"; settings no flag reproduces: {', '.join(lost)}"
    return Made(name, what, command, origin, f1)


def model_chain(model: str, results: dict) -> list[Made]:
    """``model`` and every registry model it was made from, each after the models it
    needs (depth first over its teachers and its starting model), each once.
    BuildError when ``model`` is not registered, or is already compacted (its manifest
    keeps the settings of the student it came from: the chain would skip a step)."""
    manifest = registry_manifest(model)
    if manifest is None:
        raise BuildError(f"{model} is not a registered model (see `fastbioner models list`)")
    if manifest.compression.get("compacted_from"):
        raise BuildError(f"{model} is already compacted; build from {manifest.compression['compacted_from']}")
    seen: set[str] = set()
    chain: list[Made] = []

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        manifest = registry_manifest(name)
        for parent in parents(manifest) if manifest else []:
            visit(parent)
        chain.append(describe(name, manifest, results))

    visit(model)
    return chain


# -- the build ----------------------------------------------------------------------

def compact_options(corpus: list[str], keep_vocabulary: bool = False, int8_embeddings: bool = False) -> list[str]:
    """``fastbioner compact``'s vocabulary flags: trimmed to ``corpus``, or kept whole
    (a convolutional student, whose table is then stored in int8 instead)."""
    vocabulary = ["--keep-vocabulary"] if keep_vocabulary else ["--corpus", *corpus]
    return vocabulary + (["--int8-embeddings"] if int8_embeddings else [])


@dataclass(frozen=True)
class BuildPlan:
    """What one build makes: the student to compact, the name and folder it gets, the
    compaction's flags, the files it is scored and timed on, and for a final build on
    train + devel the twin whose devel scores its card shows."""

    model: str
    name: str
    out: Path
    compact_flags: list[str]
    devel: str
    docs: str
    overwrite: bool = False
    twin: str | None = None
    summary: str | None = None

    def commands(self, dest: Path | None = None) -> list[tuple[str, list[str]]]:
        """(step, argv): the README's compact, evaluate --record, benchmark and export
        steps (exporting to ``dest``, else ``out``); for a final build (``twin``), the
        twin's scores and a check by agreement instead."""
        name = self.name
        compact = ["fastbioner", "compact", self.model, "--name", name, *self.compact_flags]
        said = ["--summary", self.summary] if self.summary else []
        steps = [("compact", compact + (["--overwrite"] if self.overwrite else []))]
        if self.twin:
            steps += [("models describe", ["fastbioner", "models", "describe", name, "--scores-from", self.twin,
                                           *said]),
                      ("benchmark", ["fastbioner", "benchmark", name, "--docs", self.docs])]
        else:
            steps.append(("evaluate --record", ["fastbioner", "evaluate", name, self.devel, "--record"]))
            if said:
                steps.append(("models describe", ["fastbioner", "models", "describe", name, *said]))
            steps.append(("benchmark", ["fastbioner", "benchmark", name, "--docs", self.docs, "--devel", self.devel]))
        return steps + [("models export", ["fastbioner", "models", "export", name, str(dest or self.out)])]


def run_command(argv: list[str]) -> None:
    """Runs one ``fastbioner`` command with this interpreter (the one whose fastbioner
    is meant); CalledProcessError when it fails."""
    subprocess.run([sys.executable, "-m", "fastbioner.cli.main", *argv[1:]], check=True)


@contextlib.contextmanager
def step(label: str):
    try:
        yield
    except Exception as exc:
        raise BuildError(f"step '{label}' failed: {exc}") from exc


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def scores_table(metrics: dict) -> list[str]:
    out = ["| devel | precision | recall | F1 | support |", "|---|---|---|---|---|"]
    rows = [*sorted((metrics.get("per_type") or {}).items()), ("overall", metrics)]
    for typ, s in rows:
        out.append(f"| {typ} | {100 * s['precision']:.2f} | {100 * s['recall']:.2f} | {100 * s['f1']:.2f} | "
                   f"{s.get('support', '–')} |")
    return out


def mode_without(speed: dict) -> str:
    """What ``auto`` runs, by these checks, on a machine that lacks the mode chosen here
    (a CPU without bfloat16, say): :func:`fastbioner.research.auto_precision` over the
    other modes."""
    from fastbioner.research import Precision, auto_precision, checks_from_manifest

    chosen = speed.get("precision")
    mode = auto_precision([m for m in Precision if m not in (Precision.AUTO,) and m.value != chosen],
                          checks_from_manifest({"speed": speed})).value
    return "float32" if mode == "fp32" else mode


def precision_table(speed: dict) -> list[str]:
    """The precision checks the benchmark step recorded, and the mode ``auto`` runs."""
    modes = (speed or {}).get("modes") or {}
    if not modes:
        return ["No precision check recorded: `--precision auto` runs float32."]
    out = ["| mode | tokens/s | agreement with fp32 | devel F1 | F1 lost | auto may pick it |",
           "|---|---|---|---|---|---|"]
    for mode, m in modes.items():
        f1 = "–" if m.get("f1") is None else f"{100 * m['f1']:.2f}"
        lost = loss_points_text(m.get("f1_loss_points"), missing="–")
        if m.get("f1_loss_points") is None and m.get("f1_loss_bound") is not None:
            lost = f"≤ {m['f1_loss_bound']:.2f} (by agreement)"
        out.append(f"| {mode} | {m.get('tokens_per_s', 0):,.0f} | {m.get('agreement', 0):.4f} | {f1} | {lost} | "
                   f"{'yes' if m.get('default_allowed') else 'no'} |")
    out += ["", f"On {speed.get('hardware', 'this machine')} with {speed.get('threads')} thread(s), "
                f"`--precision auto` runs **{speed.get('precision')}** (a machine without that mode runs "
                f"{mode_without(speed)}). "
                f"Speeds are from the machine that ran the check, which may have been running other jobs: "
                f"`experiments/spacy_peer.py time` is the side-by-side timing."]
    return out


def build_md(name: str, model: str, chain: list[Made], steps: list[tuple[str, list[str]]], metrics: dict,
             files: list[Path], invocation: str, speed: dict | None = None, twin: str | None = None) -> str:
    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    scored = (f"given the devel scores of its train-only twin `{twin}`" if twin else "scored on devel")
    doc = [f"# How `{name}` was built", "",
           f"`{name}` is `{model}`, a distilled student, compacted, {scored} and exported here by "
           f"`{invocation}` ({when}, commit {git_commit()}). The commands below made it, oldest first: "
           f"first the models it came from, each with the command recorded for its run, else rebuilt from "
           f"the settings in its manifest; then the steps that made this folder.", "",
           "## The models it came from", ""]
    for i, m in enumerate(chain, 1):
        f1 = "" if m.f1 is None else f", devel F1 {100 * m.f1:.2f}"
        doc.append(f"{i}. `{m.name}`: {m.what}{f1}; {m.origin}.")
        if m.command:
            doc += ["", "   ```bash", f"   {m.command}", "   ```"]
        doc.append("")
    doc += ["## Compaction, scoring, precision checks, export", "", "```bash",
            *(shlex.join(argv) for _, argv in steps), "```", "",
            "(exported to a folder beside this one, then swapped in for it whole)", "",
            *scores_section(metrics, twin, model), "",
            "## Precision (recorded by the benchmark above)", "", *precision_table(speed or {}), "",
            *files_table(files)]
    return "\n".join(doc)


def scores_section(metrics: dict, twin: str | None, model: str) -> list[str]:
    where = f"`{(metrics.get('source') or {}).get('file', 'devel')}`, strict IOB2"
    if not twin:
        return [f"## Devel scores ({where}, recorded by the evaluation above)", "", *scores_table(metrics)]
    final = final_builds().get(model, {})
    own = final.get("max_steps", final.get("twin_best_step"))
    trained = ("this model trained that many steps" if own == final.get("twin_best_step") else
               f"this model trained {own} steps, started before its twin ended")
    run = (f" Its twin's run: `{final['twin_command']}` (kept weights at step {final['twin_best_step']} of "
           f"{final['twin_steps']}; {trained})." if final.get("twin_command") else "")
    twin_manifest = registry_manifest(twin)
    compacted = (twin_manifest.compression or {}).get("compacted_from") if twin_manifest else None
    made = f" (`{twin}` is `{compacted}` compacted)" if compacted else ""
    return [f"## Devel scores of its twin `{twin}` ({where})", "",
            f"This model learnt from devel's labels too, so no devel figure of its own is reported or chose "
            f"anything: these are the scores recorded for `{twin}`{made}, the same recipe trained on train "
            f"alone, which its card shows as the twin's.{run}", "", *scores_table(metrics), "",
            "Its precision modes were compared with float32 by agreement on the devel abstracts (no gold "
            "labels: it trained on them); `auto` may take a mode whose agreement bounds the F1 it can lose "
            "within 0.3 points."]


def files_table(files: list[Path]) -> list[str]:
    doc = ["## Files", "", "| file | bytes |", "|---|---|"]
    doc += [f"| {f.name} | {f.stat().st_size:,} |" for f in files]
    total = sum(f.stat().st_size for f in files)
    return doc + [f"| all (this file aside) | {total:,} ({total / 1e6:.1f} MB) |", ""]


def swap_in(new: Path, out: Path, work: Path) -> None:
    """``new`` takes ``out``'s place by renames on one file system; the old folder
    moves into ``work`` (deleted with it) and comes back if the second rename fails."""
    old = work / "previous"
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(new, out)
    except OSError:
        if old.exists():
            os.replace(old, out)
        raise


def build(plan: BuildPlan, invocation: str) -> None:
    from fastbioner import read_manifest

    chain = model_chain(plan.model, runs.load_results(RESULTS))
    if plan.twin and registry_manifest(plan.twin) is None:
        raise BuildError(f"the twin {plan.twin} is not a registered model (see `fastbioner models list`)")
    out = plan.out
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))  # beside out: renames
    try:
        staged = work / out.name
        for label, argv in plan.commands(dest=staged):
            with step(label):
                run_command(argv)
        with step("writing BUILD.md"):
            # The manifest names no folder of this machine (the base model's, the corpora's).
            shipped = staged / "fastbioner.json"
            shipped.write_text(runs.portable(shipped.read_text(encoding="utf-8")), encoding="utf-8")
            files = sorted(f for f in staged.iterdir() if f.is_file())
            manifest = read_manifest(staged)
            # BUILD.md shows the commands as they export to the folder itself.
            text = build_md(plan.name, plan.model, chain, plan.commands(), manifest.metrics, files, invocation,
                            manifest.speed, plan.twin)
            (staged / "BUILD.md").write_text(runs.portable(text), encoding="utf-8")
        with step(f"replacing {out}"):
            swap_in(staged, out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


RECHECK_HEADING = "## Precision checked again"


def recheck_precision(out: Path, devel: str, docs: str) -> dict:
    """Run the benchmark step again on ``out`` (a built folder) in a private registry
    and write its record into ``out``'s manifest and BUILD.md; returns the record."""
    from fastbioner import read_manifest, write_manifest

    manifest = read_manifest(out)
    name = manifest.name
    # A final build learnt devel's labels: its modes are compared by agreement alone.
    gold = [] if (manifest.metrics.get("source") or {}).get("twin") else ["--devel", devel]
    steps = [("models import", ["fastbioner", "models", "import", str(out), "--name", name]),
             ("benchmark", ["fastbioner", "benchmark", name, "--docs", docs, *gold])]
    with tempfile.TemporaryDirectory(prefix="fastbioner-recheck-") as home:
        previous = os.environ.get("FASTBIONER_HOME")
        os.environ["FASTBIONER_HOME"] = home  # the commands' registry: never the user's own
        try:
            for label, argv in steps:
                with step(label):
                    run_command(argv)
            with step("reading the new record"):
                speed = read_manifest(Path(home) / "models" / name).speed
        finally:
            if previous is None:
                os.environ.pop("FASTBIONER_HOME", None)
            else:
                os.environ["FASTBIONER_HOME"] = previous
    with step(f"writing {out}"):
        manifest.speed = speed
        write_manifest(out, manifest)
        build = out / "BUILD.md"
        if build.is_file():
            files = sorted(f for f in out.iterdir() if f.is_file() and f.name != "BUILD.md")
            build.write_text(runs.portable(recheck_build_md(build.read_text(encoding="utf-8"), speed, steps, files)),
                             encoding="utf-8")
    return speed


def recheck_build_md(text: str, speed: dict, steps: list[tuple[str, list[str]]], files: list[Path]) -> str:
    """BUILD.md with its precision section replaced by ``speed``'s, the commands of
    this check added (a list of them, one per check, under RECHECK_HEADING) and the
    files' sizes measured again (the manifest grew)."""
    head, sep, _ = text.partition("## Precision (recorded by the benchmark above")
    if not sep:
        return text
    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    earlier, had, after = head.partition(RECHECK_HEADING)
    checks = (after.strip() + "\n\n") if had else ""
    checks += (f"On {speed.get('hardware', 'this machine')}, {when}, commit {git_commit()}, in a private registry "
               f"(`python -m experiments.build_default_model --recheck-precision`):\n\n```bash\n"
               + "\n".join(shlex.join(argv) for _, argv in steps) + "\n```\n\n")
    return (f"{earlier.rstrip()}\n\n{RECHECK_HEADING}\n\n{checks}"
            "## Precision (recorded by the benchmark above, merged with the checks run again)\n\n"
            + "\n".join(precision_table(speed)) + "\n\n" + "\n".join(files_table(files)))


def dry_run(plan: BuildPlan) -> None:
    for m in model_chain(plan.model, runs.load_results(RESULTS)):
        print(f"# {m.name}: {m.what}; {m.origin}")
        if m.command:
            print(m.command)
    print("# this script would run:")
    for _, argv in plan.commands():
        print(shlex.join(argv))
    print(f"# and write {plan.out / 'BUILD.md'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL", nargs="?", help="registry name of the distilled student")
    parser.add_argument("--recheck-precision", action="store_true",
                        help="run only the precision checks again on the folder --out (on this machine's modes)")
    # A new registry name by default: a machine that registered the previous default
    # under its name would go on using that one (it is looked up by the name in its manifest).
    parser.add_argument("--name", help="registry name of the compacted model (default: MODEL-compact)")
    parser.add_argument("--out", default=str(OUT), help="the folder to replace (default: %(default)s)")
    parser.add_argument("--corpus", nargs="+", default=[str(p) for p in CORPUS], metavar="FILE",
                        help="text whose wordpieces the compacted model keeps (default: the README's corpora; "
                             "devel.tsv too for a final build)")
    parser.add_argument("--keep-vocabulary", action="store_true",
                        help="keep every wordpiece instead (as `fastbioner compact --keep-vocabulary`)")
    parser.add_argument("--int8-embeddings", action="store_true",
                        help="a convolutional student's embedding table in int8 (`fastbioner compact`'s flag)")
    parser.add_argument("--devel", default=str(DEVEL), help="BIO file scored and recorded (default: %(default)s)")
    parser.add_argument("--docs", default=str(DOCS),
                        help="abstracts the precision modes are timed on (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true", help="replace a registered model named NAME")
    parser.add_argument("--twin", metavar="NAME",
                        help="a final build on train + devel: the registered train-only twin whose devel scores "
                             "its card shows (default: the twin final_builds.json records for MODEL)")
    parser.add_argument("--summary", metavar="TEXT", help="the card's first line: what the model is for")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.recheck_precision:
        try:
            speed = recheck_precision(out, args.devel, args.docs)
        except BuildError as exc:
            print(f"build_default_model: {exc}; {out} is left as it was", file=sys.stderr)
            return 1
        print(f"{out}: precision checks recorded; --precision auto runs {speed.get('precision')} on this machine")
        return 0
    if not args.model:
        parser.error("MODEL is required (unless --recheck-precision)")
    name = args.name or f"{args.model}-compact"
    invocation = "python -m experiments.build_default_model " + shlex.join(sys.argv[1:] if argv is None else argv)
    twin = args.twin or (final_builds().get(args.model) or {}).get("twin")
    corpus = list(args.corpus)
    if twin and corpus == [str(p) for p in CORPUS]:
        corpus.append(str(DEVEL))  # a final build learnt devel's words too: its pieces are kept
    flags = compact_options(corpus, args.keep_vocabulary, args.int8_embeddings)
    plan = BuildPlan(args.model, name, out, flags, args.devel, args.docs, args.overwrite, twin, args.summary)
    try:
        if args.dry_run:
            dry_run(plan)
        else:
            build(plan, invocation)
    except BuildError as exc:
        print(f"build_default_model: {exc}; {out} is left as it was", file=sys.stderr)
        return 1
    if not args.dry_run:
        print(f"{out} now holds {name}; how it was built: {out / 'BUILD.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
