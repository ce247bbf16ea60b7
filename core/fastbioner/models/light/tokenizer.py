"""A BERT WordPiece tokenizer read from ``tokenizer.json`` by the ``tokenizers``
library, as the :class:`fastbioner.models.encoding.SubwordTokenizer` that
:class:`fastbioner.models.encoding.WordEncoder` reads ``tokenizers.Encoding`` objects from
(subword ids and word ids, as transformers' fast tokenizer gets them from the same
Rust tokenizer).

transformers does not run a BERT tokenizer.json as it is: it rebuilds the pipeline
from the vocabulary and tokenizer_config.json (lower-casing, accents, Chinese
characters, the [CLS] ... [SEP] template, the special tokens). So the file is taken
only where it already is that pipeline; then both give the same subwords and word
ids. A file that differs in any of these raises :class:`~fastbioner.models.light.Unsupported`
and transformers tokenizes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from fastbioner.models.encoding import SubwordTokenizer
from fastbioner.base.errors import ModelError
from fastbioner.models.light import Unsupported

TOKENIZER_CLASSES = (None, "BertTokenizer", "BertTokenizerFast")
# The named special tokens of transformers' BertTokenizer and their defaults.
SPECIAL_DEFAULTS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                    "mask_token": "[MASK]"}
# transformers' "no known limit" (VERY_LARGE_INTEGER), which WordEncoder reads as 512.
NO_LIMIT = int(1e30)


def _text(token: Any) -> str | None:
    """A special token as tokenizer_config.json writes it (a string, or an object
    with its ``content``)."""
    return token.get("content") if isinstance(token, dict) else token


def _added_token(token: dict[str, Any]) -> tuple:
    return (token.get("content"), token.get("special"), token.get("normalized"), token.get("lstrip"),
            token.get("rstrip"), token.get("single_word"))


def check_bert_pipeline(spec: dict[str, Any], settings: dict[str, Any]) -> None:
    """:class:`Unsupported` unless tokenizer.json (``spec``) is the pipeline transformers
    builds for a BertTokenizer with tokenizer_config.json's ``settings``."""
    if settings.get("tokenizer_class") not in TOKENIZER_CLASSES:
        raise Unsupported(f"tokenizer class {settings.get('tokenizer_class')!r}")
    if settings.get("split_special_tokens") or settings.get("add_bos_token") or settings.get("add_eos_token"):
        raise Unsupported("special-token options in tokenizer_config.json")
    names = {k: _text(settings.get(k)) or v for k, v in SPECIAL_DEFAULTS.items()}
    model = spec.get("model") or {}
    if (model.get("type"), model.get("unk_token"), model.get("continuing_subword_prefix"),
            model.get("max_input_chars_per_word")) != ("WordPiece", names["unk_token"], "##", 100):
        raise Unsupported("not a standard WordPiece model")
    normalizer = {"type": "BertNormalizer", "clean_text": True,
                  "handle_chinese_chars": settings.get("tokenize_chinese_chars", True),
                  "strip_accents": settings.get("strip_accents"), "lowercase": settings.get("do_lower_case", True)}
    if spec.get("normalizer") != normalizer or spec.get("pre_tokenizer") != {"type": "BertPreTokenizer"}:
        raise Unsupported("normalizer or pre-tokenizer differ from tokenizer_config.json's BERT settings")
    vocab = model.get("vocab") or {}
    cls, sep = names["cls_token"], names["sep_token"]
    template = [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}}]
    post = spec.get("post_processor") or {}
    specials = post.get("special_tokens") or {}
    if (post.get("type") != "TemplateProcessing" or post.get("single") != template
            or (specials.get(cls) or {}).get("ids") != [vocab.get(cls)]
            or (specials.get(sep) or {}).get("ids") != [vocab.get(sep)]):
        raise Unsupported("the special tokens around a sequence are not [CLS] ... [SEP]")
    # transformers adds the named special tokens as special, unnormalised, unstripped
    # tokens; the file must hold exactly those (and agree with any list in the settings).
    added = spec.get("added_tokens") or []
    plain = {(name, True, False, False, False, False) for name in names.values()}
    if {_added_token(t) for t in added} != plain or len(added) != len(plain):
        raise Unsupported("added tokens other than the named special tokens")
    listed = settings.get("added_tokens_decoder")
    if listed is not None and {_added_token(t) for t in listed.values()} != plain:
        raise Unsupported("tokenizer_config.json lists other added tokens")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise Unsupported(f"{path.name} unreadable ({exc})") from None
    except UnicodeDecodeError:  # a broken file, not another kind of tokenizer
        raise ModelError(f"{path}: cannot load the tokenizer (not UTF-8 text)") from None


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Unsupported(f"{path.name} is not JSON ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise Unsupported(f"{path.name} is not a JSON object")
    return data


def load_wordpiece_tokenizer(folder: str | Path) -> SubwordTokenizer:
    """The folder's tokenizer, or :class:`Unsupported` (no tokenizer.json, or one that is
    not the standard BERT pipeline for its settings)."""
    folder = Path(folder)
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise Unsupported("no tokenizer.json")
    settings_path = folder / "tokenizer_config.json"
    settings = _parse(_read_text(settings_path), settings_path) if settings_path.is_file() else {}
    text = _read_text(path)
    try:
        check_bert_pipeline(_parse(text, path), settings)
    except (AttributeError, TypeError):  # a field of another shape (a list for an object ...)
        raise Unsupported(f"{path.name}: not the standard BERT pipeline") from None
    try:
        backend = Tokenizer.from_str(text)
    except BaseException as exc:
        if not (isinstance(exc, Exception) or type(exc).__name__ == "PanicException"):
            raise
        reason = str(exc).splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: cannot load the tokenizer ({reason})") from None
    # transformers switches both off for a call that asks for neither, as WordEncoder's do.
    backend.no_truncation()
    backend.no_padding()
    limit = settings.get("model_max_length", NO_LIMIT)
    return SubwordTokenizer(backend, backend.token_to_id(_text(settings.get("pad_token")) or "[PAD]"),
                            int(limit) if _finite_number(limit) else NO_LIMIT)


def _finite_number(value: Any) -> bool:
    """A limit tokenizer_config.json gives as a number that is not 1e400 or NaN."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
