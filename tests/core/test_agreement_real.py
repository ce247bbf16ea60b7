"""``fastbioner agree`` on a real pair: the BC5CDR devel gold against the shipped
model's tagging of it (a slice, tagged here with ``fastbioner tag``), in PubTator and
in BIO, scored against independent references (the PubTator lines themselves,
seqeval, scikit-learn)."""

from __future__ import annotations

import itertools
import json

import pytest
from seqeval.metrics import f1_score, precision_score, recall_score
from seqeval.scheme import IOB2
from sklearn.metrics import cohen_kappa_score

from fastbioner.cli.main import main
from fastbioner.io.formats import read_documents, write_documents
from fastbioner.io.formats.conll import read_tagged_sentences

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

PUBTATOR_DOCS = 25
BIO_SENTENCES = 200


def _tag(src, out, fmt):
    assert main(["tag", str(src), "--out", str(out), "--format", fmt, "--threads", "1", "--quiet"]) == 0


def _agree(tmp_path, a, b, name):
    out = tmp_path / f"{name}.json"
    assert main(["agree", str(a), str(b), "--json", str(out)]) == 0
    return json.loads(out.read_text())["pairs"][0]


def _pubtator_mentions(path):
    """(PMID, start, end, type) of every mention line, read without the project's reader."""
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) >= 5 and cols[1].isdigit():
            out.add((cols[0], int(cols[1]), int(cols[2]), cols[4]))
    return out


def test_gold_against_the_shipped_model_in_pubtator(shared_data, tmp_path, capsys):
    gold = tmp_path / "gold.pubtator"
    docs = itertools.islice(read_documents(shared_data / "bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt"),
                            PUBTATOR_DOCS)
    write_documents(docs, gold)
    tagged = tmp_path / "model.pubtator"
    _tag(gold, tagged, "pubtator")
    pair = _agree(tmp_path, gold, tagged, "pubtator")
    print(f"\nBC5CDR devel, first {PUBTATOR_DOCS} abstracts (PubTator), shipped model against gold: "
          f"P {pair['overall']['precision']:.4f} R {pair['overall']['recall']:.4f} "
          f"F1 {pair['overall']['f1']:.4f} kappa {pair['kappa']:.4f} differences {pair['differences']}")
    a, b = _pubtator_mentions(gold), _pubtator_mentions(tagged)
    assert pair["documents"]["compared"] == PUBTATOR_DOCS
    assert (pair["overall"]["a"], pair["overall"]["b"]) == (len(a), len(b))
    assert pair["overall"]["precision"] == pytest.approx(len(a & b) / len(b))
    assert pair["overall"]["recall"] == pytest.approx(len(a & b) / len(a))
    for typ in ("Chemical", "Disease"):
        ta, tb = {m for m in a if m[3] == typ}, {m for m in b if m[3] == typ}
        assert pair["per_type"][typ]["f1"] == pytest.approx(2 * len(ta & tb) / (len(ta) + len(tb)))
    assert 0.5 < pair["overall"]["f1"] < 1.0  # a real model: good, not perfect


def test_gold_against_the_shipped_model_in_bio(shared_data, tmp_path):
    blocks = (shared_data / "bc5cdr/iob/devel.tsv").read_text(encoding="utf-8").split("\n\n")[:BIO_SENTENCES]
    gold = tmp_path / "gold.bio"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    tagged = tmp_path / "model.bio"
    _tag(gold, tagged, "conll")
    pair = _agree(tmp_path, gold, tagged, "bio")
    print(f"\nBC5CDR devel, first {BIO_SENTENCES} sentences (BIO), shipped model against gold: "
          f"P {pair['overall']['precision']:.4f} R {pair['overall']['recall']:.4f} "
          f"F1 {pair['overall']['f1']:.4f} kappa {pair['kappa']:.4f} differences {pair['differences']}")
    y_a = [list(s.tags) for s in read_tagged_sentences(gold)]
    y_b = [list(s.tags) for s in read_tagged_sentences(tagged)]
    assert pair["documents"]["matched_by"] == "position" and pair["documents"]["compared"] == BIO_SENTENCES
    kw = dict(mode="strict", scheme=IOB2, zero_division=0)
    assert pair["overall"]["precision"] == pytest.approx(precision_score(y_a, y_b, **kw))
    assert pair["overall"]["recall"] == pytest.approx(recall_score(y_a, y_b, **kw))
    assert pair["overall"]["f1"] == pytest.approx(f1_score(y_a, y_b, **kw))
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(sum(y_a, []), sum(y_b, [])))
    assert pair["tokens"] == sum(map(len, y_a))
    assert 0.5 < pair["overall"]["f1"] < 1.0
