"""``fastbioner transfer-embeddings`` (DRET: vocabulary and embeddings carried from
several sources into a target encoder) and ``fastbioner train-vocabulary`` (a WordPiece
vocabulary from unlabelled text, a source for it). docs/explanation/dret.md explains
the stages; the surgery is :mod:`fastbioner.models.transfer`."""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from fastbioner.base.errors import InputError
from fastbioner.cli.output import echo
from fastbioner.io.fileio import write_text
from fastbioner.models.transfer import STRATEGIES, WIDTH_MAPS
from fastbioner.models.registry import Registry
from fastbioner.train.guided import base_models_folder

# torch, transformers and tokenizers are imported when a command runs: --help starts without them.


def register(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
        "transfer-embeddings", help="DRET: grow an encoder's vocabulary and embeddings from other models",
        description="Merge the WordPiece vocabularies of the sources into TARGET's, in the order given and "
                    "without duplicates, and set the embeddings: merge (new tokens random), average (new tokens "
                    "from the mean of the sources' vectors) or priority (every token from the highest-ranked "
                    "source that has it, the target's own shared tokens replaced). A source of another width is "
                    "mapped into the target's space by a linear map fitted on the tokens they share. Writes a "
                    "base encoder (tokenizer, safetensors, transfer.json) into the base-models folder, where "
                    "`train-teacher --base`, `distill --student-from/--student-embeddings` and the app find it. "
                    "See docs/explanation/dret.md.")
    t.add_argument("target", metavar="TARGET", help="the encoder to grow: Hugging Face id, folder or registry name")
    t.add_argument("--source", action="append", default=[], metavar="SOURCE",
                   help="a model (id, folder, registry name) or a WordPiece vocabulary (a folder with vocab.txt "
                        "and no weights, e.g. from train-vocabulary); repeat, highest rank first")
    t.add_argument("--strategy", choices=STRATEGIES, default="priority",
                   help="merge (1.x), average (2.0) or priority (3.0) (default %(default)s)")
    t.add_argument("--name", required=True, help="name of the new base encoder (its folder's name)")
    t.add_argument("--out", metavar="DIR", help="write it here instead of the base-models folder")
    t.add_argument("--register", action="store_true",
                   help="install it in the model registry (kind encoder) instead: a run queue records it there, "
                        "and `train-teacher --base NAME` and `distill --student-from NAME` take the name")
    t.add_argument("--vocabulary-from", nargs="+", default=[], metavar="FILE",
                   help="train a WordPiece vocabulary on this unlabelled text (as train-vocabulary does) and use it "
                        "as the last source")
    t.add_argument("--vocabulary-size", type=int, default=16000, metavar="N",
                   help="tokens of the vocabulary --vocabulary-from trains (default %(default)s)")
    t.add_argument("--width-map", choices=WIDTH_MAPS, default="auto",
                   help="the map of a source of another width: least squares, orthogonal Procrustes, or auto "
                        "(the one of lower error on held-out shared tokens) (default %(default)s)")
    t.add_argument("--align", action="store_true",
                   help="fit the map for sources of the target's width too (by default they are taken to share "
                        "its space, as BioBERT shares BERT's)")
    t.add_argument("--mentions", metavar="FILE", action="append", default=[],
                   help="an annotated file: report the pieces per entity mention before and after")
    t.add_argument("--seed", type=int, default=0, help="seed of the random starts and the held-out split")
    t.add_argument("--json", metavar="OUT", help="also write the report (with --mentions' counts) here")
    _run_options(t)
    t.set_defaults(func=transfer_command)

    v = subparsers.add_parser(
        "train-vocabulary", help="train a WordPiece vocabulary on unlabelled text (a DRET source)",
        description="Train a WordPiece vocabulary (the tokenizers library's trainer, BERT's normaliser and "
                    "specials) on the text of FILES (PubTator, BioC, PubMed XML, JSONL, plain text or BIO) "
                    "and write vocab.txt and tokenizer.json into DIR, for `transfer-embeddings --source DIR`.")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--size", type=int, default=16000, help="tokens in the vocabulary (default %(default)s)")
    v.add_argument("--out", required=True, metavar="DIR")
    v.add_argument("--cased", action="store_true", help="keep case (match a cased target)")
    v.add_argument("--min-frequency", type=int, default=2, help="drop tokens seen fewer times (default %(default)s)")
    _run_options(v)
    v.set_defaults(func=train_vocabulary_command)


