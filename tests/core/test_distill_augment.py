"""Mention replacement (``--mention-replacement``): the copies it adds to a student's
training text keep their gold tags right, swap names only within a type, name one
stand-in for a name throughout its document, and are the same for the same seed."""

import pytest

from fastbioner.train.distill.augment import COPY_MARK, mention_pool, replace_mentions
from fastbioner.train.distill.config import DistillConfig
from fastbioner.base.config import ConfigError
from fastbioner.io.labels import TaggedSentence, check_tags, iob2_chunks


def _sentence(pairs, doc=None):
    return TaggedSentence(tuple(w for w, _ in pairs), tuple(t for _, t in pairs), doc_id=doc)


ABSTRACT = [  # one document naming cocaine twice
    _sentence([("cocaine", "B-Chemical"), ("induced", "O"), ("cardiac", "B-Disease"), ("arrest", "I-Disease")],
              "d1"),
    _sentence([("Rats", "O"), ("given", "O"), ("cocaine", "B-Chemical"), ("died", "O")], "d1"),
]
OTHERS = [
    _sentence([("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("and", "O"), ("renal", "B-Disease"),
               ("failure", "I-Disease")], "d2"),
    _sentence([("naloxone", "B-Chemical"), ("reverses", "O"), ("hypertension", "B-Disease")], "d3"),
    _sentence([("No", "O"), ("entities", "O"), ("here", "O")], "d4"),
]
CORPUS = ABSTRACT + OTHERS


def _mentions(s):
    return [(typ, s.words[a:b]) for typ, a, b in iob2_chunks(s.tags)]


def test_every_name_is_replaced_by_another_of_its_type_and_the_tags_stay_right():
    pool = mention_pool(CORPUS)
    out = replace_mentions(CORPUS, copies=1, rate=1.0, seed=1)
    # d4 names nothing, so its copy would only repeat it: left out
    assert {s.doc_id for s in out} == {f"d{i}{COPY_MARK}1" for i in (1, 2, 3)}
    for original, copy in zip(CORPUS, out):
        assert check_tags(copy.tags) is None, copy  # valid IOB2
        before, after = _mentions(original), _mentions(copy)
        assert [t for t, _ in before] == [t for t, _ in after]
        for (typ, old), (_, new) in zip(before, after):
            assert new in pool[typ] and new != old
        # the words outside the mentions are the original's, in order
        outside = [w for w, t in zip(copy.words, copy.tags) if t == "O"]
        assert outside == [w for w, t in zip(original.words, original.tags) if t == "O"]


def test_a_name_gets_one_stand_in_throughout_its_document():
    for seed in range(20):
        first, second = replace_mentions(CORPUS, copies=1, rate=1.0, seed=seed)[:2]
        assert _mentions(first)[0][1] == _mentions(second)[0][1], seed  # both "cocaine"s


def test_copies_are_the_same_for_a_seed_and_differ_between_copies_and_seeds():
    a = replace_mentions(CORPUS, copies=3, rate=0.5, seed=7)
    assert a == replace_mentions(CORPUS, copies=3, rate=0.5, seed=7)
    assert a != replace_mentions(CORPUS, copies=3, rate=0.5, seed=8)
    per_copy = {}
    for s in a:
        per_copy.setdefault(s.doc_id.rsplit("-", 1)[1], []).append(s.words)
    assert len(per_copy) >= 2 and len({tuple(v) for v in per_copy.values()}) >= 2


def test_a_low_rate_leaves_most_names_and_no_copies_add_nothing():
    kept = sum(old == new for o, c in zip(CORPUS, replace_mentions(CORPUS, copies=20, rate=0.1, seed=3))
               for (_, old), (_, new) in zip(_mentions(o), _mentions(c)))
    assert kept > 0
    assert replace_mentions(CORPUS, copies=0, rate=0.5, seed=3) == []


def test_sentences_without_a_document_are_each_their_own():
    loose = [TaggedSentence(s.words, s.tags) for s in CORPUS]
    outs = [replace_mentions(loose, copies=1, rate=1.0, seed=seed) for seed in range(20)]
    assert all(len(out) == 4 and all(s.doc_id is None for s in out) for out in outs)
    # the two sentences naming cocaine no longer share a stand-in
    assert any(_mentions(out[0])[0][1] != _mentions(out[1])[0][1] for out in outs)


@pytest.mark.parametrize("field,value", [("mention_copies", -1), ("mention_rate", 0.0), ("mention_rate", 1.5)])
def test_impossible_settings_are_refused(field, value):
    cfg = DistillConfig(teacher="t", train_files=["train.tsv"], **{field: value})
    with pytest.raises(ConfigError, match=field):
        cfg.validate()
