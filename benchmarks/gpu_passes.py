#!/usr/bin/env python
"""Tag the same documents twice per precision mode on a GPU and time each pass: the
first pass pays each new batch shape's first-use set-up, the second is the steady
speed. Both engines (light and transformers), the shipped default model.

    python benchmarks/gpu_passes.py [PUBTATOR_FILE] > benchmarks/results/gpu/second-pass.txt

(`benchmarks/gpu_check.sh` runs it as its step 5.) The default file is BC5CDR devel
(``../shared/data``), else the sample abstracts in ``assets/samples``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from fastbioner import Tagger, TaggerConfig, read_documents

REPO = Path(__file__).resolve().parents[1]

DEVEL = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"
SAMPLES = REPO / "assets" / "samples" / "bc5cdr-devel-sample.pubtator"


def timed_pass(tagger: Tagger, docs) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tagger.tag(docs)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        sys.exit("gpu_passes: torch sees no CUDA device")
    source = Path(argv[0]) if argv else (DEVEL if DEVEL.is_file() else SAMPLES)
    docs = list(read_documents(source))
    print(len(docs), "docs", flush=True)
    for engine in ("auto", "transformers"):
        for precision in ("fp32", "bf16", "fp16"):
            tagger = Tagger.load(REPO / "assets" / "default-model",
                                 TaggerConfig(device="cuda", precision=precision, engine=engine))
            tagger.tag(docs[:100])  # the CUDA context, the weights, the first shapes
            first, second = timed_pass(tagger, docs), timed_pass(tagger, docs)
            print(f"{engine:12} {precision}: {first:.2f}s then {second:.2f}s for {len(docs)} docs; "
                  f"budget {tagger.token_budget}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
