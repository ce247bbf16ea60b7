"""Settings declared once (:class:`Setting`) and the form that holds their values
(:class:`Form`): one place says what a field is, its default and whether it is
remembered, and every form remembers, restores, snapshots and resets the same way."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Callable

Listener = Callable[[str, Any], None]
_REFUSED = object()  # a remembered value that cannot come back: the default stands


class Setting:
    """One field of a form, as Orange's ``Setting()``: its ``default``, whether it is
    ``remember``-ed from one opening to the next, and what a remembered value must be
    to come back: of the default's type (an int for an int, a number for a float, a
    list of strings for a list, a dict of names to numbers for a dict), one of
    ``choices`` where given, and passing ``check(form, value)``. For a list the check is
    on each item and failing items are dropped (a remembered file since deleted).

    Read on a form it is the field's value; assigned, it is an edit by the user
    (:meth:`Form.edit`), which the form's rules follow."""

    def __init__(self, default: Any, *, remember: bool = True, choices=None,
                 check: Callable[[Any, Any], bool] | None = None):
        self.default = default
        self.remember = remember
        self.choices = tuple(choices) if choices is not None else None
        self.check = check
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, form: "Form | None", owner: type | None = None) -> Any:
        if form is None:
            return self
        return form._values[self.name]

    def __set__(self, form: "Form", value: Any) -> None:
        form.edit(**{self.name: value})

    def restored(self, form: "Form", value: Any) -> Any:
        """``value`` as read back from the settings file, or ``_REFUSED`` (a hand-edited
        or older file gives the default, never a crash)."""
        default = self.default
        if isinstance(default, list):
            if not isinstance(value, list):
                return _REFUSED
            return [v for v in value if isinstance(v, str) and (self.check is None or self.check(form, v))]
        if isinstance(default, dict):
            if not (isinstance(value, dict) and all(isinstance(k, str) and _number(v) for k, v in value.items())):
                return _REFUSED
            value = {k: float(v) for k, v in value.items()}
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                return _REFUSED
        elif isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool):
                return _REFUSED
        elif isinstance(default, float):
            if not _number(value):
                return _REFUSED
            value = float(value)
        elif isinstance(default, str) and not isinstance(value, str):
            return _REFUSED
        if self.choices is not None and value not in self.choices:
            return _REFUSED
        if self.check is not None and not self.check(form, value):
            return _REFUSED
        return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Form:
    """The values of a form's declared :class:`Setting` fields. :meth:`put` sets values
    as they are (nothing follows: a recipe filling the form, a restore); :meth:`edit` is
    the user's change, after which :meth:`follow` applies the form's rules. Each change
    is told to the listeners (:meth:`watch`): a dialog's widgets, kept in step."""

    def __init__(self, **initial: Any):
        self._values: dict[str, Any] = {s.name: copy.deepcopy(s.default) for s in self.settings()}
        self._listeners: list[Listener] = []
        self.put(**initial)

    @classmethod
    def settings(cls) -> list[Setting]:
        """The declared fields, base classes' first, each in the order written."""
        found: dict[str, Setting] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Setting):
                    found[name] = value
        return list(found.values())

    def get(self, name: str) -> Any:
        return self._values[name]

    def watch(self, listener: Listener) -> None:
        """Call ``listener(name, value)`` after each change of a value."""
        self._listeners.append(listener)

    def put(self, **values: Any) -> None:
        """Set ``values`` as they are; nothing follows from them."""
        for name, value in values.items():
            if name not in self._values:
                raise AttributeError(f"{type(self).__name__} has no setting {name!r}")
            if self._values[name] == value:
                continue
            self._values[name] = value
            for listener in list(self._listeners):
                listener(name, value)

    def edit(self, **values: Any) -> None:
        """The user changed ``values``: set them, then let the form follow each."""
        self.put(**values)
        for name in values:
            self.follow(name)

    def follow(self, name: str) -> None:
        """What the form's rules change after the user changed ``name`` (none here)."""

    def settle(self) -> None:
        """Bring what follows from other values in line after a restore (nothing here)."""

    # Snapshots: Cancel goes back to the values the dialog opened with -----------------
    def values(self) -> dict[str, Any]:
        return copy.deepcopy(self._values)

    def reset(self, values: Mapping[str, Any]) -> None:
        """Every value back as in ``values`` (a :meth:`values` snapshot); nothing follows."""
        self.put(**copy.deepcopy(dict(values)))

    # Remembered settings: declared once, saved and restored the same way for every form --
    def remembered(self) -> dict[str, Any]:
        """The values to keep for the next opening (JSON-ready)."""
        return {s.name: copy.deepcopy(self._values[s.name]) for s in self.settings() if s.remember}

    def restore(self, values: Any) -> None:
        """Put back what :meth:`remembered` gave (read from a file: each value checked,
        anything else ignored), then :meth:`settle`."""
        if not isinstance(values, Mapping):
            return
        good = {}
        for setting in self.settings():
            if setting.remember and setting.name in values:
                value = setting.restored(self, values[setting.name])
                if value is not _REFUSED:
                    good[setting.name] = value
        self.put(**good)
        self.settle()
