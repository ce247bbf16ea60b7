"""Build the concept dictionary that ships with the app, and measure its proposals.

    python scripts/build_concept_dictionary.py                     # writes assets/concepts/mentions.tsv
    python scripts/build_concept_dictionary.py \
        --evaluate ../shared/data/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt \
        --results benchmarks/results/concept_proposals.json

The dictionary holds every (mention text, label, concept id) of the BC5CDR and
NCBI-disease *training* sets with its count (never devel or test: the evaluation below
reads BC5CDR devel). NCBI-disease's mention types (SpecificDisease, DiseaseClass,
Modifier, CompositeMention) are all Disease, as the README's ``convert`` example maps
them.

``--evaluate`` proposes an id for every gold mention of a file that has one (as the
app does when a curator accepts a suggestion) and reports coverage (share of mentions
that get a proposal) and accuracy (share of proposals equal to the gold id, composite
ids compared as sets), per label and overall.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fastbioner import Document, FastBioNERError, read_documents
from fastbioner.research import ConceptDictionary, concept_parts, same_concept

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
SOURCES = (DATA / "bc5cdr" / "pubtator" / "CDR_TrainingSet.PubTator.txt",
           DATA / "ncbi-disease" / "pubtator" / "NCBItrainset_corpus.txt")
NCBI_TYPES = {"SpecificDisease", "DiseaseClass", "Modifier", "CompositeMention"}


def label_of(label: str) -> str:
    return "Disease" if label in NCBI_TYPES else label


def read(path: Path) -> list[Document]:
    docs = list(read_documents(path))
    for doc in docs:
        doc.spans = [s.with_(label=label_of(s.label)) for s in doc.spans]
    return docs


def build(sources: list[Path]) -> ConceptDictionary:
    dictionary = ConceptDictionary()
    for path in sources:
        dictionary.add_documents(read(path))
    return dictionary


def evaluate(dictionary: ConceptDictionary, path: Path) -> dict:
    counts: dict[str, dict[str, int]] = {}
    for doc in read(path):
        for span in doc.spans:
            if not concept_parts(span.concept_id):
                continue
            c = counts.setdefault(span.label, {"mentions": 0, "proposed": 0, "correct": 0})
            c["mentions"] += 1
            proposal = dictionary.propose(doc.span_text(span), span.label)
            if proposal is not None:
                c["proposed"] += 1
                c["correct"] += same_concept(proposal, span.concept_id)
    total = {k: sum(c[k] for c in counts.values()) for k in ("mentions", "proposed", "correct")}
    rows = {**counts, "overall": total}
    for c in rows.values():
        c["coverage"] = round(c["proposed"] / c["mentions"], 4) if c["mentions"] else 0.0
        c["accuracy"] = round(c["correct"] / c["proposed"], 4) if c["proposed"] else 0.0
        c["correct_of_all"] = round(c["correct"] / c["mentions"], 4) if c["mentions"] else 0.0
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", nargs="+", type=Path, default=list(SOURCES),
                        help="annotated training files (default: BC5CDR and NCBI-disease train, PubTator)")
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "concepts" / "mentions.tsv")
    parser.add_argument("--evaluate", type=Path, help="a gold file to measure the proposals on")
    parser.add_argument("--results", type=Path, help="write the evaluation as JSON here")
    args = parser.parse_args(argv)
    try:
        dictionary = build(args.sources)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        dictionary.save(args.out)
        print(f"{args.out}: {len(dictionary):,} concepts ({args.out.stat().st_size:,} bytes)")
        if args.evaluate:
            rows = evaluate(ConceptDictionary.load(args.out), args.evaluate)
            for label, c in rows.items():
                print(f"{label:<10} mentions {c['mentions']:>6,}  coverage {c['coverage']:.4f}  "
                      f"accuracy {c['accuracy']:.4f}  correct of all {c['correct_of_all']:.4f}")
            if args.results:
                record = {"command": "python scripts/build_concept_dictionary.py --evaluate "
                                     f"../shared/data/{args.evaluate.resolve().relative_to(DATA.resolve())}",
                          "sources": [f"../shared/data/{p.resolve().relative_to(DATA.resolve())}"
                                      for p in args.sources],
                          "evaluated_on": f"../shared/data/{args.evaluate.resolve().relative_to(DATA.resolve())}",
                          "rows": rows}
                args.results.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except FastBioNERError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
