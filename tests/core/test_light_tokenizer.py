"""The light engine's tokenizer (:mod:`fastbioner.models.light.tokenizer`: tokenizer.json read
by the ``tokenizers`` library, no transformers) against transformers' AutoTokenizer:
the same subword ids and word ids for odd words, the same special tokens, pad id and
length limit, the same WordEncoder windows; and the tokenizer folders it leaves to
transformers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastbioner.models.encoding import WordEncoder
from fastbioner.models.light import Unsupported
from fastbioner.models.light.tokenizer import load_wordpiece_tokenizer
from fastbioner.models.modeling import load_tokenizer
from tiny_models import _vocab

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "assets" / "default-model"
SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "samples" / "bc5cdr-devel-sample.pubtator"

# Words a normaliser changes or drops: control and zero-width characters, accents
# (composed and combining), other scripts, symbols, the special tokens' spellings,
# a word too long for WordPiece (over 100 characters: [UNK]) and long compounds.
ODD_WORDS = ["Cocaine", "\x07", "x\x07y", "\u200b", "a\u200bb", "\ufeff", "\u00ad", "\u00a0", "\u2028",
             "na\u00efve", "nai\u0308ve", "\u00e9", "e\u0301", "CAF\u00c9", "\u00c5ngstr\u00f6m", "\u00df",
             "\u0130stanbul", "\u03b1-synuclein", "\u03b2", "\U0001d6fc", "\u00b2", "\u00b5g", "3\u2032-UTR",
             "\uff21\uff22", "\ufb01brosis", "\u4e2d\u6587", "\U0001f600", "\u0000", "\t", "a b",
             "[CLS]", "[cls]", "[SEP]x", "[MASK]", "[PAD]", "[UNK]", "1,2-dimethyl", "(+)-", "--", "%",
             "N(G)-nitro-L-arginine", "x" * 101, "ab" * 60, "Hypertension" * 9, "\u00ab\u00bb",
             "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947", "\ud55c\uad6d"]


def sentences_of(words: list[str], size: int = 7) -> list[list[str]]:
    return [words[i:i + size] for i in range(0, len(words), size)]


def assert_same_encoding(light, theirs, sentences: list[list[str]]) -> None:
    """Our tokenizers.Encoding objects against what transformers' own call gives."""
    for special in (False, True):
        a = light.encode_words(sentences, add_special_tokens=special)
        b = theirs(sentences, is_split_into_words=True, add_special_tokens=special)
        assert [e.ids for e in a] == b["input_ids"]
        for i, words in enumerate(sentences):
            assert a[i].word_ids == b.word_ids(i), words


def assert_same_encoder(light, theirs, sentences: list[list[str]], **options) -> None:
    ours, ref = WordEncoder(light, ["O"], **options), WordEncoder(theirs, ["O"], **options)
    assert (ours.prefix, ours.suffix, ours.pad_id, ours.max_length, ours.budget) == \
        (ref.prefix, ref.suffix, ref.pad_id, ref.max_length, ref.budget)
    assert ours.encode(sentences) == ref.encode(sentences)
    keys = [i // 3 for i in range(len(sentences))]  # document context
    assert ours.encode(sentences, documents=keys) == ref.encode(sentences, documents=keys)


def save_tokenizer(folder: Path, **options) -> Path:
    """The tests' WordPiece vocabulary saved by transformers with ``options``."""
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(_vocab() + ["caf\u00e9", "na\u00efve", "\u00e9"]) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab=str(vocab), **options).save_pretrained(folder)
    return folder


TINY = {"uncased": dict(do_lower_case=True, model_max_length=64),
        "cased": dict(do_lower_case=False, model_max_length=128),
        "accents stripped": dict(do_lower_case=False, strip_accents=True, model_max_length=64),
        "accents kept": dict(do_lower_case=True, strip_accents=False, model_max_length=64),
        "no Chinese split, no limit": dict(do_lower_case=True, tokenize_chinese_chars=False)}


@pytest.fixture(scope="module", params=sorted(TINY))
def tiny(request, tmp_path_factory):
    return save_tokenizer(tmp_path_factory.mktemp("tok"), **TINY[request.param])


def test_tiny_tokenizers_give_the_same_ids_and_word_ids(tiny):
    light, theirs = load_wordpiece_tokenizer(tiny), load_tokenizer(tiny)
    assert (light.pad_id, light.max_length) == (theirs.pad_token_id, theirs.model_max_length)
    words = ODD_WORDS + "the cocaine induced Heart failure in RATS , ( aspirin )".split()
    assert_same_encoding(light, theirs, sentences_of(words) + [[w] for w in ODD_WORDS])


