"""Tokens and sentences with exact character offsets, the way the standard
biomedical BIO corpora cut them (BC5CDR, NCBI disease as distributed in
MTL-Bioinformatics-2016): a token is a run of letters and digits, or one single
other character, so every punctuation mark (hyphen, slash, decimal point ...) is a
token of its own. A sentence ends at ``.``, ``?`` or ``!`` followed by white space,
except inside brackets, after an abbreviation ("et al.", "i.v.", "e.g.", "vs.",
"Dr.") and before a plain lower-case word ("20 mg. by mouth"); a structured-abstract
label ("RESULTS:") always opens one. Blank lines always separate sentences.

Measured against the distributed BIO files (tests/core/test_shared_corpora.py): the
BC5CDR development abstracts give 99.52% of ``devel.tsv``'s sentences exactly. The
remaining differences are mostly where those files cut after "St." or "U.S." or
keep "Group A. Response" together; we follow the abbreviation rule instead.

Tokens and sentence candidates are found by regular expressions over the whole
string (no per-character Python loop): the inference engine runs this over tens of
thousands of abstracts.
"""

from __future__ import annotations

import re
import unicodedata

from fastbioner.io.documents import Document, Passage, Sentence, Token

# Combining marks: an accent written as a character of its own after its letter (NFD
# text, "cispla\u0301tin") belongs to the word, as the precomposed letter of NFC text
# ("cisplátin") does. Python's \w holds no mark, so without this NFD text split into
# "cispla", the accent and "tin", and the model tagged two mentions.
MARKS = ("\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"
         "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
         "\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\u3099\u309a\ufe20-\ufe2f")
# One character of a word: a letter or digit (any script), or a combining mark.
WORD_CHAR = re.compile(f"[^\\W_]|[{MARKS}]")
# Letters and digits (any script), with the marks on them, stay together; anything else
# that is not white space is a one-character token. ``_`` is in \w but the corpora
# split it off.
TOKEN_RE = re.compile(f"[^\\W_]+(?:[{MARKS}]+[^\\W_]*)*|\\S")

# Words after which a period does not end a sentence (compared lower-case). Units
# such as "mg" are deliberately absent: the corpora end sentences at "5 mg. The".
ABBREVIATIONS = frozenset("""
al vs cf ca approx fig figs eq eqs ref refs resp dr drs prof mr mrs ms st no nos vol
viz sp spp
""".split())

