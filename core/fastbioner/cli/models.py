"""``fastbioner models list | show NAME | describe NAME | import FOLDER | export NAME DEST | delete NAME``."""

from __future__ import annotations

import argparse
import json

from fastbioner.base.config import reading_description
from fastbioner.base.errors import FastBioNERError
from fastbioner.infer.evaluation import EvaluationReport
from fastbioner.models.registry import ModelEntry, Registry
from fastbioner.models.manifest import KINDS, scores_on
from fastbioner.cli.output import echo, shown


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("models", help="list, show, describe, import, export and delete registered models",
                              description="Manage the model registry (FASTBIONER_HOME/models when "
                                          "FASTBIONER_HOME is set, else the user data folder).")
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    ls = sub.add_parser("list", help="one line per model")
    ls.add_argument("--json", action="store_true", help="the manifests as a JSON list")
    ls.set_defaults(func=list_command)

    show = sub.add_parser("show", help="a model's manifest")
    show.add_argument("name", help="registry name or model folder")
    show.add_argument("--json", action="store_true", help="the whole manifest as JSON")
    show.set_defaults(func=show_command)

    desc = sub.add_parser(
        "describe", help="set what a model's card says: its summary, and whose devel scores it shows",
        description="Write a registered model's card: --summary, what it is for in plain words (the first "
                    "line of its card in the app); --scores-from TWIN, the devel scores of TWIN (the same "
                    "recipe trained without devel) in place of its own, for a final model that devel trained.")
    desc.add_argument("name", help="registry name")
    desc.add_argument("--summary", metavar="TEXT", help="what the model is for, in plain words")
    desc.add_argument("--scores-from", metavar="TWIN", dest="scores_from",
                      help="registered model whose recorded devel scores the card shows, said as its twin's")
    desc.set_defaults(func=describe_command)

    imp = sub.add_parser("import", help="copy a Hugging Face token-classification folder into the registry")
    imp.add_argument("folder")
    imp.add_argument("--name", help="registry name (default: the folder's name)")
    imp.add_argument("--kind", choices=KINDS, help="teacher or student (default: from its manifest, "
                                                   "else teacher)")
    imp.add_argument("--overwrite", action="store_true")
    imp.set_defaults(func=import_command)

    exp = sub.add_parser("export", help="copy a model out of the registry")
    exp.add_argument("name")
    exp.add_argument("dest", help="new folder, or an existing folder to copy into")
    exp.set_defaults(func=export_command)

    rm = sub.add_parser("delete", help="remove a model from the registry")
    rm.add_argument("name")
    rm.set_defaults(func=delete_command)


TWIN_MARK = "*"


def _twin(entry: ModelEntry) -> str | None:
    """The twin whose devel scores a final model carries (``models describe --scores-from``)."""
    return (entry.manifest.metrics.get("source") or {}).get("twin")


def _f1(entry: ModelEntry) -> str:
    f1 = entry.manifest.metrics.get("f1")
    if not isinstance(f1, (int, float)):
        return "-"
    return f"{f1:.4f}" + (TWIN_MARK if _twin(entry) else "")


def _scored_on(entry: ModelEntry) -> str:
    """"devel", or for a fine-tuned model the curator's held-back documents ("10 of your
    documents (96 mentions)"): never a held-back score called a devel score."""
    if not isinstance(entry.manifest.metrics.get("f1"), (int, float)):
        return ""
    words, key = scores_on(entry.manifest.to_dict())
    return words.removeprefix("on ") if key.startswith("reviews:") else "devel"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def list_command(args: argparse.Namespace) -> int:
    registry = Registry()
    entries = registry.list()
    if args.json:
        print(json.dumps([e.manifest.to_dict() for e in entries], indent=2))
        return 0
    if not entries:
        echo(f"no models in {registry.root}")
    else:
        # The name column as wide as the longest name: a run's name (with its seed) is long.
        w = max(28, *(len(shown(e.name)) + 2 for e in entries))
        echo(f"{'name':<{w}}{'kind':<9}{'layers':>7}{'width':>7}{'params':>12}{'size':>11}"
             f"{'F1':>10}  {'scored on':<12}  parent")
        for e in entries:
            m = e.manifest
            echo(f"{shown(e.name):<{w}}{m.kind:<9}{m.layers or '-':>7}{m.width or '-':>7}{m.parameters:>12,}"
                 f"{_size(m.size_bytes):>11}{_f1(e):>10}  {_scored_on(e):<12}  {shown(m.parent or '')}")
        if any(_twin(e) for e in entries):
            echo(f"{TWIN_MARK} its twin's devel F1: the model itself trained on devel too "
                  f"(fastbioner models show NAME names the twin)")
    for name, problem in registry.problems():
        echo(f"warning: {name}: {problem}", err=True)
    return 0


