"""Memory of reading a PubMed baseline file: the streaming reader against a whole-file parse.

Generates a baseline-style ``.xml.gz`` (30,000 ``PubmedArticle`` records by default, each
with what baseline records carry around the abstract: authors with affiliations, MeSH
headings, chemicals, publication types, history dates, article ids and a reference
list, so the file has a real file's size; and a closing ``<DeleteCitation>``), then
reads it in a fresh Python process for each method and prints that process's peak
resident memory (``ru_maxrss``), its time and the documents read:

    python benchmarks/bench_pubmed_stream.py                  # streaming only
    python benchmarks/bench_pubmed_stream.py --whole          # also parse it whole (> 1 GB)
    python benchmarks/bench_pubmed_stream.py --whole --json benchmarks/results/pubmed-stream.json

``stream`` is ``fastbioner.read_documents(path, "pubmed")`` (iterparse over gzip, each article
cleared once read); ``whole`` decompresses the file and parses it at once with defusedxml,
as the reader did before it streamed. ``import`` is the same process importing the
reader and reading nothing: the interpreter's own share of the figure.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("patients treatment disease chemical induced cancer tumor renal hepatic acute chronic "
         "lithium cocaine naloxone aspirin dose toxicity rats mice blood pressure increased decreased "
         "associated study results methods background conclusions significant clinical therapy "
         "cells expression protein gene receptor inhibitor mg kg response effect effects observed "
         "group groups compared control analysis data trial randomized outcome risk factors").split()
MESH = ("Humans Animals Male Female Rats Mice Adult Aged Lithium Cocaine Kidney Liver Heart "
        "Hypertension Seizures Neoplasms Apoptosis Dose-Response Risk Time").split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def article(rng: random.Random, pmid: int) -> str:
    """One baseline-style record (about 6 KB, as a baseline file's average)."""
    authors = "".join(
        f"<Author ValidYN=\"Y\"><LastName>{rng.choice(WORDS).title()}</LastName><ForeName>"
        f"{rng.choice(WORDS).title()}</ForeName><Initials>A</Initials><AffiliationInfo><Affiliation>"
        f"Department of {_words(rng, 3).title()}, University of {rng.choice(WORDS).title()}."
        f"</Affiliation></AffiliationInfo></Author>" for _ in range(rng.randint(3, 9)))
    mesh = "".join(f"<MeshHeading><DescriptorName UI=\"D{rng.randint(1, 99999):06d}\" MajorTopicYN=\"N\">"
                   f"{rng.choice(MESH)}</DescriptorName><QualifierName UI=\"Q000{rng.randint(100, 999)}\" "
                   f"MajorTopicYN=\"N\">{rng.choice(WORDS)}</QualifierName></MeshHeading>"
                   for _ in range(rng.randint(6, 16)))
    refs = "".join(f"<Reference><Citation>{_words(rng, 12).title()}. J {rng.choice(WORDS).title()}. "
                   f"{rng.randint(1970, 2024)};{rng.randint(1, 99)}:{rng.randint(1, 999)}.</Citation>"
                   f"<ArticleIdList><ArticleId IdType=\"pubmed\">{rng.randint(1, 39_000_000)}</ArticleId>"
                   f"</ArticleIdList></Reference>" for _ in range(rng.randint(0, 30)))
    sections = "".join(f"<AbstractText Label=\"{lab}\" NlmCategory=\"{lab}\">{_words(rng, rng.randint(25, 70))}."
                       f"</AbstractText>" for lab in ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"))
    year = rng.randint(1975, 2024)
    return (
        f"<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"1\">{pmid}</PMID>"
        f"<DateCompleted><Year>{year}</Year><Month>03</Month><Day>11</Day></DateCompleted>"
        f"<Article PubModel=\"Print\"><Journal><ISSN IssnType=\"Print\">0000-0000</ISSN><JournalIssue "
        f"CitedMedium=\"Print\"><Volume>{rng.randint(1, 99)}</Volume><PubDate><Year>{year}</Year></PubDate>"
        f"</JournalIssue><Title>Journal of {_words(rng, 2).title()}</Title></Journal>"
        f"<ArticleTitle>{_words(rng, rng.randint(8, 20)).capitalize()}.</ArticleTitle>"
        f"<Pagination><MedlinePgn>{rng.randint(1, 900)}-{rng.randint(901, 999)}</MedlinePgn></Pagination>"
        f"<Abstract>{sections}</Abstract><AuthorList CompleteYN=\"Y\">{authors}</AuthorList>"
        f"<Language>eng</Language><PublicationTypeList><PublicationType UI=\"D016428\">Journal Article"
        f"</PublicationType></PublicationTypeList></Article><MedlineJournalInfo><Country>United States"
        f"</Country><NlmUniqueID>{rng.randint(1, 9999999)}</NlmUniqueID></MedlineJournalInfo>"
        f"<ChemicalList><Chemical><RegistryNumber>0</RegistryNumber><NameOfSubstance UI=\"D008094\">"
        f"{rng.choice(WORDS).title()}</NameOfSubstance></Chemical></ChemicalList>"
        f"<MeshHeadingList>{mesh}</MeshHeadingList></MedlineCitation><PubmedData><History>"
        f"<PubMedPubDate PubStatus=\"pubmed\"><Year>{year}</Year><Month>1</Month><Day>1</Day></PubMedPubDate>"
        f"</History><PublicationStatus>ppublish</PublicationStatus><ArticleIdList><ArticleId IdType=\"pubmed\">"
        f"{pmid}</ArticleId><ArticleId IdType=\"doi\">10.{rng.randint(1000, 9999)}/{pmid}</ArticleId>"
        f"</ArticleIdList><ReferenceList>{refs}</ReferenceList></PubmedData></PubmedArticle>\n")


def generate(path: Path, articles: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE PubmedArticleSet PUBLIC '
                 '"-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
                 '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n<PubmedArticleSet>\n')
        for i in range(articles):
            fh.write(article(rng, 10_000_000 + i))
        fh.write('<DeleteCitation><PMID Version="1">10000000</PMID></DeleteCitation>\n</PubmedArticleSet>\n')


# Run in a fresh interpreter so that each method's peak memory is its own.
CHILD = r"""
import gzip, json, resource, sys, time
method, path = sys.argv[1], sys.argv[2]
import fastbioner
read_documents = fastbioner.read_documents  # the reader loaded here, in every method's figure
t0 = time.perf_counter()
docs = chars = 0
deleted = []
if method == "stream":
    reader = read_documents(path, "pubmed")
    for doc in reader:
        docs += 1; chars += len(doc.text)
    deleted = reader.deleted
elif method == "whole":
    import defusedxml.ElementTree as SafeET
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        root = SafeET.fromstring(fh.read())
    for rec in root:
        if rec.tag == "PubmedArticle":
            docs += 1; chars += len("".join(rec.find(".//ArticleTitle").itertext()))
print(json.dumps({"method": method, "documents": docs, "characters": chars, "deleted": len(deleted),
                  "seconds": round(time.perf_counter() - t0, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def measure(method: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, method, str(path)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--articles", type=int, default=30_000)
    ap.add_argument("--file", type=Path, default=None,
                    help="the generated file (default: pubmed-bench-ARTICLES.xml.gz in the temporary folder)")
    ap.add_argument("--regenerate", action="store_true", help="write the file even if it exists")
    ap.add_argument("--whole", action="store_true", help="also parse the file whole (needs > 1 GB)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    # Named by its size: a file generated for another --articles is not read as this one.
    args.file = args.file or Path(tempfile.gettempdir()) / f"pubmed-bench-{args.articles}.xml.gz"
    if args.regenerate or not args.file.exists():
        t0 = time.perf_counter()
        generate(args.file, args.articles)
        print(f"generated {args.file} ({args.articles:,} articles) in {time.perf_counter() - t0:.0f} s")
    with gzip.open(args.file, "rb") as fh:
        raw = sum(len(b) for b in iter(lambda: fh.read(1 << 20), b""))
    # The generated file's name only: its folder is this machine's.
    info = {"file": args.file.name, "articles": args.articles, "gzipped_mb": round(args.file.stat().st_size / 1e6, 1),
            "xml_mb": round(raw / 1e6, 1), "runs": []}
    print(f"{args.file.name}: {info['gzipped_mb']} MB gzipped, {info['xml_mb']} MB of XML")
    for method in ["import", "stream"] + (["whole"] if args.whole else []):
        r = measure(method, args.file)
        info["runs"].append(r)
        print(f"{method:<7} peak RSS {r['peak_rss_mb']:>8,.1f} MB  {r['seconds']:>6.1f} s  "
              f"{r['documents']:,} documents, {r['deleted']} deleted PMID(s) reported")
    if args.json:
        args.json.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
