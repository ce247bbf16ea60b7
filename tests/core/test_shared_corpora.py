"""Integration over every file in ../shared/data: all parse, round trips are exact,
and the tokenizer/sentence splitter reproduce the distributed BIO files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fastbioner.io.formats import conll, guess_format, pubtator, read_any, read_documents, write_documents
from fastbioner.io.labels import document_tagged_sentences

pytestmark = pytest.mark.shared_data

# (PubTator file, BIO file of the same split, label map, required agreement)
PAIRS = [
    ("bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt", "bc5cdr/iob/devel.tsv", {}, 0.995),
    ("bc5cdr/pubtator/CDR_TrainingSet.PubTator.txt", "bc5cdr/iob/train.tsv", {}, 0.995),
    ("ncbi-disease/pubtator/NCBIdevelopset_corpus.txt", "ncbi-disease/iob/devel.tsv", "Disease", 0.995),
    # NCBI's own splitter also cuts inside brackets and after "et al. (1992)"; we do not.
    ("ncbi-disease/pubtator/NCBItrainset_corpus.txt", "ncbi-disease/iob/train.tsv", "Disease", 0.99),
]


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".txt", ".tsv", ".xml"))


def test_every_file_parses(shared_data):
    batch = read_any([shared_data])
    n = 0
    for doc in batch:
        n += 1
        assert doc.text and all(0 <= s.start < s.end <= len(doc.text) for s in doc.spans)
    assert batch.errors == []
    assert sorted(batch.files) == corpus_files(shared_data)
    assert n > 10_000


@pytest.mark.parametrize("relative", [
    "bc5cdr/iob/devel.tsv", "bc5cdr/iob/train.tsv", "ncbi-disease/iob/devel.tsv", "ncbi-disease/iob/train.tsv",
    "bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt", "bc5cdr/pubtator/CDR_TrainingSet.PubTator.txt",
    "ncbi-disease/pubtator/NCBIdevelopset_corpus.txt", "ncbi-disease/pubtator/NCBItrainset_corpus.txt",
    "bc5cdr/bioc/CDR_DevelopmentSet.BioC.xml", "pubmed-xml",
])
def test_round_trips_are_exact(shared_data, tmp_path, relative):
    sources = corpus_files(shared_data / relative) if (shared_data / relative).is_dir() else [shared_data / relative]
    for src in sources:
        fmt = guess_format(src)
        docs = list(read_documents(src))
        out = tmp_path / src.name  # same name: CoNLL ids without -DOCSTART- come from the file name
        write_documents(docs, out, fmt)
        assert list(read_documents(out, fmt)) == docs, src
        if fmt == "conll" or (fmt == "pubtator" and src.name.startswith("CDR")):
            # Byte for byte too, but for blank lines at the ends of the file. (NCBI's
            # PubTator has a mention text with trailing spaces that are not written back.)
            assert out.read_text().strip("\n") == src.read_text().strip("\n")


def test_bioc_and_pubtator_agree(shared_data):
    from_bioc = list(read_documents(shared_data / "bc5cdr/bioc/CDR_DevelopmentSet.BioC.xml"))
    from_pubtator = list(read_documents(shared_data / "bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt"))
    assert [d.id for d in from_bioc] == [d.id for d in from_pubtator]
    for b, p in zip(from_bioc, from_pubtator):
        assert (b.text, b.passages, b.relations) == (p.text, p.passages, p.relations)
        assert set(p.spans) <= set(b.spans)  # BioC adds the single parts of composite mentions


def agreement(pubtator_path: Path, bio_path: Path, label_map) -> tuple[int, int]:
    ours = Counter()
    for doc in pubtator.read(pubtator_path):
        if label_map:
            doc.spans = [s.with_(label=label_map) for s in doc.spans]
        ours.update((s.words, s.tags) for s in document_tagged_sentences(doc).sentences)
    gold = Counter((s.words, s.tags) for s in conll.read_tagged_sentences(bio_path))
    return sum((gold & ours).values()), sum(gold.values())


@pytest.mark.parametrize("pubtator_file,bio_file,label_map,required", PAIRS)
def test_sentences_match_the_distributed_bio_files(shared_data, pubtator_file, bio_file, label_map, required):
    same, total = agreement(shared_data / pubtator_file, shared_data / bio_file, label_map)
    print(f"{bio_file}: {same}/{total} = {same / total:.3%} sentences identical")
    assert same / total >= required


def test_done_when_devel_counts(shared_data, tmp_path):
    out = tmp_path / "dev.conll"
    report = write_documents(read_documents(shared_data / "bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt"), out)
    lost = Counter(span.label for _, span in report.off_boundary)
    written = Counter(s.label for doc in read_documents(out) for s in doc.spans)
    assert written == {"Chemical": 5347 - lost["Chemical"], "Disease": 4244 - lost["Disease"]}
    assert report.left_out == []