def show_command(args: argparse.Namespace) -> int:
    entry = Registry().resolve(args.name)
    m = entry.manifest
    if args.json:
        print(json.dumps(m.to_dict(), indent=2))
        return 0
    echo(f"{entry.name}  ({entry.path})")
    echo(f"  kind {m.kind}, base {shown(m.base_model or '-')}, {shown(m.model_type)} {m.layers} layers x {m.width}, "
          f"{m.parameters:,} parameters, {_size(m.size_bytes)}")
    echo(f"  labels: {shown(' '.join(m.labels))}")
    echo(f"  reads: {reading_description(m.to_dict())}")
    if m.parent:
        echo(f"  parent: {shown(m.parent)}" + (f", method {shown(m.method)}" if m.method else ""))
    for d in m.training_data:
        echo(f"  data ({d.get('role')}): {d.get('file') or d.get('path')}  sha256 {str(d.get('sha256'))[:12]}...")
    if m.summary:
        echo(f"  {shown(m.summary)}")
    if m.metrics:
        twin = (m.metrics.get("source") or {}).get("twin")
        words, key = scores_on(m.to_dict())
        whose = f" (of its twin {twin}, trained without devel)" if twin else ""
        try:
            title = f"scores {words}" if key.startswith("reviews:") else f"devel scores{whose}"
            echo(f"  {title}:\n    " + EvaluationReport.from_dict(m.metrics).to_text()
                  .replace("\n", "\n    "))
        except TypeError:
            echo(f"  metrics: {json.dumps(m.metrics)}")
    if m.training.get("epoch_seconds"):
        secs = ", ".join(f"{s:.0f}" for s in m.training["epoch_seconds"])
        echo(f"  training: {m.training.get('steps')} steps, best at {m.training.get('best_step')}, "
              f"seconds per epoch {secs}")
    for key in ("compression", "speed"):
        if getattr(m, key):
            echo(f"  {key}: {json.dumps(getattr(m, key))}")
    echo(f"  created {m.created} by fastbioner {m.project_version}")
    return 0


def describe_command(args: argparse.Namespace) -> int:
    if args.summary is None and args.scores_from is None:
        raise FastBioNERError("models describe: give --summary TEXT, --scores-from TWIN, or both")
    registry = Registry()
    entry = registry.get(Registry.check_name(args.name))
    changes: dict = {}
    if args.summary is not None:
        changes["summary"] = " ".join(args.summary.split())
    if args.scores_from is not None:
        if args.scores_from == entry.name:
            raise FastBioNERError(f"{entry.name}: --scores-from names the model itself")
        twin = registry.get(Registry.check_name(args.scores_from))
        metrics = dict(twin.manifest.metrics)
        if not isinstance(metrics.get("f1"), (int, float)):
            raise FastBioNERError(f"{twin.name} has no recorded devel scores "
                                  f"(fastbioner evaluate {twin.name} DEVEL --record)")
        if sorted(twin.manifest.labels) != sorted(entry.manifest.labels):
            raise FastBioNERError(f"{twin.name} tags {', '.join(twin.manifest.labels)}; {entry.name} tags "
                                  f"{', '.join(entry.manifest.labels)}: not a twin")
        source = known if isinstance(known := metrics.get("source"), dict) else {}
        metrics["source"] = {**source, "model": entry.name, "twin": twin.name}
        changes["metrics"] = metrics
    entry = registry.update_manifest(entry.name, **changes)
    said = [f"summary {entry.manifest.summary!r}"] if args.summary is not None else []
    if args.scores_from is not None:
        said.append(f"devel scores of {args.scores_from} (F1 {100 * entry.manifest.metrics['f1']:.2f})")
    echo(f"{entry.name}: card now shows {' and '.join(said)}")
    return 0


def import_command(args: argparse.Namespace) -> int:
    entry = Registry().import_folder(args.folder, name=args.name, kind=args.kind, overwrite=args.overwrite)
    echo(f"imported {entry.name} ({entry.manifest.kind}) at {entry.path}")
    return 0


def export_command(args: argparse.Namespace) -> int:
    dest = Registry().export(args.name, args.dest)
    echo(f"exported {args.name} to {dest}")
    return 0


def delete_command(args: argparse.Namespace) -> int:
    Registry().delete(args.name)
    echo(f"deleted {args.name}")
    return 0
