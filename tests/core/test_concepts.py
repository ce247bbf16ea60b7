"""The concept dictionary: built from annotated documents, proposing an id for a
mention text, completing a concept cell, and the file the app ships."""

import pytest

from fastbioner.curate.concepts import ConceptDictionary, concept_parts, same_concept, shipped_dictionary
from fastbioner.io.documents import Document, Source, Span
from fastbioner.base.errors import InputError


def _doc(text, *spans):
    return Document("1", text, spans=[Span(s, e, lab, src, concept_id=cid) for s, e, lab, src, cid in spans])


def _dictionary():
    text = "Cocaine and cocaine and COCAINE caused seizures; NO and no."
    d = ConceptDictionary()
    d.add_documents([_doc(text,
                          (0, 7, "Chemical", Source.GOLD, "D003042"),
                          (12, 19, "Chemical", Source.CURATOR, "D003042"),
                          (39, 47, "Disease", Source.GOLD, "D012640"),
                          (49, 51, "Chemical", Source.GOLD, "D009569"),
                          # a pending suggestion teaches nothing, whatever its id
                          (24, 31, "Chemical", Source.MODEL, "D999999"))])
    return d


def test_proposal_is_the_most_frequent_id_of_the_text_within_its_label():
    d = _dictionary()
    d.add("seizures", "Disease", "D004827")
    d.add("seizures", "Disease", "D012640")  # now 2 votes against 1
    assert d.propose("seizures", "Disease") == "D012640"
    assert d.propose("seizures", "Chemical") is None  # other label: no proposal
    assert d.propose("seizures") == "D012640"  # no label given: any label's votes


def test_case_folded_lookup_only_when_the_exact_text_is_unknown():
    d = _dictionary()
    assert d.propose("COCAINE", "Chemical") == "D003042"  # never seen as written: folded
    d.add("no", "Chemical", "D000000")  # "no" as written now has its own vote
    assert d.propose("NO", "Chemical") == "D009569"
    assert d.propose("no", "Chemical") == "D000000"
    assert d.propose("  cocaine\n", "Chemical") == "D003042"  # whitespace does not matter


def test_pending_suggestions_and_spans_without_an_id_add_nothing():
    d = _dictionary()
    assert d.concept("D999999") is None
    d.add("aspirin", "Chemical", "-1")
    d.add("aspirin", "Chemical", None)
    assert d.propose("aspirin") is None


def test_completion_by_name_or_id_prefix_first_then_inside():
    d = _dictionary()
    d.add("cocaine hydrochloride", "Chemical", "D003043")
    got = d.complete("coc")
    assert [c.id for c in got] == ["D003042", "D003043"]  # 2 mentions before 1
    assert got[0].name in ("Cocaine", "cocaine") and got[0].mentions == 2
    assert [c.id for c in d.complete("d0126")] == ["D012640"]
    assert [c.id for c in d.complete("hydrochl")] == ["D003043"]  # inside a name
    assert d.complete("coc", label="Disease") == []
    assert d.complete("  ") == []


def test_composite_ids_compare_as_sets():
    assert concept_parts("D001|D002") == {"D001", "D002"}
    assert same_concept("D002|D001", "D001|D002")
    assert not same_concept("D001", "D001|D002")
    assert not same_concept("-1", "-1")


def test_save_then_load_gives_the_same_answers_and_the_same_bytes(tmp_path):
    d = _dictionary()
    d.add("tab\tin text", "Chemical", "D1")  # quoted by the TSV writer
    path = tmp_path / "m.tsv"
    d.save(path)
    again = ConceptDictionary.load(path)
    assert again.propose("Cocaine", "Chemical") == "D003042"
    assert again.propose("tab\tin text") == "D1"
    again.save(tmp_path / "m2.tsv")
    assert (tmp_path / "m2.tsv").read_bytes() == path.read_bytes()


def test_a_bad_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "m.tsv"
    path.write_text("mention\tlabel\tconcept_id\tcount\ncocaine\tChemical\tD003042\tmany\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"m\.tsv:2"):
        ConceptDictionary.load(path)


def test_merged_dictionary_holds_both_sets_of_votes():
    a, b = ConceptDictionary(), ConceptDictionary()
    a.add("lithium", "Chemical", "D008094")
    b.add("lithium", "Chemical", "D000001", count=3)
    assert a.merged(b).propose("lithium") == "D000001"
    assert a.propose("lithium") == "D008094"  # the parts are unchanged


def test_the_shipped_dictionary_proposes_ids_for_common_mentions():
    d = shipped_dictionary()
    assert len(d) > 1000
    # BC5CDR train's most frequent chemical and NCBI train's disease names are in it.
    assert d.propose("cocaine", "Chemical") == "D003042"
    assert d.propose("breast cancer", "Disease") is not None


@pytest.mark.shared_data
def test_rebuilding_the_dictionary_from_the_training_sets_gives_the_shipped_file(shared_data, tmp_path):
    import subprocess
    import sys
    from importlib.resources import files
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "build_concept_dictionary.py"
    out = tmp_path / "mentions.tsv"
    run = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    shipped = files("fastbioner_assets") / "concepts" / "mentions.tsv"
    assert out.read_bytes() == shipped.read_bytes()


def test_an_accepted_suggestion_without_an_id_gets_the_proposed_one():
    from fastbioner.curate.concepts import propose_for_accepted

    text = "Cocaine and aspirin."
    d = ConceptDictionary()
    d.add("cocaine", "Chemical", "D003042")
    before = [Span(0, 7, "Chemical", Source.MODEL, 0.9), Span(12, 19, "Chemical", Source.MODEL, 0.8),
              Span(0, 7, "Disease", Source.GOLD)]
    after = [s.with_(source=Source.CURATOR) if s.source is Source.MODEL else s for s in before]
    got = propose_for_accepted(before, after, text, d)
    assert got[0].concept_id == "D003042"          # known text (case-folded lookup)
    assert got[1].concept_id is None               # unknown text: nothing proposed
    assert got[2] == before[2]                     # not an accepted suggestion
    typed = [after[0].with_(concept_id="D999")]    # an id already there is kept
    assert propose_for_accepted(before, typed, text, d) == typed
