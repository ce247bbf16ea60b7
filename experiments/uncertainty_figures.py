#!/usr/bin/env python
"""Which per-document uncertainty figure predicts the model's errors best: tag each
annotated document with a model, count its real errors against the gold spans, and
print how well each candidate figure (fastbioner.infer.uncertainty) orders the documents by
them.

    OMP_NUM_THREADS=1 python -m experiments.uncertainty_figures \\
        ../shared/data/ncbi-disease/pubtator/NCBIdevelopset_corpus.txt --types Disease \\
        --map-label SpecificDisease=Disease --map-label DiseaseClass=Disease \\
        --map-label Modifier=Disease --map-label CompositeMention=Disease
    OMP_NUM_THREADS=1 python -m experiments.uncertainty_figures \\
        ../shared/data/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt

Errors of a document: wrong words (predicted tag != gold tag, strict IOB2) and wrong
entities (false positives + false negatives, exact spans). ``--types``: the entity
types the corpus annotates (a model's other types are dropped before counting: NCBI
has no Chemical). Printed per figure: Spearman's rho against the errors and against
the error rate (errors per word), and the share of all wrong entities found in the
most uncertain fifth of the documents.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="annotated documents (PubTator, BioC, JSONL)")
    p.add_argument("--model", default=None, help="registry name or folder (default: the shipped model)")
    p.add_argument("--types", default="", help="comma-separated entity types the corpus annotates (default: all)")
    p.add_argument("--map-label", action="append", default=[], metavar="OLD=NEW")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="also write the figures as JSON")
    args = p.parse_args()

    import numpy as np
    from scipy.stats import spearmanr

    from fastbioner import (Source, Tagger, TaggerConfig, document_tagged_sentences, read_documents,
                            shipped_model_folder)

    mapping = dict(pair.split("=", 1) for pair in args.map_label)
    types = {t for t in args.types.split(",") if t}
    docs = list(read_documents(args.corpus))
    for d in docs:
        d.spans = [s.with_(label=mapping.get(s.label, s.label)) for s in d.spans]
    model = args.model or str(shipped_model_folder())
    tagger = Tagger.load(model, TaggerConfig(threads=args.threads, precision="fp32"))
    rows = []
    for start in range(0, len(docs), 64):
        chunk = docs[start:start + 64]
        tagged = tagger.tag_chunk(chunk, keep=())
        for gold, pred, unsure in zip(chunk, tagged.documents, tagged.uncertainty):
            def keep(s):
                return not types or s.label in types

            gold_spans = {(s.start, s.end, s.label) for s in gold.spans if keep(s)}
            pred.spans = [s for s in pred.spans if keep(s)]
            pred_spans = {(s.start, s.end, s.label) for s in pred.spans}
            gold.spans = [s for s in gold.spans if keep(s)]
            g = document_tagged_sentences(gold).sentences
            q = document_tagged_sentences(pred, sources=[Source.MODEL]).sentences
            wrong_words = sum(a != b for gs, ps in zip(g, q) for a, b in zip(gs.tags, ps.tags))
            rows.append({"id": gold.id, "tokens": unsure.tokens, "expected_errors": unsure.expected_errors,
                         "per_token": unsure.per_token, "lowest_span": unsure.lowest_span,
                         "wrong_words": wrong_words, "wrong_entities": len(gold_spans ^ pred_spans)})
    total_wrong = sum(r["wrong_entities"] for r in rows) or 1
    fifth = max(1, len(rows) // 5)
    out = {"corpus": Path(args.corpus).name, "model": Path(model).name, "documents": len(rows),
           "command": " ".join(["python", "experiments/uncertainty_figures.py", *sys.argv[1:]]), "figures": {}}
    print(f"{len(rows)} documents of {out['corpus']}, model {out['model']}")
    print(f"{'figure':<16} {'rho(wrong words)':>17} {'rho(wrong ents)':>16} {'rho(word err rate)':>19} "
          f"{'wrong ents in top 1/5':>22}")
    for figure in ("expected_errors", "per_token", "lowest_span", "tokens"):
        x = np.array([r[figure] for r in rows], dtype=float)
        rate = [r["wrong_words"] / max(1, r["tokens"]) for r in rows]
        rho_w = spearmanr(x, [r["wrong_words"] for r in rows]).statistic
        rho_e = spearmanr(x, [r["wrong_entities"] for r in rows]).statistic
        rho_r = spearmanr(x, rate).statistic
        order = sorted(range(len(rows)), key=lambda i: (-x[i], rows[i]["id"]))
        captured = sum(rows[i]["wrong_entities"] for i in order[:fifth]) / total_wrong
        out["figures"][figure] = {"rho_wrong_words": round(float(rho_w), 3),
                                  "rho_wrong_entities": round(float(rho_e), 3),
                                  "rho_word_error_rate": round(float(rho_r), 3),
                                  "wrong_entities_in_top_fifth": round(captured, 3)}
        print(f"{figure:<16} {rho_w:>17.3f} {rho_e:>16.3f} {rho_r:>19.3f} {captured:>22.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
