"""Command-line flags generated from the typed configs (as Hugging Face's
``HfArgumentParser`` does): each dataclass field declares its flag, help, choices
and kind with :func:`fastbioner.base.config.opt`, so every setting has a flag, the
defaults are the dataclasses' own (shared with the app's dialogs), and the parsed
flags turn back into the same dataclasses.

Nested settings (``training``, ``encoding`` ...) become flags of their own; their
``argparse`` destinations carry the path (``training__learning_rate``) so two
sections can never collide.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path
from typing import Any

from fastbioner.base.config import Settings


def _dest(path: str) -> str:
    return path.replace(".", "__")


def _base_type(hint: Any) -> Any:
    """``int | None`` -> int; ``list[str]`` -> list; otherwise the hint."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        return origin
    if args and origin is not None and origin not in (list, dict):
        return args[0]
    return hint


def term_weight(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        weight = float(value)
    except ValueError:
        weight = None
    if not sep or weight is None:
        raise argparse.ArgumentTypeError(f"expected TERM=WEIGHT (e.g. attention=0.01), got {text!r}")
    return name.strip(), weight


def config_fields(cls: type, prefix: str = "") -> list[tuple[str, dataclasses.Field, Any]]:
    """Every leaf setting of ``cls`` as ``(path, field, type hint)``, nested
    sections expanded, in declaration order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if isinstance(hint, type) and issubclass(hint, Settings):
            out += config_fields(hint, f"{prefix}{f.name}.")
        else:
            out.append((prefix + f.name, f, hint))
    return out


def _default(instance: Any, path: str) -> Any:
    for part in path.split("."):
        instance = getattr(instance, part)
    return instance


def add_config_flags(parser: argparse.ArgumentParser, cls: type, *, required: tuple[str, ...] = (),
                     overrides: dict[str, dict[str, Any]] | None = None) -> None:
    """One flag per setting of ``cls``. ``required``: paths that must be given;
    ``overrides``: per path, ``argparse`` options that replace the generated ones
    (a command that decides a default later passes ``{"default": None}``)."""
    defaults = cls()
    overrides = overrides or {}
    for path, f, hint in config_fields(cls):
        meta = f.metadata
        if "help" not in meta:
            raise TypeError(f"{cls.__name__}.{path} has no flag (declare it with fastbioner.base.config.opt)")
        flag = meta.get("flag") or "--" + path.rsplit(".", 1)[-1].replace("_", "-")
        kind = meta.get("kind")
        default = _default(defaults, path)
        options: dict[str, Any] = {"dest": _dest(path), "help": meta["help"]}
        base = _base_type(hint)
        if kind == "negate":
            options.update(action="store_false", default=default)
        elif base is bool:
            options.update(action="store_true", default=default)
        elif kind == "term-weights":
            options.update(action="append", type=term_weight, default=[])
        elif kind == "comma-list":
            options.update(default=",".join(default))
        elif base is list:
            options.update(nargs="+", default=list(default))
        else:
            options.update(type=base if base in (int, float, str) else str, default=default)
            if default not in (None, "", [], {}):
                options["help"] += " (default %(default)s)"
        if options.get("action") not in ("store_true", "store_false"):
            if meta.get("choices") is not None:
                options["choices"] = tuple(meta["choices"])
            else:
                options["metavar"] = meta.get("metavar") or flag.lstrip("-").upper().replace("-", "_")
        if path in required:
            options["required"] = True
            options.pop("default", None)
        options.update(overrides.get(path, {}))
        parser.add_argument(flag, **options)


def _resolved(value: str) -> str:
    path = Path(value).expanduser()
    try:
        return str(path.resolve())
    except (RuntimeError, OSError):  # a symlink loop, a name too long: the reader names the file
        return str(path.absolute())


def _model_ref(value: str) -> str:
    """A folder is made absolute; a model id or a registry name is kept as given."""
    return _resolved(value) if value and Path(value).expanduser().exists() else value


def config_from_flags(cls: type, args: argparse.Namespace) -> Any:
    """The dataclass ``cls`` filled from parsed flags (paths resolved, lists split)."""
    def build(klass: type, prefix: str) -> Any:
        hints = typing.get_type_hints(klass)
        kwargs = {}
        for f in dataclasses.fields(klass):
            hint = hints[f.name]
            path = prefix + f.name
            if isinstance(hint, type) and issubclass(hint, Settings):
                kwargs[f.name] = build(hint, path + ".")
                continue
            value = getattr(args, _dest(path))
            kind = f.metadata.get("kind")
            if kind == "paths":
                value = [_resolved(v) for v in value or []]
            elif kind == "path":
                value = _resolved(value) if value else None
            elif kind == "model":
                value = _model_ref(value)
            elif kind == "models":
                value = [_model_ref(v) for v in value or []]
            elif kind == "comma-list":
                value = [t.strip() for t in (value or "").split(",") if t.strip()]
            elif kind == "term-weights":
                value = dict(value or [])
            kwargs[f.name] = value
        return klass(**kwargs)

    return build(cls, "")
