"""Agreement between annotators (``fastbioner.curate.agreement``, ``fastbioner agree``): the
measures against their references (seqeval's strict IOB2 F1, scikit-learn's
``cohen_kappa_score``, Fleiss' published example), their symmetry, and the command's
output and errors."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics import f1_score, precision_score, recall_score
from seqeval.scheme import IOB2
from sklearn.metrics import cohen_kappa_score

from fastbioner.curate.agreement import (
    OTHER_BOUNDARY, OTHER_LABEL, ONLY_A, ONLY_B, cohen_kappa, compare_documents, compare_spans, fleiss_kappa,
    match_documents, token_tags,
)
from fastbioner.cli.main import main
from fastbioner.io.documents import Document, Span
from fastbioner.io.formats import read_documents

TEXT = "Acute renal failure after cisplatin and lithium carbonate toxicity."


def s(start, end, label="Disease"):
    return Span(start, end, label)


def test_exact_counts_duplicates_once_and_nested_all():
    a = [s(0, 19), s(6, 19), s(6, 19), s(26, 35, "Chemical")]        # nested; a duplicate
    b = [s(6, 19), s(26, 35, "Chemical"), s(40, 57, "Chemical")]
    got = compare_spans(a, b)
    assert (got.overall.n_a, got.overall.n_b, got.overall.matched_a) == (3, 3, 2)
    assert got.per_type["Disease"].recall == pytest.approx(0.5)
    assert got.per_type["Chemical"].precision == pytest.approx(0.5)
    assert got.overall.f1 == pytest.approx(2 / 3)


def test_overlap_match_counts_each_side_found():
    a = [s(0, 19), s(26, 35, "Chemical")]
    b = [s(6, 19), s(26, 35, "Disease")]
    exact, overlap = compare_spans(a, b, "exact"), compare_spans(a, b, "overlap")
    assert exact.overall.f1 == 0.0
    assert overlap.per_type["Disease"].recall == 1.0          # 0..19 overlaps B's 6..19
    assert overlap.per_type["Disease"].precision == 0.5       # B's 26..35 Disease overlaps no A Disease
    assert overlap.per_type["Chemical"].recall == 0.0


def test_differences_by_kind():
    a = [s(0, 19), s(26, 35, "Chemical"), s(40, 66)]
    b = [s(6, 19), s(26, 35, "Disease"), s(40, 57, "Chemical")]
    got = compare_spans(a, b + [s(58, 66)], doc_id="d").differences
    kinds = [(d.kind, d.a and (d.a.start, d.a.end), d.b and (d.b.start, d.b.end)) for d in got]
    assert kinds == [(OTHER_BOUNDARY, (0, 19), (6, 19)), (OTHER_LABEL, (26, 35), (26, 35)),
                     (OTHER_BOUNDARY, (40, 66), (40, 57)), (ONLY_B, None, (58, 66))]
    assert compare_spans([s(0, 5)], [], doc_id="d").differences[0].kind == ONLY_A


def test_fleiss_kappa_matches_the_published_example():
    # Fleiss (1971) as worked in the literature: 10 items, 14 raters, 5 categories, kappa 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    rows = [[str(c) for c, n in enumerate(counts) for _ in range(n)] for counts in table]
    assert fleiss_kappa(rows) == pytest.approx(0.2099, abs=5e-4)
    assert fleiss_kappa([["O", "O", "O"], ["B", "B", "B"]]) == 1.0


# Random pairs of annotations ------------------------------------------------------------
TYPES = ("Chemical", "Disease")


@st.composite
def tagged_sentences(draw, n_sentences=None):
    """Sentences of IOB2 tags (valid sequences) for two annotators of the same words."""
    n = n_sentences or draw(st.integers(1, 4))
    lengths = [draw(st.integers(1, 12)) for _ in range(n)]

    def tags(length):
        out, prev = [], "O"
        for _ in range(length):
            choice = draw(st.sampled_from(["O", "O", "B-Chemical", "B-Disease", "I"]))
            if choice == "I":
                choice = "O" if prev == "O" else "I-" + prev[2:]
            out.append(choice)
            prev = choice
        return out
    return lengths, [tags(k) for k in lengths], [tags(k) for k in lengths]


def _bio(path: Path, lengths, tags) -> Path:
    lines = []
    for k, (_, sent) in enumerate(zip(lengths, tags)):
        lines.extend(f"w{k}x{i}\t{t}" for i, t in enumerate(sent))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pair(tmp: Path, lengths, tags_a, tags_b):
    a = list(read_documents(_bio(tmp / "a.bio", lengths, tags_a)))
    b = list(read_documents(_bio(tmp / "b.bio", lengths, tags_b)))
    return compare_documents(match_documents(a, b))


@settings(max_examples=60)
@given(tagged_sentences())
def test_bio_f1_is_seqeval_and_kappa_is_sklearn(data):
    lengths, tags_a, tags_b = data
    with tempfile.TemporaryDirectory() as tmp:
        pair = _pair(Path(tmp), lengths, tags_a, tags_b)
    assert pair.matching.by_position
    if any(t != "O" for sent in tags_a for t in sent) and any(t != "O" for sent in tags_b for t in sent):
        kw = dict(mode="strict", scheme=IOB2, zero_division=0)
        assert pair.overall.precision == pytest.approx(precision_score(tags_a, tags_b, **kw))
        assert pair.overall.recall == pytest.approx(recall_score(tags_a, tags_b, **kw))
        assert pair.overall.f1 == pytest.approx(f1_score(tags_a, tags_b, **kw))
    flat_a, flat_b = sum(tags_a, []), sum(tags_b, [])
    if len(set(flat_a) | set(flat_b)) > 1:  # sklearn leaves 0/0 (nan) for one shared constant label
        assert pair.kappa == pytest.approx(cohen_kappa_score(flat_a, flat_b))
    assert pair.tokens == sum(lengths)


spans_on_text = st.lists(st.builds(lambda a, n, t: Span(a, min(a + n, len(TEXT)), t),
                                   st.integers(0, len(TEXT) - 2), st.integers(1, 20), st.sampled_from(TYPES)),
                         max_size=8)


@settings(max_examples=150)
@given(spans_on_text, spans_on_text, st.sampled_from(["exact", "overlap"]))
def test_symmetric_with_precision_and_recall_swapped(a, b, match):
    ab, ba = compare_spans(a, b, match), compare_spans(b, a, match)
    assert ab.overall.precision == pytest.approx(ba.overall.recall)
    assert ab.overall.recall == pytest.approx(ba.overall.precision)
    assert ab.overall.f1 == pytest.approx(ba.overall.f1)
    assert set(ab.per_type) == set(ba.per_type)
    swapped = {(d.kind, d.b, d.a) for d in ba.differences}
    flip = {ONLY_A: ONLY_B, ONLY_B: ONLY_A}
    assert {(flip.get(d.kind, d.kind), d.a, d.b) for d in ab.differences} == swapped
    doc_a, doc_b = Document("d", TEXT, spans=list(a)), Document("d", TEXT, spans=list(b))
    assert cohen_kappa(token_tags(doc_a), token_tags(doc_b)) == pytest.approx(
        cohen_kappa(token_tags(doc_b), token_tags(doc_a)))


@settings(max_examples=100)
@given(spans_on_text, st.sampled_from(["exact", "overlap"]))
def test_against_itself_scores_one(a, match):
    got = compare_spans(a, list(reversed(a)) + a[:2], match)  # order and duplicates do not matter
    assert (got.overall.precision, got.overall.recall, got.overall.f1) == (1.0, 1.0, 1.0)
    assert got.differences == []
    doc = Document("d", TEXT, spans=list(a))
    assert cohen_kappa(token_tags(doc), token_tags(doc)) == 1.0


# The command ---------------------------------------------------------------------------
PUBTATOR_A = ("1|t|Cocaine toxicity\n1|a|Seizures followed cocaine.\n1\t0\t7\tCocaine\tChemical\tD003042\n"
              "1\t8\t16\ttoxicity\tDisease\t-1\n1\t17\t25\tSeizures\tDisease\tD012640\n\n"
              "2|t|Lithium and renal failure\n2|a|None.\n2\t0\t7\tLithium\tChemical\tD008094\n"
              "2\t12\t25\trenal failure\tDisease\tD051437\n\n")
PUBTATOR_B = ("1|t|Cocaine toxicity\n1|a|Seizures followed cocaine.\n1\t0\t7\tCocaine\tChemical\tD003042\n"
              "1\t0\t16\tCocaine toxicity\tDisease\t-1\n1\t35\t42\tcocaine\tChemical\t-\n\n"
              "2|t|Lithium and renal failure\n2|a|None.\n2\t0\t7\tLithium\tDisease\tD008094\n"
              "2\t12\t25\trenal failure\tDisease\tD051437\n\n")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_agree_prints_per_type_overall_kappa_and_differences(tmp_path, capsys):
    a, b = _write(tmp_path, "a.pubtator", PUBTATOR_A), _write(tmp_path, "b.pubtator", PUBTATOR_B)
    out_json = tmp_path / "agree.json"
    assert main(["agree", a, b, "--json", str(out_json)]) == 0
    out = capsys.readouterr().out.splitlines()
    # A: 5 mentions; B: 5; in both: Cocaine, renal failure.
    assert "overall   P 0.4000  R 0.4000  F1 0.4000  (A 5, B 5)" in out
    assert any(line.startswith("Chemical  P 0.5000  R 0.5000  F1 0.5000  (A 2, B 2)") for line in out)
    assert any(line.startswith("Disease   P 0.3333  R 0.3333  F1 0.3333  (A 3, B 3)") for line in out)
    assert any(line.startswith("kappa 0.") for line in out)
    assert ("disagreements: only in A 1, only in B 1, same span, other label 1, "
            "overlapping, other boundaries 1") in out
    record = json.loads(out_json.read_text())
    assert record["pairs"][0]["overall"]["f1"] == pytest.approx(0.4)
    assert record["pairs"][0]["differences"] == {"only_a": 1, "only_b": 1, "label": 1, "boundary": 1}


def test_agree_a_file_with_itself_and_three_files(tmp_path, capsys):
    a, b = _write(tmp_path, "a.pubtator", PUBTATOR_A), _write(tmp_path, "b.pubtator", PUBTATOR_B)
    assert main(["agree", a, a, b]) == 0
    out = capsys.readouterr().out
    assert "overall   P 1.0000  R 1.0000  F1 1.0000" in out
    assert "kappa 1.0000" in out
    assert "Fleiss' kappa 0." in out and "3 annotators" in out


def test_agree_reports_documents_whose_text_differs(tmp_path, capsys):
    a = _write(tmp_path, "a.pubtator", PUBTATOR_A)
    b = _write(tmp_path, "b.pubtator", PUBTATOR_B.replace("2|a|None.", "2|a|Nothing."))
    assert main(["agree", a, b]) == 0
    out = capsys.readouterr().out
    assert "1 document(s) compared" in out
    assert "1 document(s) not compared, their text differs: 2" in out


@pytest.mark.parametrize("second, message", [
    ("b.bio", "must hold the same sentences"),
    ("c.pubtator", "no document in common"),
    ("missing.bio", "no such file"),
])
def test_agree_bad_or_mismatched_input_is_one_line(tmp_path, capsys, second, message):
    a = _write(tmp_path, "a.bio", "Cocaine\tB-Chemical\ntoxicity\tO\n\nSeizures\tB-Disease\n\n")
    _write(tmp_path, "b.bio", "Cocaine\tB-Chemical\ntoxicity\tO\n\n")
    _write(tmp_path, "c.pubtator", PUBTATOR_A)
    assert main(["agree", a, str(tmp_path / second)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


def test_bio_sentences_with_other_tokens_are_reported_not_compared(tmp_path, capsys):
    a = _write(tmp_path, "a.bio", "Cocaine\tB-Chemical\ntoxicity\tO\n\nSeizures\tB-Disease\n\n")
    b = _write(tmp_path, "b.bio", "Cocaine\tB-Chemical\ntoxicity\tO\n\nseizures\tO\n\n")
    assert main(["agree", a, b]) == 0
    out = capsys.readouterr().out
    assert "1 document(s) compared, by position" in out and "their text differs: a:4" in out
