"""Tokenizer and sentence splitter: exact offsets and the corpora's conventions."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from fastbioner.io.documents import Document, Passage
from fastbioner.io.text import document_sentences, split_sentences, tokenize


def words(text, start=0, end=None):
    return [t.text for t in tokenize(text, start, end)]


def sentences(text):
    return [" ".join(s.words) for s in split_sentences(text)]


def test_every_punctuation_mark_is_its_own_token():
    assert words("5-HT3/p.o. 0.5mg (IL-2)'s") == [
        "5", "-", "HT3", "/", "p", ".", "o", ".", "0", ".", "5mg", "(", "IL", "-", "2", ")", "'", "s"]
    assert words("snake_case α-tocopherol") == ["snake", "_", "case", "α", "-", "tocopherol"]


def test_token_offsets_point_into_the_whole_text():
    text = "Ignore this. Lithium carbonate, 300 mg."
    start = text.index("Lithium")
    toks = tokenize(text, start)
    assert toks[0].start == start
    assert all(text[t.start:t.end] == t.text for t in toks)


@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), max_size=200))
def test_tokens_cover_every_non_space_character(text):
    toks = tokenize(text)
    assert "".join(text[t.start:t.end] for t in toks) == "".join(text.split())
    # A token's text is its slice of the text in NFC (issue 70: NFD accents split words).
    assert all(unicodedata.normalize("NFC", text[t.start:t.end]) == t.text for t in toks)


def test_decomposed_accents_stay_in_their_word_read_in_nfc():
    nfd = "Treated with cispla\u0301tin and li\u0301thium."
    toks = tokenize(nfd)
    assert [t.text for t in toks] == ["Treated", "with", "cisplátin", "and", "líthium", "."]
    assert [nfd[t.start:t.end] for t in toks][2] == "cispla\u0301tin"  # offsets on the original text
    nfc = unicodedata.normalize("NFC", nfd)
    assert [t.text for t in toks] == [t.text for t in tokenize(nfc)]


def test_no_split_at_abbreviations():
    text = ("Smith et al. reported it. Rats got 5 mg/kg i.v. Naloxone reversed it, "
            "e.g. in Fig. 2 vs. controls. Dr. Kniest saw it.")
    assert sentences(text) == [
        "Smith et al . reported it .",
        "Rats got 5 mg / kg i . v . Naloxone reversed it , e . g . in Fig . 2 vs . controls .",
        "Dr . Kniest saw it ."]


def test_splits_at_stops_before_capitals_digits_and_mixed_case_words():
    text = "Doses fell. 18 patients improved. It was 5 min. mRNA rose? Yes! Done."
    assert sentences(text) == ["Doses fell .", "18 patients improved .", "It was 5 min .",
                               "mRNA rose ?", "Yes !", "Done ."]


def test_no_split_inside_brackets_or_before_lowercase_words():
    text = "Rates were low (P = 0. 03). Given 20 mg. by mouth, it worked. Next one."
    assert sentences(text) == ["Rates were low ( P = 0 . 03 ) .",
                               "Given 20 mg . by mouth , it worked .", "Next one ."]


def test_a_section_label_always_opens_a_sentence():
    assert sentences("Assayed as by Blonquist et al. RESULTS: Levels rose.") == [
        "Assayed as by Blonquist et al .", "RESULTS : Levels rose ."]


def test_sentence_offsets_are_exact_and_trimmed():
    text = "  First one.   Second one.\n\nThird para"
    sents = split_sentences(text)
    assert [text[s.start:s.end] for s in sents] == ["First one.", "Second one.", "Third para"]
    assert all(text[t.start:t.end] == t.text for s in sents for t in s.tokens)


def test_an_unclosed_bracket_does_not_swallow_the_abstract():
    text = "A (typo here. " + "Filler words go on. " * 30 + "Last sentence."
    sents = split_sentences(text)
    assert sents[0].end - sents[0].start < 400  # brackets open longer than that are forgotten
    assert " ".join(sents[-1].words) == "Last sentence ."


def test_document_sentences_never_cross_passages():
    doc = Document.from_parts("1", "Title without stop", [("METHODS", "Body one. Body two.")])
    sents = document_sentences(doc)
    assert [s.words[0] for s in sents] == ["Title", "Body", "Body"]
    assert sents[0].end <= doc.passages[0].end < sents[1].start


def test_sentence_passages_keep_their_own_tokens():
    text = "5-HT3 is here .\nnext sentence"
    doc = Document("d", text, [Passage(0, 15, "sentence"), Passage(16, len(text), "sentence")])
    sents = document_sentences(doc)
    assert [s.words for s in sents] == [["5-HT3", "is", "here", "."], ["next", "sentence"]]
