"""A model's manifest (``fastbioner.json``): what the model is, how it was made and how
well it scores, read and written without torch. Below the checks and the registry, which
both read it.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastbioner import __version__
from fastbioner.base.config import ConfigError, Settings
from fastbioner.base.errors import ModelError
from fastbioner.io.fileio import atomic_write
from fastbioner.io.formats.checks import expect, is_int
from fastbioner.models.folder import read_json_object

MANIFEST = "fastbioner.json"
MANIFEST_FORMAT = 1
KINDS = ("teacher", "student", "encoder")  # encoder: a base without a head (DRET's output)


@dataclass
class Manifest(Settings):
    """What a model is and how it was made. ``speed`` (tagging speed figures, filled
    in by the inference benchmark) and ``compression`` (parameters and size against
    the teacher, filled in by distillation) start empty."""

    name: str = ""
    kind: str = "teacher"                 # teacher | student | encoder
    summary: str = ""                     # what it is for, in plain words (the first line of its card)
    base_model: str = ""                  # model id or folder it was fine-tuned from
    model_type: str = ""                  # bert, mpnet, ... (config.model_type)
    layers: int | None = None
    width: int | None = None
    parameters: int = 0
    size_bytes: int = 0
    labels: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)          # full resolved settings
    training_data: list[dict[str, Any]] = field(default_factory=list)  # path, sha256, role
    metrics: dict[str, Any] = field(default_factory=dict)         # devel EvaluationReport.to_dict()
    training: dict[str, Any] = field(default_factory=dict)        # steps, best step, seconds per epoch
    parent: str | None = None             # teacher of a distilled student
    method: str | None = None             # distillation method of a student
    speed: dict[str, Any] = field(default_factory=dict)
    compression: dict[str, Any] = field(default_factory=dict)
    created: str = ""                     # ISO 8601, UTC
    project_version: str = __version__
    manifest_format: int = MANIFEST_FORMAT


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def data_record(path: str | Path, role: str) -> dict[str, Any]:
    """A training-data entry for the manifest: file name, role and checksum (not
    the path: a model shipped elsewhere names no folder of the machine it was made on)."""
    p = Path(path)
    return {"file": p.name, "role": role, "sha256": file_sha256(p)}


def trained_on(manifest: Manifest, path: str | Path) -> bool:
    """Whether the model learnt from ``path``'s labels (a training file, by checksum):
    scores on it are not scores on unseen text (a final model built on train + devel).
    Only a regular file is hashed: a device (/dev/zero) never ends, and a pipe read here
    would be empty for the scoring after."""
    if not manifest.training_data:
        return False
    try:
        if not Path(path).is_file():
            return False
        digest = file_sha256(path)
    except OSError:
        return False
    return any(d.get("role") == "train" and d.get("sha256") == digest for d in manifest.training_data)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])


def read_manifest(folder: str | Path) -> Manifest:
    """The manifest of a model folder; ModelError when it is unreadable or was
    written by a newer version of the project."""
    path = Path(folder) / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise ModelError(f"{folder}: no {MANIFEST} (not a registry model; import it first)")
    data = read_json_object(path, "manifest")
    check_manifest_header(data, path)
    theirs = data.get("project_version", "0")
    if (_version_tuple(theirs) > _version_tuple(__version__)
            or data.get("manifest_format", 1) > MANIFEST_FORMAT):
        raise ModelError(f"{path}: made by fastbioner {theirs}, newer than this {__version__}; "
                         f"upgrade fastbioner to use this model")
    try:
        check_manifest_types(data)
        return Manifest.from_dict(data)
    except (ConfigError, TypeError, ValueError) as exc:
        raise ModelError(f"{path}: bad manifest ({exc})") from None


# A version is a few dotted numbers ("0.1.0", "1.2.3+local"); no more characters than this.
_MAX_VERSION_CHARS = 64


def check_manifest_header(data: dict[str, Any], path: Path) -> None:
    """ModelError unless the fields that say which code wrote the manifest (read before
    anything else) are of their types: ``manifest_format`` a positive whole number,
    ``project_version`` a short version string."""
    fmt = data.get("manifest_format", 1)
    if not (isinstance(fmt, int) and not isinstance(fmt, bool) and 1 <= fmt <= 1_000_000):
        raise ModelError(f"{path}: bad manifest ('manifest_format' must be a whole number from 1, "
                         f"got {json.dumps(fmt)[:40] if not isinstance(fmt, float) else fmt})")
    version = data.get("project_version", "0")
    if not (isinstance(version, str) and len(version) <= _MAX_VERSION_CHARS
            and re.fullmatch(r"[0-9A-Za-z.+_-]*", version)):
        shown = json.dumps(version)[:40] if not isinstance(version, float) else str(version)
        raise ModelError(f"{path}: bad manifest ('project_version' must be a version such as "
                         f"{__version__!r}, of at most {_MAX_VERSION_CHARS} characters, got {shown})")


def check_manifest_types(data: dict[str, Any]) -> None:
    """ValueError naming the first field whose value has the wrong type for
    :class:`Manifest` (``parameters: "many"``, ``labels: 5`` ...)."""
    hints = typing.get_type_hints(Manifest)
    for name, value in data.items():
        hint = hints.get(name)
        if hint is None:
            continue  # unknown keys are Settings.from_dict's to refuse
        args = typing.get_args(hint)
        optional = type(None) in args
        if optional and value is None:
            continue
        base = next((a for a in args if a is not type(None)), hint) if optional else hint
        origin = typing.get_origin(base) or base
        where = f"{name!r}"
        if origin is int:
            expect(is_int(value) and value >= 0, where, "a whole number, not negative", value)
        elif origin is str:
            expect(isinstance(value, str), where, "a string", value)
        elif origin is list:
            expect(isinstance(value, list), where, "a list", value)
            (item,) = typing.get_args(base) or (Any,)
            if item is str:
                for i, v in enumerate(value):
                    expect(isinstance(v, str), f"{name}[{i}]", "a string", v)
            elif typing.get_origin(item) is dict:
                for i, v in enumerate(value):
                    expect(isinstance(v, dict), f"{name}[{i}]", "an object", v)
        elif origin is dict:
            expect(isinstance(value, dict), where, "an object", value)
    if "kind" in data and data["kind"] not in KINDS:
        raise ValueError(f"'kind' must be one of {', '.join(KINDS)}, got {data['kind']!r:.40}")


def write_manifest(folder: str | Path, manifest: Manifest) -> None:
    with atomic_write(Path(folder) / MANIFEST) as fh:
        json.dump(manifest.to_dict(), fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def scores_on(manifest: dict[str, Any]) -> tuple[str, str]:
    """What a model's card scores were measured on, in words, and a key that is equal
    for two models scored on the same data (the picker's "accurate" compares only
    those). A fine-tuned model's scores are on the curator's held-back documents:
    ("on 10 of your documents (96 mentions)", ...), never called devel F1; a final
    build's are its twin's devel F1; any other's, devel F1."""
    def part(d: dict[str, Any], key: str) -> dict[str, Any]:
        value = d.get(key)
        return value if isinstance(value, dict) else {}

    m: dict[str, Any] = manifest if isinstance(manifest, dict) else {}
    comparison = part(part(m, "config"), "comparison")
    source = part(part(m, "metrics"), "source")
    if isinstance(comparison.get("where"), str):
        # the held-back documents are the project's own: no two updates' are known to be the same
        return f"on {comparison['where']}", f"reviews:{m.get('name', '')}"
    if m.get("method") == "fine-tune":
        dev_source = part(m, "training").get("dev_source")
        return f"on {dev_source or 'the reviewed documents'}", f"reviews:{m.get('name', '')}"
    twin = source.get("twin") if isinstance(source.get("twin"), str) else ""
    # Devel scores compare with each other as before (the shipped models' are all BC5CDR
    # devel, in PubTator or BIO); a held-back score never compares with them.
    return ("devel F1 (its twin's)" if twin else "devel F1"), "devel"
