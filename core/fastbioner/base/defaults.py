"""The product's chosen defaults, read from ``defaults.toml`` beside this module
(``fastbioner.models.shipped`` is another thing: the shipped models): a distillation's, by
kind of student, and the sections of the training loop, the encoding, ``fine-tune``,
the precision modes and tagging, which the settings dataclasses take their defaults from.

The table is data, not code: each default names the decision record (in
docs/research/decisions.md) whose figures chose it, and a new result changes the file, not the
library, the app's text or the research scripts, which all resolve through here.

``table()`` is the loaded file (read once); ``load(path)`` reads another one (tests, a
what-if). Nothing here imports torch, nor anything of the library but its errors: the
settings module reads it at import, and the CLI's help and the app's dialog cheaply.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fastbioner.base.errors import ConfigError

DEFAULTS_FILE = "defaults.toml"

# The sections of single defaults (``name = { value = ..., decision = "docs/..." }``).
SECTIONS = ("training", "encoding", "fine-tune", "precision", "tagging")


@dataclass(frozen=True)
class Entry:
    value: Any
    decision: str            # docs/research/decisions.md#... : why this value


@dataclass(frozen=True)
class Section:
    """One section of single defaults: ``section["name"]`` is a value,
    ``section.entries["name"].decision`` the record that chose it."""

    name: str
    entries: dict[str, Entry]

    def __getitem__(self, key: str) -> Any:
        try:
            return self.entries[key].value
        except KeyError:
            raise ConfigError(f"{DEFAULTS_FILE}: [{self.name}] has no {key!r}") from None


@dataclass(frozen=True)
class StudentDefaults:
    """What a student of one kind (and depth) trains with unless told."""

    method: str
    learning_rate: float
    epochs: int
    decision: str            # docs/research/decisions.md#... : why these values
    devel_f1: tuple[float, float] | None = None  # the method's measured mean and spread, where recorded


@dataclass(frozen=True)
class Defaults:
    teacher_layers: int                       # the depth of a student of the teacher's layers unless told
    teacher_epochs: int
    teacher_epochs_decision: str
    by_depth: dict[int, StudentDefaults]      # students of the teacher's own layers, by depth measured
    small: dict[str, StudentDefaults]         # bigru, bilstm, cnn
    encoder: StudentDefaults                  # any other encoder
    compact_after_distillation: bool
    compaction_decision: str
    sections: dict[str, Section] = field(default_factory=dict)  # training, encoding, fine-tune, ...

    def section(self, name: str) -> Section:
        """The section ``name`` of single defaults (one of :data:`SECTIONS`)."""
        try:
            return self.sections[name]
        except KeyError:
            raise ConfigError(f"{DEFAULTS_FILE}: no [{name}] section") from None

    def for_depth(self, layers: int | None) -> StudentDefaults:
        """A student of ``layers`` of the teacher's layers (None: ``teacher_layers``): the
        entry of that depth, else of the nearest depth listed (the deeper on a tie)."""
        depth = self.teacher_layers if layers is None else layers
        nearest = min(self.by_depth, key=lambda n: (abs(n - depth), -n))
        return self.by_depth[nearest]

    def for_student(self, source: str, layers: int | None = None) -> StudentDefaults:
        """The defaults of a student from ``source`` (``teacher``, a small kind's name, or
        any other encoder), of ``layers`` of the teacher's layers where it is the teacher's."""
        if source == "teacher":
            return self.for_depth(layers)
        return self.small.get(source, self.encoder)


def _fail(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what}")


def _student(path: Path, where: str, raw: dict, epochs: int | None = None) -> StudentDefaults:
    try:
        method, rate = raw["method"], raw["learning_rate"]
        epochs = raw.get("epochs", epochs)
        decision = raw["decision"]
    except KeyError as exc:
        raise _fail(path, f"[{where}] has no {exc.args[0]}") from None
    if not isinstance(method, str) or not isinstance(decision, str) or not decision.startswith("docs/"):
        raise _fail(path, f"[{where}]: method and decision (a docs/ page) are text")
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
        raise _fail(path, f"[{where}]: learning_rate must be a positive number")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise _fail(path, f"[{where}]: epochs must be a whole number of at least 1")
    f1 = raw.get("devel_f1")
    if f1 is not None and not (isinstance(f1, list) and len(f1) == 2):
        raise _fail(path, f"[{where}]: devel_f1 is [mean, spread]")
    return StudentDefaults(method, float(rate), epochs, decision, tuple(f1) if f1 is not None else None)


def _section(path: Path, name: str, raw: Any) -> Section:
    if not isinstance(raw, dict):
        raise _fail(path, f"[{name}] is a section")
    entries = {}
    for key, entry in raw.items():
        if not (isinstance(entry, dict) and set(entry) == {"value", "decision"}):
            raise _fail(path, f"[{name}] {key}: an entry is {{ value = ..., decision = \"docs/...\" }}")
        if not isinstance(entry["decision"], str) or not entry["decision"].startswith("docs/"):
            raise _fail(path, f"[{name}] {key}: decision (a docs/ page) is text")
        entries[key] = Entry(entry["value"], entry["decision"])
    return Section(name, entries)


def load(path: str | Path | None = None) -> Defaults:
    """The defaults table at ``path`` (None: the one shipped with the library)."""
    if path is None:
        source = resources.files("fastbioner.base").joinpath(DEFAULTS_FILE)
        path, text = Path(str(source)), source.read_text(encoding="utf-8")
    else:
        path = Path(path)
        text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, f"not valid TOML ({exc})") from None
    try:
        teacher, compaction = data["teacher"], data["compaction"]
        epochs = teacher["epochs"]
        by_depth = {int(n): _student(path, f"teacher.depth.{n}", raw, epochs)
                    for n, raw in teacher["depth"].items()}
        small = {name: _student(path, f"small.{name}", raw) for name, raw in data["small"].items()}
        encoder = _student(path, "encoder", data["encoder"])
        sections = {name: _section(path, name, data[name]) for name in SECTIONS}
        defaults = Defaults(int(teacher["default_layers"]), int(epochs), str(teacher["epochs_decision"]), by_depth,
                            small, encoder, bool(compaction["after_distillation"]), str(compaction["decision"]),
                            sections)
    except KeyError as exc:
        raise _fail(path, f"missing {exc.args[0]!r}") from None
    except ValueError as exc:  # a depth that is not a number
        raise _fail(path, f"teacher depths are layer counts ({exc})") from None
    if not by_depth:
        raise _fail(path, "[teacher.depth.N] needs at least one depth")
    return defaults


@functools.cache
def table() -> Defaults:
    """The library's defaults, read once."""
    return load()
