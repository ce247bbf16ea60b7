"""A WordPiece vocabulary trained on the curator's own unlabelled text (DRET's source
when no biomedical model can be downloaded), and how finely a tokenizer cuts entity
mentions: the pieces per mention, before and after a vocabulary is merged in.

Chemical names are where a general vocabulary fragments most (``oxacalcitriol`` is six
pieces in MiniLM's); a vocabulary learnt from PubMed abstracts holds many of their
stems whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from fastbioner.base.errors import InputError
from fastbioner.io.fileio import write_text
from fastbioner.io.formats import expand_paths, guess_format, read_documents, read_tagged_files
from fastbioner.io.labels import split_tag

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _texts(files: Sequence[str | Path]) -> Iterator[str]:
    """The running text of every document (PubTator, BioC, PubMed XML, JSONL, plain
    text; a folder's files of those formats); a BIO file's sentences as lines (its
    labels are not read)."""
    for path in expand_paths(files):
        if guess_format(path) == "conll":
            for s in read_tagged_files([path]):
                yield " ".join(s.words)
            continue
        for doc in read_documents(path):
            if doc.text.strip():
                yield doc.text


@dataclass
class VocabularyInfo:
    folder: Path
    size: int
    documents: int


def train_vocabulary(files: Sequence[str | Path], size: int, out: str | Path, *, lowercase: bool = True,
                     min_frequency: int = 2) -> VocabularyInfo:
    """Train a WordPiece vocabulary of ``size`` tokens (BERT's normaliser, pre-tokeniser
    and specials; lower-cased unless ``lowercase`` is False: match the target's casing)
    on the text of ``files``; writes ``vocab.txt`` and ``tokenizer.json`` into ``out``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if size < len(SPECIALS) + 100:
        raise InputError(f"a vocabulary of {size} tokens is too small to be of use", str(out))
    texts = list(_texts(files))
    if not texts:
        raise InputError("no text in the given files", str(files[0]) if files else "")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=None if lowercase else False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=size, min_frequency=min_frequency, special_tokens=list(SPECIALS),
                                        show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vocab = tok.get_vocab()
    ordered = sorted(vocab, key=vocab.__getitem__)
    write_text(out / "vocab.txt", "\n".join(ordered) + "\n")
    write_text(out / "tokenizer.json", tok.to_str())
    write_text(out / "vocabulary.json", json.dumps({"size": len(ordered), "documents": len(texts),
                                                      "files": [Path(f).name for f in files],
                                                      "lowercase": lowercase}, indent=2) + "\n")
    return VocabularyInfo(out, len(ordered), len(texts))


def mentions(sentences: Iterable) -> Iterator[tuple[str, list[str]]]:
    """``(type, words)`` of every entity mention of IOB2-tagged sentences."""
    for s in sentences:
        current: tuple[str, list[str]] | None = None
        for word, tag in zip(s.words, s.tags):
            prefix, kind = split_tag(tag)
            if prefix == "B" or (prefix == "I" and (current is None or current[0] != kind)):
                if current:
                    yield current
                current = (kind, [word])
            elif prefix == "I" and current is not None:
                current[1].append(word)
            else:
                if current:
                    yield current
                current = None
        if current:
            yield current


def pieces_per_mention(tokenizer, files: Sequence[str | Path]) -> dict[str, Any]:
    """Mean subword pieces per entity mention (and per mention word), by entity type and
    over all mentions, as ``tokenizer`` cuts the mentions of the annotated ``files``."""
    by_type: dict[str, list[tuple[int, int]]] = {}
    for kind, words in mentions(read_tagged_files(files)):
        pieces = sum(len(tokenizer.tokenize(w)) for w in words)
        by_type.setdefault(kind, []).append((pieces, len(words)))
    everything = [x for v in by_type.values() for x in v]

    def summary(rows: list[tuple[int, int]]) -> dict[str, float]:
        return {"mentions": len(rows), "pieces_per_mention": round(sum(p for p, _ in rows) / max(len(rows), 1), 3),
                "pieces_per_word": round(sum(p for p, _ in rows) / max(sum(w for _, w in rows), 1), 3)}
    return {"all": summary(everything), **{k: summary(v) for k, v in sorted(by_type.items())}}