def _run_options(p: argparse.ArgumentParser) -> None:
    """The options every long command takes (the experiment queue passes both)."""
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the maps and the vocabulary trainer (0: the cores less what other "
                        "work keeps busy)")
    p.add_argument("--quiet", action="store_true",
                   help="print the result line only (the tables are still saved in transfer.json)")


def _use_threads(args: argparse.Namespace) -> None:
    """Torch's intra-op threads and the tokenizers trainer's (Rayon reads its variable
    when its pool starts, so it is set before the trainer is imported)."""
    import os

    from fastbioner.base.threads import choose

    count = choose(args.threads or None).threads
    os.environ.setdefault("RAYON_NUM_THREADS", str(count))
    import torch

    torch.set_num_threads(count)


def table_lines(report: dict[str, Any]) -> list[str]:
    """The per-source table and the diagnostics, as the command prints them."""
    v = report["vocabulary"]
    lines = [f"vocabulary {v['before']:,} -> {v['after']:,} tokens ({report['strategy']})",
             f"{'source':<40} {'kind':<10} {'shared':>8} {'added':>8} {'init':>8} {'replaced':>9}  width map"]
    for row in report["sources"]:
        wm = row.get("width_map")
        shown = ""
        if wm:
            held = wm["heldout"]
            shown = (f"{wm['method']} {wm['shape'][0]}->{wm['shape'][1]} (held-out error lstsq "
                     f"{held['lstsq']['relative_error']:.3f}, procrustes {held['procrustes']['relative_error']:.3f})")
        name = row["source"] if len(row["source"]) <= 40 else "…" + row["source"][-39:]
        lines.append(f"{name:<40} {row['kind']:<10} {row['shared']:>8,} {row['added']:>8,} "
                     f"{row['initialised']:>8,} {row['replaced']:>9,}  {shown}")
    d = report["diagnostics"]
    t = d["target_tokens"]
    lines.append(f"target's tokens: {t['unchanged']:,} of {t['count']:,} unchanged; cosine with their old vectors "
                 f"mean {t['mean_cosine']:.3f} (min {t['min_cosine']:.3f}); shift mean {t['mean_shift']:.4f} "
                 f"({t['mean_relative_shift']:.1%} of their norm); pairwise distances kept r = "
                 f"{t['pairwise_distance_correlation']:.3f}")
    for s in d["sources"]:
        if s.get("shared"):
            lines.append(f"  {s['source']}: {s['shared']:,} shared tokens, cosine to the target's "
                         f"{s['mean_cosine_to_target']:.3f}, shift {s['mean_shift_from_target']:.4f}, "
                         f"pairwise distances r = {s['pairwise_distance_correlation']:.3f}")
    n = d["new_tokens"]
    if n["count"]:
        lines.append(f"new tokens: {n['count']:,} ({n['random']:,} random, {n['from_pieces']:,} from their pieces); "
                     f"mean norm {n['mean_norm']:.3f} against the target's {n['target_mean_norm']:.3f}")
    return lines


