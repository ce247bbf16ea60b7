"""The command that made a model, rebuilt from its manifest: its recorded configuration
turned back into ``fastbioner train-teacher|distill`` flags (the flags are derived from
the configs' metadata, ``config_flags``), and checked by parsing it again.

For whoever rebuilds or documents a model (the research area's build of the shipped
models writes it into BUILD.md)."""

from __future__ import annotations

import shlex

from fastbioner.base.config import TeacherConfig
from fastbioner.cli import distill, train
from fastbioner.cli.config_flags import config_fields
from fastbioner.cli.main import build_parser
from fastbioner.train.distill.config import DistillConfig

MISSING = object()


def _lookup(data: dict, path: str):
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return MISSING
        data = data[part]
    return data


def _flag(path: str, field, value) -> list[str]:
    """The command-line form of one setting (see fastbioner.cli.config_flags); [] for
    a value no flag can give (an empty list, a None)."""
    meta = field.metadata
    flag = meta.get("flag") or "--" + path.rsplit(".", 1)[-1].replace("_", "-")
    if value is None or value == [] or value == {}:
        return []
    if isinstance(value, bool):  # a switch: --no-x turns a True default off, --x a False one on
        return [flag] if (meta.get("kind") == "negate") != value else []
    if meta.get("kind") == "term-weights":
        return [x for k, w in value.items() for x in (flag, f"{k}={w}")]
    if meta.get("kind") == "comma-list":
        return [flag, ",".join(value)]
    if isinstance(value, list):
        return [flag, *map(str, value)]
    return [flag, str(value)]


def rebuild_command(name: str, manifest) -> tuple[str, list[str]]:
    """The ``fastbioner`` command that makes a registered model's configuration again
    (``manifest``: a ``ModelEntry.manifest``, a teacher's or a student's), checked
    through the real parser: every setting that differs from the dataclass default gets
    its flag, then every one the command line would still decide otherwise (the learning
    rate and layer count it picks from the student source). Returns the command (one
    shell line, registering ``name``) and the settings no flag reproduces."""
    command, cls, from_args = (("distill", DistillConfig, distill.config_from_args) if manifest.kind == "student"
                               else ("train-teacher", TeacherConfig, train.config_from_args))
    want = {p: v for p, f, _ in config_fields(cls) if (v := _lookup(manifest.config, p)) is not MISSING}
    fields = {p: f for p, f, _ in config_fields(cls) if p in want}
    defaults = cls().to_dict()

    def differing(argv: list[str]) -> list[str]:
        got = from_args(build_parser().parse_args(argv[1:])).to_dict()
        return [p for p in want if _lookup(got, p) != want[p]]

    argv = ["fastbioner", command, "--name", name]
    for path in want:
        if want[path] != _lookup(defaults, path):
            argv += _flag(path, fields[path], want[path])
    for path in differing(argv):
        flag = _flag(path, fields[path], want[path])
        if flag and flag[0] not in argv:
            argv += flag
    return shlex.join(argv), differing(argv)
