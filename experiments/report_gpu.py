"""The GPU part of section 7 of docs/research/benchmarks.md: what ``benchmarks/gpu_check.sh``
measured on a CUDA machine (its files under ``benchmarks/results/gpu/``), read back
from those files, so every figure is one a command printed."""

from __future__ import annotations

import json
import re

from fastbioner.research import loss_points_text

from .paths import GPU

PASS_LINE = re.compile(r"^(\S+)\s+(fp32|bf16|fp16): ([\d.]+)s then ([\d.]+)s for (\d+) docs")


def second_passes() -> dict[tuple[str, str], tuple[float, float]]:
    """(engine, mode) -> (first pass, second pass) seconds, from ``gpu_passes.py``'s output."""
    path = GPU / "second-pass.txt"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = PASS_LINE.match(line)
        if m:
            out[(m[1], m[2])] = (float(m[3]), float(m[4]))
    return out


def gpu_section() -> list[str]:
    tagging = GPU / "tagging.json"
    if not tagging.is_file():
        return ["GPU figures: not yet measured (`benchmarks/gpu_check.sh` is ready for a CUDA machine)."]
    t = json.loads(tagging.read_text(encoding="utf-8"))
    tests = (GPU / "tests.txt").read_text(encoding="utf-8").strip().splitlines()[-1] \
        if (GPU / "tests.txt").is_file() else "not run"
    out = [f"**GPU.** `benchmarks/gpu_check.sh` on one {t['hardware']} ({t['date'][:10]}; its output is in "
           f"`benchmarks/results/gpu/`). The CUDA tests (`tests/core/test_cuda_paths.py`: tagging in fp32, bf16 "
           f"and fp16 against the CPU, tag-corpus, fine-tuning): {tests}. Tagging the {t['documents']} BC5CDR "
           f"devel abstracts with the shipped default (`fastbioner benchmark`, modes in interleaved rounds, "
           f"then timed after 8 warm-up documents per mode):", "",
           "| mode | tokens/s | ms/abstract | entity agreement with fp32 | devel F1 | F1 lost (points) |",
           "|---|---|---|---|---|---|"]
    for mode, r in t["modes"].items():
        out.append(f"| {mode} | {r['tokens_per_s']:,.0f} | {r['ms_per_abstract']:.2f} | {r['agreement']:.4f} | "
                   f"{100 * r['f1']:.2f} | {loss_points_text(r['f1_loss_points'])} |")
    passes = second_passes()
    light = {m: passes[("auto", m)] for m in ("fp32", "bf16", "fp16") if ("auto", m) in passes}
    if light:
        tokens = t["modes"]["fp32"]["tokens"]
        firsts = ", ".join(f"{m} {a:.2f} s" for m, (a, _) in light.items())
        seconds = ", ".join(f"{m} {b:.2f} s" for m, (_, b) in light.items())
        steady = tokens / light["fp32"][1] if "fp32" in light else None
        hf = ", ".join(f"{m} {b:.2f} s" for (e, m), (_, b) in passes.items() if e == "transformers")
        out += ["", f"The reduced modes' rows above are not their steady speed. `benchmarks/gpu_passes.py` tagged the "
                f"same documents twice per mode: first pass {firsts}; second pass {seconds} (the transformers "
                f"engine's second pass: {hf}). A reduced precision pays each new batch shape's first use several "
                f"times over; once warm, the three modes tag at one speed"
                + (f", about {round(steady, -3):,.0f} tokens/s in fp32" if steady else "")
                + ": the default (6 layers, 384 wide) is too small to keep the GPU's arithmetic busy, so halving "
                "its precision saves nothing. `--precision auto` picks fp32 there, which is right. Since this run "
                "`fastbioner benchmark` tags every document once per mode untimed before timing on a GPU; not "
                "re-measured yet (the GPU was lent for 15 minutes)."]
    corpus = GPU / "tag-corpus.txt"
    if corpus.is_file():
        runs = [re.match(r"(\w+): .*?([\d,]+) tokens/s", line)
                for line in corpus.read_text(encoding="utf-8").splitlines()]
        out += ["", "`fastbioner tag-corpus` of the same abstracts on the GPU (one local worker, the warm-up in the "
                "timing): " + ", ".join(f"{m[1]} {m[2]} tokens/s" for m in runs if m) + "."]
    distill = GPU / "distill.txt"
    if distill.is_file():
        text = distill.read_text(encoding="utf-8")
        steps = re.search(r"(\d+) steps in (\d+) s", text)
        wall = re.search(r"distillation: (\d+) s wall", text)
        if steps and wall:
            out += ["", f"A short distillation on the GPU (3-layer student of the default, 1 epoch on the first "
                    f"20,000 lines of BC5CDR train, 724 sentences, batch 32): "
                    f"{steps[1]} steps in {steps[2]} s, {wall[1]} s wall with "
                    "set-up and devel scoring: a check that the path runs, not a table row."]
    return out
