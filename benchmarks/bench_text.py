#!/usr/bin/env python
"""Speed of the tokenizer and sentence splitter (the first step of tagging), per abstract.

    python benchmarks/bench_text.py [PUBTATOR_FILE]

Prints milliseconds per abstract and the projected time for 10,000 abstracts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fastbioner import read_documents
from fastbioner.research import document_sentences

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "bc5cdr" / "pubtator" / "CDR_DevelopmentSet.PubTator.txt"


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    docs = list(read_documents(path))
    t0 = time.perf_counter()
    tokens = sum(len(s.tokens) for d in docs for s in document_sentences(d))
    seconds = time.perf_counter() - t0
    ms = 1000 * seconds / len(docs)
    print(f"{len(docs)} abstracts, {tokens} tokens: {ms:.2f} ms per abstract, "
          f"{tokens / seconds:,.0f} tokens/s; 10,000 abstracts in {ms * 10:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