def mention_lines(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    lines = [f"{'pieces per mention':<20} {'mentions':>9} {'before':>8} {'after':>8}"]
    for kind, b in before.items():
        a = after[kind]
        lines.append(f"{kind:<20} {b['mentions']:>9,} {b['pieces_per_mention']:>8.2f} {a['pieces_per_mention']:>8.2f}")
    return lines


def transfer_command(args: argparse.Namespace) -> int:
    _use_threads(args)
    from fastbioner.models.transfer_model import transfer_embeddings

    Registry.check_name(args.name)
    if not args.source and not args.vocabulary_from:
        raise InputError("give at least one --source or --vocabulary-from", args.target)
    if args.register and args.out:
        raise InputError("give --out or --register, not both", args.out)
    for m in args.mentions:
        if not Path(m).is_file():
            raise InputError("no such file", m)
    with contextlib.ExitStack() as stack:
        sources = list(args.source)
        labels: dict[str, str] = {}
        if args.vocabulary_from:
            from fastbioner.models.vocabulary import train_vocabulary

            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fastbioner-vocab-")))
            info = train_vocabulary(args.vocabulary_from, args.vocabulary_size, folder / "vocabulary",
                                    lowercase=_lowercases(args.target))
            if not args.quiet:
                echo(f"trained a vocabulary of {info.size:,} tokens on {info.documents:,} documents")
            sources.append(str(info.folder))
            # The folder is gone once the command ends: reports name what it was learnt from.
            inputs = [Path(f).name for f in args.vocabulary_from]
            labels[str(info.folder)] = (f"learnt from {inputs[0]}"
                                        + (f" +{len(inputs) - 1} more" if len(inputs) > 1 else ""))
        if args.register:
            registry = Registry()
            staging = stack.enter_context(registry.staging())
            outcome = transfer_embeddings(args.target, sources, args.strategy, staging / "encoder",
                                          width_map=args.width_map, align=args.align, seed=args.seed,
                                          labels=labels)
            _finish(outcome, args)
            for f in list(outcome.folder.iterdir()):
                f.rename(staging / f.name)
            outcome.folder.rmdir()
            entry = registry.install(staging, args.name)
            echo(f"registered {entry.name} at {entry.path}")
            return 0
        out = Path(args.out).expanduser() if args.out else base_models_folder() / args.name
        outcome = transfer_embeddings(args.target, sources, args.strategy, out, width_map=args.width_map,
                                      align=args.align, seed=args.seed, labels=labels)
        _finish(outcome, args)
    echo(f"wrote {outcome.folder}")
    return 0


def _lowercases(target: str) -> bool:
    """Whether the target's tokenizer lower-cases (a vocabulary for it must too)."""
    from fastbioner.models.modeling import load_tokenizer
    from fastbioner.models.transfer_model import model_folder, producible

    return not producible(load_tokenizer(model_folder(target)))("A")


def _finish(outcome, args: argparse.Namespace) -> dict[str, Any]:
    """Print the tables, count the mentions' pieces, write the reports."""
    from fastbioner.models.modeling import load_tokenizer
    from fastbioner.models.transfer_model import model_folder
    from fastbioner.models.vocabulary import pieces_per_mention

    report = dict(outcome.report)
    for line in [] if args.quiet else table_lines(report):
        echo(line)
    if args.mentions:
        before = pieces_per_mention(load_tokenizer(model_folder(args.target)), args.mentions)
        after = pieces_per_mention(load_tokenizer(outcome.folder), args.mentions)
        report["mentions"] = {"files": [Path(m).name for m in args.mentions], "before": before, "after": after}
        for line in [] if args.quiet else mention_lines(before, after):
            echo(line)
        # The counts belong to the encoder's report too.
        write_text(outcome.folder / "transfer.json", json.dumps(report, indent=2) + "\n")
    if args.json:
        write_text(Path(args.json), json.dumps(report, indent=2) + "\n")
    return report


def train_vocabulary_command(args: argparse.Namespace) -> int:
    _use_threads(args)
    from fastbioner.models.vocabulary import train_vocabulary

    info = train_vocabulary(args.files, args.size, args.out, lowercase=not args.cased,
                            min_frequency=args.min_frequency)
    echo(f"wrote {info.size:,} tokens learnt from {info.documents:,} documents into {info.folder}")
    return 0
