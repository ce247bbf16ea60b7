"""The concept dictionary's index (``fastbioner.curate.concept_index``) answers as walking
every concept did (the reference below is that code), on random dictionaries; a
loaded dictionary still takes additions; a corrupt dictionary file is one InputError
naming the file and line. Speed and memory: benchmarks/bench_concepts.py."""

from __future__ import annotations

from collections import Counter, defaultdict
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbioner.base.errors import InputError
from fastbioner.curate import concept_index
from fastbioner.curate.concepts import Concept, ConceptDictionary, normalise

ROWS = st.lists(st.tuples(st.sampled_from(["Cocaine", "cocaine", "coca leaf", "Straße", "strasse", "LI",
                                           "lithium carbonate", "NO", "ﬁbrosis", "iso- cocaine"]),
                          st.sampled_from(["Chemical", "Disease"]),
                          st.sampled_from(["D1", "D12", "d2", "C0017", "D1|D2", "MESH:D3"]),
                          st.integers(1, 4)), max_size=25)
TYPED = st.sampled_from(["c", "co", "coc", "d1", "D", "li", "ss", "straß", "fi", "ine", "leaf", "1", "x", "mesh:",
                         "o l", "b"])


def reference_complete(rows, typed, label=None, limit=20):
    names: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for text, lab, cid, n in rows:
        names[(lab, cid)][text] += n
    key = normalise(typed)
    prefix, inner = [], []
    for (lab, cid), texts in names.items():
        if label is not None and lab != label:
            continue
        folded = [normalise(t) for t in texts]
        concept = Concept(cid, lab, min(texts, key=lambda t: (-texts[t], t)), sum(texts.values()))
        if cid.casefold().startswith(key) or any(n.startswith(key) for n in folded):
            prefix.append(concept)
        elif key in cid.casefold() or any(key in n for n in folded):
            inner.append(concept)
    order = lambda c: (-c.mentions, c.id, c.label)  # noqa: E731 - a sort key
    return (sorted(prefix, key=order) + sorted(inner, key=order))[:limit]


def _dictionary(rows):
    d = ConceptDictionary()
    for text, lab, cid, n in rows:
        d.add(text, lab, cid, n)
    return d


@settings(max_examples=300, deadline=None)
@given(rows=ROWS, typed=TYPED, label=st.sampled_from([None, "Chemical", "Disease"]), limit=st.sampled_from([1, 3, 20]))
def test_completion_is_what_walking_every_concept_gave(rows, typed, label, limit):
    assert _dictionary(rows).complete(typed, label, limit) == reference_complete(rows, typed, label, limit)


@settings(max_examples=100, deadline=None)
@given(rows=ROWS, text=st.sampled_from(["cocaine", "COCAINE", "strasse", "STRASSE", "no", "unknown"]))
def test_proposals_and_concepts_are_the_votes(rows, text):
    d = _dictionary(rows)
    votes = Counter()
    for t, _, cid, n in rows:
        if t == text:
            votes[cid] += n
    if not votes:
        for t, _, cid, n in rows:
            if normalise(t) == normalise(text):
                votes[cid] += n
    expected = min(votes, key=lambda c: (-votes[c], c)) if votes else None
    assert d.propose(text) == expected
    names: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for t, lab, cid, n in rows:
        names[(lab, cid)][t] += n
    for wanted in {r[2] for r in rows} | {"D404"}:
        best = None
        for (lab, cid), texts in names.items():  # the first added wins a tie, as before
            if cid == wanted and (best is None or sum(texts.values()) > best.mentions):
                best = Concept(cid, lab, min(texts, key=lambda t: (-texts[t], t)), sum(texts.values()))
        assert d.concept(wanted) == best


def _answers(d, order):
    """Every kind of lookup, asked in ``order`` (each builds the parts it needs first)."""
    asks = {"complete": lambda: [d.complete(t, lab) for t in ("c", "li", "d1", "ss") for lab in (None, "Chemical")],
            "propose": lambda: [d.propose(t, lab) for t in ("cocaine", "STRASSE", "no") for lab in (None, "Disease")],
            "concept": lambda: [d.concept(cid) for cid in ("D1", "d2", "D1|D2", "D404")]}
    got = {kind: asks[kind]() for kind in order}
    return [got[kind] for kind in sorted(got)]


