"""Tiny gzipped PubMed files shaped as the baseline and update files are (a
``PubmedArticleSet`` of ``PubmedArticle`` records, ``<DeleteCitation>`` at the end),
with text from the tiny models' vocabulary."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from xml.sax.saxutils import escape

from tiny_models import WORDS


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def article(pmid: int, title: str, abstract: str, version: int = 1) -> str:
    return (f"<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"{version}\">"
            f"{pmid}</PMID><Article PubModel=\"Print\"><Journal><Title>J Test</Title></Journal>"
            f"<ArticleTitle>{escape(title)}</ArticleTitle><Abstract><AbstractText>{escape(abstract)}"
            f"</AbstractText></Abstract><AuthorList><Author><LastName>Doe</LastName></Author></AuthorList>"
            f"</Article><MeshHeadingList><MeshHeading><DescriptorName UI=\"D000001\">Humans</DescriptorName>"
            f"</MeshHeading></MeshHeadingList></MedlineCitation><PubmedData><ArticleIdList>"
            f"<ArticleId IdType=\"pubmed\">{pmid}</ArticleId></ArticleIdList></PubmedData></PubmedArticle>\n")


def write_pubmed_gz(path: Path, records: list[str], deleted: list[int] = ()) -> Path:
    body = "".join(records)
    if deleted:
        body += "<DeleteCitation>" + "".join(f"<PMID Version=\"1\">{p}</PMID>" for p in deleted) + \
                "</DeleteCitation>\n"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(f'<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n{body}</PubmedArticleSet>\n')
    return path


def baseline_series(folder: Path, seed: int = 0) -> dict:
    """Three files, oldest first: a baseline file (PMIDs 1-12), an update that revises 5
    and deletes 3 (PMIDs 13-20 new), and an update that revises 13, deletes 14 and
    carries a deletion-only PMID never seen (99). Returns the paths, the text of every
    PMID's kept copy and the PMIDs each shard must hold, in order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)

    def text() -> tuple[str, str]:
        return sentence(rng, rng.randint(3, 8)), " ".join(sentence(rng, rng.randint(5, 15))
                                                          for _ in range(rng.randint(1, 4)))

    first = {p: text() for p in range(1, 13)}
    second = {p: text() for p in list(range(13, 21)) + [5]}
    third = {p: text() for p in (21, 22, 13, 23)}
    paths = [
        write_pubmed_gz(folder / "pubmed25n0001.xml.gz", [article(p, *t) for p, t in first.items()]),
        write_pubmed_gz(folder / "pubmed25n0002.xml.gz", [article(p, *t, version=2) for p, t in second.items()],
                        deleted=[3]),
        write_pubmed_gz(folder / "pubmed25n0003.xml.gz", [article(p, *t, version=3) for p, t in third.items()],
                        deleted=[14, 99]),
    ]
    texts = {**{p: t for p, t in first.items()}, **second, **third}
    expected = [
        [str(p) for p in first if p not in (3, 5)],
        [str(p) for p in second if p not in (13, 14)],
        [str(p) for p in third],
    ]
    return {"paths": paths, "texts": {str(p): f"{a} {b}" for p, (a, b) in texts.items()}, "shards": expected}
