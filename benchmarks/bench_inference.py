"""Inference benchmark: the engine against the transformers pipeline, every precision
mode against float32, and the teacher against its students, in one run on the same
documents.

    python benchmarks/bench_inference.py --model minilm-bc5cdr \\
        --docs ../shared/data/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt \\
        --devel ../shared/data/bc5cdr/iob/devel.tsv --threads 2 --out bench-inference.json

1. ``transformers.pipeline("token-classification", aggregation_strategy="simple")``
   on the same model (float32) against the engine: tokens/s, abstracts/s, peak
   memory, entity agreement. The pipeline gets the same sentences the engine tags
   (``--pipeline-input abstracts`` gives it whole abstracts instead, which it cuts
   at the model's maximum length).
2. Every precision mode of the engine against float32: speed, entity agreement on
   the documents, devel F1 (with ``--devel``) and whether the mode may be a default
   (at most 0.3 F1 points lost).
3. The teacher against each of its students in the registry (float32 and each
   model's default mode) on the first ``--compare-docs`` documents.

Systems are timed side by side, round by round (see
:func:`fastbioner.infer.speed.interleaved_timing`): this machine is shared and noisy, so
the ratios are the result, not the absolute times. Tokens are the word tokens of
``fastbioner.io.text``, the same count for every system. ``--record`` writes section
2's figures into the model's manifest (``speed``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from fastbioner import Document, Registry, Source, Span, Tagger, TaggerConfig, read_documents
from fastbioner.research import (
    MAX_F1_LOSS_POINTS, devel_f1, document_sentences, hardware_name, interleaved_timing, load_token_classifier,
    load_tokenizer, mode_records, pick_device, precision_taggers, record_speed, span_agreement, speed_record,
)


class PeakMemory:
    """Peak resident memory of this process during each timed call, sampled every
    5 ms from /proc (the engine and the pipeline run in one process, so each is
    charged the growth above the memory in use when its call began)."""

    def __init__(self) -> None:
        self.peak_growth: dict[str, int] = {}
        self.peak_rss = 0

    @staticmethod
    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = peak = self.rss()
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.005):
                peak = max(peak, self.rss())

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            peak = max(peak, self.rss())
            self.peak_growth[name] = max(self.peak_growth.get(name, 0), peak - start)
            self.peak_rss = max(self.peak_rss, peak)


def pipeline_system(folder: Path, device, whole_abstracts: bool, aggregation: str = "simple",
                    batch_size: int = 1):
    """The transformers pipeline over the same model, as a function docs -> spans."""
    from transformers import pipeline

    model = load_token_classifier(folder, device="cpu").eval()
    pipe = pipeline("token-classification", model=model, tokenizer=load_tokenizer(folder),
                    aggregation_strategy=aggregation, device=device, batch_size=batch_size)

    def run(docs: list[Document]) -> list[list[Span]]:
        out = []
        for doc in docs:
            if whole_abstracts:
                pieces = [(0, doc.text)] if doc.text.strip() else []
            else:
                pieces = [(s.start, doc.text[s.start:s.end]) for s in document_sentences(doc)]
            results = pipe([t for _, t in pieces]) if pieces else []
            out.append([Span(base + int(e["start"]), base + int(e["end"]), e["entity_group"], Source.MODEL,
                             float(e["score"]))
                        for (base, _), ents in zip(pieces, results) for e in ents])
        return out

    return run


def ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else float("nan")


def section_engine(args, docs: list[Document]) -> dict[str, Any]:
    config = TaggerConfig(device=args.device, threads=args.threads)
    taggers = precision_taggers(args.model, config, args.modes)
    folder = taggers["fp32"].folder
    systems = {"pipeline": pipeline_system(folder, taggers["fp32"].device, args.pipeline_input == "abstracts",
                                           batch_size=args.pipeline_batch_size)}
    systems.update({f"engine-{m}": t.tag for m, t in taggers.items()})
    memory = PeakMemory()
    print(f"timing {', '.join(systems)} on {len(docs)} documents ...", file=sys.stderr)
    timed = interleaved_timing(systems, docs, chunk_documents=args.round_docs, around=memory)
    pipe_spans, pipe_speed = timed.pop("pipeline")
    # The same pipeline with aggregation "first" (a word takes its first subword's
    # label, the engine's rule), untimed and batched: it shows how much of the
    # disagreement is "simple" labelling each subword on its own.
    print("pipeline with aggregation 'first' (untimed) ...", file=sys.stderr)
    first = pipeline_system(folder, taggers["fp32"].device, args.pipeline_input == "abstracts",
                            aggregation="first", batch_size=32)(docs)
    engine = {name.split("-", 1)[1]: value for name, value in timed.items()}
    f1: dict[str, float | None] = dict.fromkeys(engine)
    if args.devel:
        for mode, tagger in taggers.items():
            print(f"devel F1 of {mode} ...", file=sys.stderr)
            f1[mode] = devel_f1(tagger, args.devel)
    hardware = hardware_name(taggers["fp32"].device)
    modes = mode_records(engine, f1, str(args.devel or ""), hardware)
    for mode in modes:
        modes[mode]["peak_memory_growth_mb"] = round(memory.peak_growth[f"engine-{mode}"] / 2**20, 1)
    fp32_spans, fp32_speed = engine["fp32"]
    agreement = span_agreement(fp32_spans, pipe_spans)
    pipe = {**pipe_speed.to_dict(), "abstracts_per_s": round(pipe_speed.documents / pipe_speed.seconds, 2),
            "peak_memory_growth_mb": round(memory.peak_growth["pipeline"] / 2**20, 1),
            "input": args.pipeline_input, "batch_size": args.pipeline_batch_size,
            "agreement_with_engine_fp32": agreement.to_dict(),
            "agreement_first_aggregation_with_engine_fp32": span_agreement(fp32_spans, first).to_dict()}
    record = speed_record(modes, taggers["fp32"].device, taggers["fp32"].describe()["threads"], len(docs))
    best = record["precision"]
    allowed = [m for m, r in modes.items() if m != "fp32" and r["default_allowed"]]
    fastest_allowed = max(allowed, key=lambda m: modes[m]["tokens_per_s"], default="fp32")
    return {
        "model": taggers["fp32"].name, "hardware": hardware, "threads": record["threads"],
        "pipeline": pipe, "modes": modes, "speed_record": record,
        "ratios": {
            "engine_fp32_vs_pipeline": ratio(fp32_speed.tokens_per_s, pipe_speed.tokens_per_s),
            "default_mode": best,
            "default_mode_vs_pipeline": ratio(modes[best]["tokens_per_s"], pipe_speed.tokens_per_s),
            "fastest_allowed_mode": fastest_allowed,
            "fastest_allowed_vs_pipeline": ratio(modes[fastest_allowed]["tokens_per_s"], pipe_speed.tokens_per_s),
            **{f"{m}_vs_fp32": ratio(r["tokens_per_s"], modes["fp32"]["tokens_per_s"]) for m, r in modes.items()},
        },
        "entities_identical_to_pipeline": agreement.identical,
    }


def section_students(args, docs: list[Document]) -> dict[str, Any]:
    registry = Registry()
    entries = registry.list()
    students = [e for e in entries if e.manifest.kind == "student" and e.manifest.parent]
    teacher_name = args.teacher or (students[0].manifest.parent if students else None)
    if not teacher_name:
        return {"skipped": "no students (with a parent teacher) in the registry and no --teacher"}
    wanted = [teacher_name] + [e.name for e in students if e.manifest.parent == teacher_name
                               and (not args.students or e.name in args.students)]
    wanted += [n for n in args.also if n not in wanted]
    systems, info = {}, {}
    for name in wanted:
        for precision in args.compare_modes:
            tagger = Tagger.load(name, TaggerConfig(device=args.device, precision=precision, threads=args.threads))
            key = f"{name}@{tagger.precision.value}"
            if key in systems:
                continue
            systems[key] = tagger.tag
            m = registry.get(name).manifest
            info[key] = {"model": name, "kind": m.kind, "precision": tagger.precision.value,
                         "parameters": m.parameters, "size_bytes": m.size_bytes, "layers": m.layers,
                         "width": m.width, "method": m.method, "devel_f1": (m.metrics or {}).get("f1")}
    print(f"timing {', '.join(systems)} on {len(docs)} documents ...", file=sys.stderr)
    timed = interleaved_timing(systems, docs, chunk_documents=args.round_docs)
    base = timed[f"{teacher_name}@fp32"][1].tokens_per_s
    rows = []
    for key, (_, speed) in timed.items():
        row = {**info[key], **speed.to_dict(), "speed_vs_teacher_fp32": ratio(speed.tokens_per_s, base)}
        teacher_f1 = info[f"{teacher_name}@fp32"]["devel_f1"]
        if row["devel_f1"] is not None and teacher_f1 is not None:
            row["f1_points_vs_teacher"] = round(100 * (row["devel_f1"] - teacher_f1), 2)
        rows.append(row)
    return {"teacher": teacher_name, "documents": len(docs), "rows": rows}


def print_report(result: dict[str, Any]) -> None:
    e = result.get("engine")
    if e:
        p = e["pipeline"]
        print(f"\n== 1. engine vs transformers pipeline ({e['model']}; {e['hardware']}, {e['threads']} threads; "
              f"{p['documents']} abstracts, {p['tokens']} tokens)")
        print(f"{'system':<16}{'tokens/s':>10}{'abstr/s':>9}{'peak MB':>9}{'vs pipeline':>12}")
        print(f"{'pipeline':<16}{p['tokens_per_s']:>10,.0f}{p['abstracts_per_s']:>9.2f}"
              f"{p['peak_memory_growth_mb']:>9.0f}{1.0:>12.2f}")
        for mode, r in e["modes"].items():
            print(f"{'engine ' + mode:<16}{r['tokens_per_s']:>10,.0f}{1000 / r['ms_per_abstract']:>9.2f}"
                  f"{r['peak_memory_growth_mb']:>9.0f}{r['tokens_per_s'] / p['tokens_per_s']:>12.2f}")
        for what, key in (("simple", "agreement_with_engine_fp32"),
                          ("first", "agreement_first_aggregation_with_engine_fp32")):
            a = p[key]
            print(f"pipeline ({what}) entities vs engine fp32: P {a['precision']:.4f} R {a['recall']:.4f} "
                  f"F1 {a['f1']:.4f}, identical in {a['identical_documents']}/{a['documents']} abstracts "
                  f"({a['other_entities']} vs {a['reference_entities']} entities)")
        print(f"\n== 2. precision modes vs fp32 (a default loses at most {MAX_F1_LOSS_POINTS} F1 points on devel)")
        print(f"{'mode':<6}{'tokens/s':>10}{'vs fp32':>9}{'agreement':>11}{'same docs':>11}{'devel F1':>10}"
              f"{'F1 lost':>9}  default allowed")
        for mode, r in e["modes"].items():
            f1 = f"{r['f1']:.4f}" if r["f1"] is not None else "-"
            lost = f"{r['f1_loss_points']:.2f}" if r["f1_loss_points"] is not None else "-"
            print(f"{mode:<6}{r['tokens_per_s']:>10,.0f}{e['ratios'][mode + '_vs_fp32']:>9.2f}{r['agreement']:>11.4f}"
                  f"{r['identical_documents']:>7}/{r['documents']:<3}{f1:>10}{lost:>9}  "
                  f"{'yes' if r['default_allowed'] or mode == 'fp32' else 'no'}")
        ra = e["ratios"]
        print(f"ratios: engine fp32 / pipeline = {ra['engine_fp32_vs_pipeline']:.2f}; default mode "
              f"({ra['default_mode']}) / pipeline = {ra['default_mode_vs_pipeline']:.2f}; fastest allowed "
              f"({ra['fastest_allowed_mode']}) / pipeline = {ra['fastest_allowed_vs_pipeline']:.2f}")
    s = result.get("students")
    if s:
        print("\n== 3. teacher vs students")
        if "skipped" in s:
            print(s["skipped"])
        else:
            print(f"{'model':<28}{'prec':>6}{'params':>12}{'MB':>8}{'tokens/s':>10}{'x teacher':>10}{'devel F1':>10}")
            for r in s["rows"]:
                f1 = f"{r['devel_f1']:.4f}" if r["devel_f1"] is not None else "-"
                print(f"{r['model']:<28}{r['precision']:>6}{r['parameters']:>12,}{r['size_bytes'] / 2**20:>8.1f}"
                      f"{r['tokens_per_s']:>10,.0f}{r['speed_vs_teacher_fp32']:>10.2f}{f1:>10}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="registry name or folder (sections 1 and 2)")
    ap.add_argument("--docs", required=True, help="documents to tag (e.g. BC5CDR devel PubTator)")
    ap.add_argument("--limit", type=int, default=None, help="first N documents only")
    ap.add_argument("--devel", default=None, help="BIO devel file: F1 per precision mode")
    ap.add_argument("--modes", nargs="+", default=None, help="precision modes (default: all on offer)")
    ap.add_argument("--pipeline-input", choices=("sentences", "abstracts"), default="sentences")
    ap.add_argument("--pipeline-batch-size", type=int, default=1, help="the pipeline's batch_size (its default: 1)")
    ap.add_argument("--teacher", default=None, help="section 3's teacher (default: the students' parent)")
    ap.add_argument("--compare-docs", type=int, default=100, help="documents for section 3 (0: skip it)")
    ap.add_argument("--students", nargs="*", default=None, metavar="NAME",
                    help="section 3: only these of the teacher's students (default: all of them; several seeds "
                         "of one architecture tag at one speed)")
    ap.add_argument("--also", nargs="*", default=[], metavar="NAME",
                    help="more models for section 3 (e.g. the default model, whose parent is not the teacher)")
    ap.add_argument("--compare-modes", nargs="+", default=["fp32", "auto"], metavar="MODE",
                    help="precision modes of each model in section 3 (default: fp32 auto)")
    ap.add_argument("--skip-engine", action="store_true", help="sections 1 and 2 not run")
    ap.add_argument("--round-docs", type=int, default=50, help="documents per timing round")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--record", action="store_true", help="write section 2 into the model's manifest")
    ap.add_argument("--out", default="bench-inference.json", help="JSON results")
    args = ap.parse_args(argv)

    docs = list(read_documents(args.docs))[:args.limit]
    t0 = time.time()
    result: dict[str, Any] = {"command": " ".join([sys.executable, *sys.argv]), "documents": args.docs,
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "hardware": hardware_name(pick_device(args.device))}
    if not args.skip_engine:
        result["engine"] = section_engine(args, docs)
    if args.compare_docs:
        result["students"] = section_students(args, docs[:args.compare_docs])
    result["seconds"] = round(time.time() - t0, 1)
    if __package__:  # python -m benchmarks.NAME
        from .results_file import write_keeping_earlier
    else:  # python benchmarks/NAME.py: Python puts this folder first on the path
        from results_file import write_keeping_earlier

    write_keeping_earlier(args.out, result)  # the run before stays under "earlier" (the report may quote it)
    print_report(result)
    print(f"\nwrote {args.out} ({result['seconds']:.0f} s)")
    if args.record and "engine" in result:
        entry = Registry().resolve(args.model)
        if entry.registered:
            record_speed(entry.name, result["engine"]["speed_record"])
            print(f"recorded speed in the manifest of {entry.name}")
        else:
            print(f"{args.model} is not a registry model: nothing recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