def test_tiny_tokenizers_give_the_same_windows(tiny):
    light, theirs = load_wordpiece_tokenizer(tiny), load_tokenizer(tiny)
    words = (ODD_WORDS + "nephrotoxicity hepatitis clonidine".split()) * 3
    sentences = sentences_of(words, 11) + [words]  # the last one needs several windows
    assert_same_encoder(light, theirs, sentences, max_length=24, overlap=6)


@pytest.mark.skipif(not DEFAULT_MODEL.is_dir(), reason="assets/default-model is absent")
def test_the_default_models_tokenizer_matches_on_real_abstracts():
    from fastbioner.io.formats import read_documents
    from fastbioner.io.text import document_sentences

    sentences = [s.words for doc in read_documents(SAMPLE) for s in document_sentences(doc)]
    words = [w for s in sentences for w in s]
    assert len(set(words)) > 500
    light, theirs = load_wordpiece_tokenizer(DEFAULT_MODEL), load_tokenizer(DEFAULT_MODEL)
    assert (light.pad_id, light.max_length) == (theirs.pad_token_id, theirs.model_max_length)
    odd = sentences_of(ODD_WORDS) + [[w] for w in ODD_WORDS]
    assert_same_encoding(light, theirs, sentences + odd)
    assert_same_encoder(light, theirs, sentences + odd)


def test_the_encoder_reads_a_bare_rust_tokenizer_as_transformers_fast_one(tiny):
    """WordEncoder takes the tokenizers library's Tokenizer itself (what a fast
    tokenizer runs): the same windows as through transformers, where the limit is the
    default one (a bare Tokenizer knows no limit) and the pad token is [PAD]."""
    from tokenizers import Tokenizer

    theirs = load_tokenizer(tiny)
    bare = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    words = (ODD_WORDS + "nephrotoxicity hepatitis clonidine".split()) * 3
    ours, ref = WordEncoder(bare, ["O"], max_length=24, overlap=6), WordEncoder(theirs, ["O"], max_length=24, overlap=6)
    assert (ours.prefix, ours.suffix, ours.pad_id, ours.budget) == (ref.prefix, ref.suffix, ref.pad_id, ref.budget)
    sentences = sentences_of(words, 11) + [words]
    assert ours.encode(sentences) == ref.encode(sentences)


def test_the_encoder_refuses_a_tokenizer_without_a_rust_backend():
    """Word ids come from the Rust tokenizer's Encodings; a tokenizer without one
    (a slow Python tokenizer) cannot map subwords back to words."""
    class PythonTokenizer:
        pad_token_id, model_max_length = 0, 512

    with pytest.raises(ValueError, match="fast"):
        WordEncoder(PythonTokenizer(), ["O"])


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


# Settings where transformers would not run tokenizer.json as it is: it rebuilds
# a BertTokenizer's pipeline from tokenizer_config.json and the vocabulary.
EDITS = {
    "lower-casing disagrees": ("tokenizer.json", lambda d: d["normalizer"].update(lowercase=False)),
    "accents disagree": ("tokenizer_config.json", lambda d: d.update(strip_accents=True)),
    "another pre-tokenizer": ("tokenizer.json", lambda d: d.update(pre_tokenizer={"type": "Whitespace"})),
    "another tokenizer class": ("tokenizer_config.json", lambda d: d.update(tokenizer_class="MPNetTokenizer")),
    "an extra added token": ("tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": 5, "content": "mg", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True,
         "special": False})),
    "no [SEP] after the sequence": ("tokenizer.json", lambda d: d["post_processor"]["single"].pop()),
    "a longer word limit": ("tokenizer.json", lambda d: d["model"].update(max_input_chars_per_word=200)),
    "special tokens split": ("tokenizer_config.json", lambda d: d.update(split_special_tokens=True)),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_tokenizers_transformers_would_rebuild_differently_are_left_to_it(tmp_path, edit):
    folder = save_tokenizer(tmp_path, **TINY["uncased"])
    name, change = EDITS[edit]
    _edit(folder / name, change)
    with pytest.raises(Unsupported):
        load_wordpiece_tokenizer(folder)


def test_a_folder_without_tokenizer_json_is_left_to_transformers(tmp_path):
    folder = save_tokenizer(tmp_path, **TINY["uncased"])
    (folder / "tokenizer.json").unlink()
    with pytest.raises(Unsupported):
        load_wordpiece_tokenizer(folder)
