"""Checks the readers and writers share, so that bad input is refused with a message
that says what is wrong instead of crashing a writer later or writing a file that
cannot be read back.

Readers: :func:`load_json` parses one JSON text with finite numbers only, bounded
nesting and no lone surrogates; :func:`check_metadata` checks the metadata keys the
format modules give meaning to (``bioc_infons``, ``conll_columns`` ...) against
their shapes. Both raise :class:`ValueError` whose text is the message; the caller
adds file and line.

Writers: :func:`refuse_chars` refuses a field holding characters the format cannot
hold (a tab in a PubTator label, a control character in XML), naming the document
and the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, TypeGuard

from fastbioner.base.errors import InputError

# Deeper JSON is refused: no document or header needs it, and Python's own
# recursion (json, copy, the writers) fails somewhere above a thousand levels.
MAX_DEPTH = 64


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:30]} is out of range (not finite)")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number (JSON numbers must be finite)")


def load_json(text: str) -> Any:
    """Parse JSON strictly: ValueError (its text the message) for bad JSON, numbers
    that are not finite (``1e400``, ``NaN``, ``Infinity``), integers too long to
    read, nesting deeper than :data:`MAX_DEPTH` and lone surrogates (``"\\ud800"``)."""
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # ours above, or an integer past Python's digit limit
        raise ValueError(str(exc).split("; ")[0]) from None
    # Text read from UTF-8 holds no surrogate: only a \\uD8xx escape can make one.
    check_tree(value, strings="\\ud" in text.lower())
    return value


def has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_string(text: str) -> None:
    if has_lone_surrogate(text):
        bad = next(c for c in text if 0xD800 <= ord(c) <= 0xDFFF)
        raise ValueError(f"a string holds a lone surrogate (\\u{ord(bad):04x}), which is not Unicode text")


def check_tree(value: Any, strings: bool = True) -> None:
    """ValueError when ``value`` (parsed JSON) nests deeper than :data:`MAX_DEPTH` or
    (``strings``) holds a string with a lone surrogate. Iterative: no recursion limit
    to hit; containers only are walked, so a large document costs little."""
    if isinstance(value, str):
        if strings:
            _check_string(value)
        return
    stack = [(value, 1)] if isinstance(value, (list, dict)) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        values: Iterable[Any]
        if isinstance(item, dict):
            if strings:
                for key in item:
                    _check_string(key)
            values = item.values()
        else:
            values = item
        for v in values:
            if isinstance(v, (list, dict)):
                stack.append((v, depth + 1))
            elif strings and isinstance(v, str):
                _check_string(v)


# -- types -----------------------------------------------------------------------------

def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def expect(ok: bool, where: str, wanted: str, value: Any) -> None:
    if not ok:
        shown = repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
        got = type_name(value) + (f" {shown[:40]}" if shown else "")
        raise ValueError(f"{where} must be {wanted}, got {got}")


# A tiny shape language for metadata: "str", "int", ("opt", s), ("list", s),
# ("dict", s) (string keys), ("pair", a, b), ("obj", {key: s}) (those keys required).
_SHAPES: dict[str, Any] = {
    "conll_docstart": ("opt", "docstart"),
    "conll_columns": ("list", ("list", ("list", "str"))),
    "pubtator_columns": ("dict", ("list", "str")),
    "bioc_infons_doc": ("dict", "str"),
    "bioc_infons": ("dict", ("dict", "str")),
    "bioc_discontinuous": ("list", ("obj", {"infons": ("dict", "str"),
                                            "locations": ("list", ("pair", "int", "int")),
                                            "text": "str"})),
    "bioc_relation_keys": ("list", ("list", "str")),
    "medline": ("list", ("pair", "str", "str")),
    "nlm_categories": ("list", ("opt", "str")),
}


def _conform(value: Any, shape: Any, where: str) -> None:
    if shape == "str":
        expect(isinstance(value, str), where, "a string", value)
    elif shape == "int":
        expect(is_int(value) and value >= 0, where, "a whole number, not negative", value)
    elif shape == "docstart":
        expect(isinstance(value, str) and value.startswith("-DOCSTART-") and "\n" not in value
               and "\r" not in value, where, "a '-DOCSTART-' line", value)
    elif shape[0] == "opt":
        if value is not None:
            _conform(value, shape[1], where)
    elif shape[0] == "list":
        expect(isinstance(value, list), where, "a list", value)
        for i, item in enumerate(value):
            _conform(item, shape[1], f"{where}[{i}]")
    elif shape[0] == "dict":
        expect(isinstance(value, dict), where, "an object", value)
        for key, item in value.items():
            _conform(item, shape[1], f"{where}[{key!r}]")
    elif shape[0] == "pair":
        expect(isinstance(value, list) and len(value) == 2, where, "a list of two items", value)
        _conform(value[0], shape[1], f"{where}[0]")
        _conform(value[1], shape[2], f"{where}[1]")
    elif shape[0] == "obj":
        expect(isinstance(value, dict), where, "an object", value)
        for key, item_shape in shape[1].items():
            if key not in value:
                raise ValueError(f"{where} lacks {key!r}")
            _conform(value[key], item_shape, f"{where}[{key!r}]")


def check_metadata(metadata: Any) -> None:
    """ValueError when ``metadata`` is not an object or a key a format module reads
    has the wrong shape (``conll_columns: 5``, ``bioc_infons: [1]``)."""
    expect(isinstance(metadata, dict), "metadata", "an object", metadata)
    for key, shape in _SHAPES.items():
        if key in metadata:
            _conform(metadata[key], shape, f"metadata[{key!r}]")


# -- writers ---------------------------------------------------------------------------

_CHAR_NAMES = {"\t": "a tab", "\n": "a line break", "\r": "a carriage return", "\x00": "a NUL character"}


def describe_char(char: str) -> str:
    return _CHAR_NAMES.get(char, f"the character U+{ord(char):04X}")


def refuse_chars(value: Any, field: str, doc_id: Any, path: str | Path, chars: str | re.Pattern,
                 fmt: str, empty: bool = True) -> None:
    """InputError naming the output, the document and the field when ``value`` holds
    one of ``chars`` (a string of characters or a pattern) or, with ``empty=False``,
    is empty."""
    text = str(value)
    if not empty and not text.strip():
        raise InputError(f"document {doc_id!s:.60}: {field} is empty, which {fmt} cannot hold", path)
    if isinstance(chars, str):
        bad = next((c for c in text if c in chars), None)
    else:
        m = chars.search(text)
        bad = m.group() if m else None
    if bad is not None:
        raise InputError(f"document {doc_id!s:.60}: {field} {text[:40]!r} holds {describe_char(bad)}, "
                         f"which {fmt} cannot hold", path)