@settings(max_examples=60, deadline=None)
@given(rows=ROWS)
def test_answers_are_the_same_whichever_lookup_is_built_first(rows):
    built_at_once = _dictionary(rows)
    built_at_once.build_index()
    expected = _answers(built_at_once, ["complete", "propose", "concept"])
    for order in (["propose", "concept", "complete"], ["concept", "complete", "propose"]):
        assert _answers(_dictionary(rows), order) == expected


@settings(max_examples=100, deadline=None)
@given(rows=ROWS, typed=TYPED, label=st.sampled_from([None, "Chemical", "Disease"]))
def test_completion_is_the_same_when_its_search_string_is_built_a_few_concepts_at_a_time(rows, typed, label):
    # The search strings are built in slices of concepts; slices of two cut between them everywhere.
    with patch.object(concept_index, "_CONCEPTS_AT_A_TIME", 2):
        assert _dictionary(rows).complete(typed, label) == reference_complete(rows, typed, label)


def test_sums_past_float_precision_rank_exactly():
    # 2**62 against 2**62 - 1: as floats the two are equal, and the tie would go to the id A2.
    rows = [("alpha", "Chemical", "D1", 2**61), ("alpha beta", "Chemical", "D1", 2**61),
            ("alphabet", "Chemical", "A2", 2**62 - 1)]
    got = _dictionary(rows).complete("alpha")
    assert [(c.id, c.mentions) for c in got] == [("D1", 2**62), ("A2", 2**62 - 1)]
    assert got == reference_complete(rows, "alpha")


def test_an_id_holding_a_tab_is_one_field():
    # A tab inside an id must not start a field: "ab" is inside "X\tAB", not its prefix.
    rows = [("zeta", "Chemical", "X\tAB", 5), ("abacavir", "Chemical", "D9", 1)]
    got = _dictionary(rows).complete("ab")
    assert [c.id for c in got] == ["D9", "X\tAB"] and got == reference_complete(rows, "ab")


def test_a_dictionary_loaded_with_or_without_its_lookups_answers_alike(tmp_path):
    rows = [("cocaine", "Chemical", "D1", 2), ("Cocaine", "Chemical", "D1", 1), ("Straße", "Disease", "d2", 3),
            ("lithium carbonate", "Chemical", "D2", 4), ("NO", "Chemical", "D12", 1)]
    _dictionary(rows).save(tmp_path / "m.tsv")
    indexed, lazy = (ConceptDictionary.load(tmp_path / "m.tsv", indexed=flag) for flag in (True, False))
    order = ["complete", "propose", "concept"]
    assert _answers(indexed, order) == _answers(lazy, order) == _answers(_dictionary(rows), order)


def test_a_loaded_dictionary_takes_additions_and_answers_with_them(tmp_path):
    d = _dictionary([("cocaine", "Chemical", "D1", 2), ("lithium", "Chemical", "D2", 1)])
    d.save(tmp_path / "m.tsv")
    loaded = ConceptDictionary.load(tmp_path / "m.tsv")
    assert [c.id for c in loaded.complete("li")] == ["D2"]
    loaded.add("lithium carbonate", "Chemical", "D2", 5)
    loaded.add("lidocaine", "Chemical", "D3")
    assert [(c.id, c.mentions) for c in loaded.complete("li")] == [("D2", 6), ("D3", 1)]
    assert len(loaded) == 3


@pytest.mark.parametrize("line", [
    "cocaine\tChemical\tD1\t" + "9" * 5000,               # a count int() would refuse to read
    '"cocaine\tChemical\tD1\t3\n' + "x" * 140_000,        # an unclosed quote past csv's field limit
    "cocaine\tChemical\tD1\t-3",
])
def test_a_corrupt_dictionary_is_one_input_error_naming_the_file_and_line(tmp_path, line):
    path = tmp_path / "m.tsv"
    path.write_text("mention\tlabel\tconcept_id\tcount\nlithium\tChemical\tD2\t1\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"m\.tsv:3: ") as caught:
        ConceptDictionary.load(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("where", ["/dev/zero", "folder"])
def test_a_dictionary_that_is_no_regular_file_is_refused_before_reading(tmp_path, where):
    # /dev/zero has size 0 and no end: the size limit alone would let it fill the memory.
    path = tmp_path if where == "folder" else where
    with pytest.raises(InputError, match="not a regular file"):
        ConceptDictionary.load(path)