# Sentence-final punctuation, optional closing quotes/brackets, then white space:
# candidates that _is_boundary accepts or rejects.
_STOP_RE = re.compile(r"[.?!][)\]]*(\s+)(?=\S)")
# The word that ends right before a period: letters/digits with inner periods
# (``i.v``, ``e.g``, ``al``).
_WORD_BEFORE_RE = re.compile(r"(?:[^\W_]+\.\s?)*[^\W_]+$")
_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n\s*")
_WORD_RE = re.compile(r"\S+")
_HEADING_RE = re.compile(r"[A-Z]{3,}(?:[ /][A-Z]{2,})*:")
_MIXED_RE = re.compile(r"[A-Z0-9]")
_DOTTED_RE = re.compile(r"[a-z]\.[a-z]\.")
_OPEN = "([{"
_BRACKET_RE = re.compile(r"[()\[\]{}]")
_MAX_BRACKET = 300


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of ``text[start:end]`` with offsets into the whole ``text``. A token's
    text, what the model reads, is in NFC (the offsets stay on the original text): the
    same word reads the same whether its accents came precomposed or not."""
    end = len(text) if end is None else end
    return [Token(m.start(), m.end(), _nfc(m.group())) for m in TOKEN_RE.finditer(text, start, end)]


def _nfc(word: str) -> str:
    return word if word.isascii() else unicodedata.normalize("NFC", word)


def _is_boundary(text: str, stop: int, nxt: int, depth: int) -> bool:
    """Does the stop character at ``stop`` end a sentence whose next word starts at
    ``nxt``? ``depth``: brackets open at ``stop``. The rules follow how the BC5CDR
    and NCBI disease BIO files cut sentences (measured in tests/core/test_shared_corpora.py)."""
    if depth > 0:  # "(P = 0. 03)", "(S. H. Friend, R. Bernards)": never inside brackets
        return False
    if text[stop] != "." or _HEADING_RE.match(text, nxt):
        # A structured-abstract label ("RESULTS:") opens a sentence even after an
        # abbreviation: "... assay of Blonquist et al. RESULTS: In most ...".
        return True
    m = _WORD_BEFORE_RE.search(text, max(0, stop - 40), stop)
    if m is not None:
        parts = [p.strip() for p in m.group().split(".")]
        if parts[-1].lower() in ABBREVIATIONS:  # et al., vs., Dr.
            return False
        letters = 0
        for part in reversed(parts):
            if len(part) != 1 or not part.isalpha():
                break
            letters += 1
        if letters > 1:
            return False  # i.v., e.g., s. c., J. M. (single letters joined by periods)
    word = _WORD_RE.match(text, nxt)
    assert word is not None  # the caller's nxt is where the next word starts
    next_word = word.group()
    if next_word[0].islower():
        # "5 mg. by the route" goes on; "... infusion. rTMS at 1 Hz" and
        # "mg. kg(-1)" start a new one, and so does a dotted abbreviation ("kg. i.p.").
        return bool(_MIXED_RE.search(next_word) or _DOTTED_RE.match(next_word))
    return True


def _open_brackets(text: str, start: int, end: int, stack: list[int]) -> list[int]:
    """Update ``stack`` (positions of brackets still open) over ``text[start:end]``.
    A stray closing bracket is ignored; a bracket left open for more than
    ``_MAX_BRACKET`` characters is dropped, so one typo does not glue a whole abstract
    into one sentence."""
    for m in _BRACKET_RE.finditer(text, start, end):
        if m.group() in _OPEN:
            stack.append(m.start())
        elif stack:
            stack.pop()
    while stack and end - stack[0] > _MAX_BRACKET:
        stack.pop(0)
    return stack


def sentence_bounds(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in ``text[start:end]``, trimmed of white space."""
    end = len(text) if end is None else end
    bounds: list[tuple[int, int]] = []
    cut = start
    # Blank lines always separate sentences; stops split inside each paragraph.
    pieces = []
    for m in _PARAGRAPH_RE.finditer(text, start, end):
        pieces.append((cut, m.start()))
        cut = m.end()
    pieces.append((cut, end))
    for p_start, p_end in pieces:
        cut = scanned = p_start
        stack: list[int] = []
        for m in _STOP_RE.finditer(text, p_start, p_end):
            if m.end() >= p_end:
                break
            _open_brackets(text, scanned, m.start(1), stack)
            scanned = m.start(1)
            if _is_boundary(text, m.start(), m.end(), len(stack)):
                bounds.append((cut, m.start(1)))
                cut = m.end()
                stack.clear()
        bounds.append((cut, p_end))
    out = []
    for s, e in bounds:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[Sentence]:
    """Sentences of ``text[start:end]``, each with its tokens, offsets into ``text``."""
    return [Sentence(s, e, tuple(tokenize(text, s, e))) for s, e in sentence_bounds(text, start, end)]


def sentences_in_passage(text: str, passage: Passage) -> list[Sentence]:
    """A passage's sentences. A ``sentence`` passage (text read from a pre-tokenized
    corpus, tokens joined by single spaces) is one sentence whose tokens are its
    space-separated words, so a BIO file's tokenization survives exactly."""
    if passage.kind == "sentence":
        tokens = tuple(Token(m.start(), m.end(), m.group())
                       for m in _WORD_RE.finditer(text, passage.start, passage.end))
        return [Sentence(passage.start, passage.end, tokens)] if tokens else []
    return split_sentences(text, passage.start, passage.end)


def document_sentences(doc: Document) -> list[Sentence]:
    """All sentences of a document, passage by passage: a sentence never spans a
    passage boundary (title and abstract are tagged separately)."""
    out: list[Sentence] = []
    for passage in doc.passages:
        out.extend(sentences_in_passage(doc.text, passage))
    return out
