"""The model picker: the registry's models in a combo box, and the chosen model's card
(base, layers, parameters, size, devel F1 per type, measured speed)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QTextBrowser, QWidget



@dataclass
class ModelListing:
    entries: list[Any]
    default: str | None  # the shipped default model's name, when it is installed


def list_models(on_event=None, cancel=None) -> ModelListing:  # noqa: ANN001 - a job's arguments
    """The registry's usable entries (a folder that cannot be used is left out), after
    registering the shipped models on first use."""
    from fastbioner.defaults import shipped_models
    from fastbioner.errors import ModelError
    from fastbioner.registry import Registry

    try:
        default = shipped_models()[0].name
    except ModelError:  # no default model shipped (or a broken one): the picker still works
        default = None
    return ModelListing(list(Registry().list()), default)


def manifest_dict(entry: Any) -> dict[str, Any]:
    manifest = getattr(entry, "manifest", None)
    if hasattr(manifest, "to_dict"):
        return manifest.to_dict()
    return dict(manifest or {})


def _first(mapping: dict, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if mapping.get(key) not in (None, ""):
            return mapping[key]
    return default


def _size(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "?"


def _count(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    return f"{n / 1e6:.1f} M" if n >= 1e5 else f"{n:,}"


def _f1_rows(metrics: Any) -> list[tuple[str, float]]:
    """(type, F1) pairs from a manifest's devel metrics, whatever their nesting:
    ``{"overall": {"f1": ..}, "Chemical": {"f1": ..}}`` or ``{"per_type": {...}}``."""
    if not isinstance(metrics, dict):
        return []
    metrics = metrics.get("devel", metrics.get("dev", metrics))
    rows: list[tuple[str, float]] = []
    overall = metrics.get("overall", metrics)
    if isinstance(overall, dict) and isinstance(overall.get("f1"), (int, float)):
        rows.append(("overall", overall["f1"]))
    per_type = metrics.get("per_type", metrics.get("types", metrics))
    if isinstance(per_type, dict):
        for name, value in per_type.items():
            if name != "overall" and isinstance(value, dict) and isinstance(value.get("f1"), (int, float)):
                rows.append((name, value["f1"]))
    return rows


def card_html(name: str, manifest: dict[str, Any]) -> str:
    """A model's card as HTML (for the card panel and the picker's tooltip)."""
    m = manifest or {}
    base = str(_first(m, "base_model", "base", default="?"))
    base = base.rstrip("/").rsplit("/", 1)[-1] if base.startswith(("/", ".", "~")) else base  # a folder: its name
    layers = _first(m, "layers", "num_layers", default="?")
    width = _first(m, "width", "hidden_size", default="?")
    params = _first(m, "parameters", "params", "parameter_count")
    size = _first(m, "size_bytes", "size", "bytes")
    rows = [("Kind", _first(m, "kind", default="?")), ("Base", base), ("Layers", f"{layers} × {width}"),
            ("Parameters", _count(params)), ("Size on disk", _size(size))]
    parent = _first(m, "parent", "teacher", "parent_teacher")
    if parent:
        rows.append(("Teacher", parent))
    compression = m.get("compression") if isinstance(m.get("compression"), dict) else {}
    parent_bytes = compression.get("teacher_size_bytes")
    if parent and isinstance(size, (int, float)) and isinstance(parent_bytes, (int, float)) and parent_bytes:
        # The point of a student: stated, not left to arithmetic.
        rows.append(("Against its teacher", f"{100 * size / parent_bytes:.0f}% of its size "
                                            f"({_size(parent_bytes)})"))
    # The guided path records its compaction as "compacted", `fastbioner compact` as "vocabulary".
    c = next((x for x in (compression.get("compacted"), compression.get("vocabulary")) if isinstance(x, dict)), None)
    if c is not None:
        vocabulary = (f"whole vocabulary ({_count(c.get('vocab_after'))} pieces)" if c.get("vocabulary_kept") else
                      f"vocabulary {_count(c.get('vocab_after'))} of {_count(c.get('vocab_before'))} pieces")
        int8 = ", embedding table in int8" if c.get("embedding_storage") == "int8" else ""
        rows.append(("Compacted", f"{c.get('dtype', '?')}{int8}, {vocabulary}"))
    method = _first(m, "method")
    if method:
        rows.append(("Method", method))
    for label, f1 in _f1_rows(_first(m, "metrics", default={})):
        rows.append((f"devel F1 {label}", f"{100 * f1:.2f}" if f1 <= 1 else f"{f1:.2f}"))
    speed = _first(m, "speed", default=None)
    if isinstance(speed, dict):
        tps = _first(speed, "tokens_per_s", "tokens_per_second")  # the second: manifests of older versions
        ms = _first(speed, "ms_per_abstract", "milliseconds_per_abstract")
        where = _first(speed, "hardware", "device", default="")
        precision = _first(speed, "precision", default="")
        if tps is not None:
            rows.append(("Speed", f"{tps:,.0f} tokens/s" + (f", {ms:.1f} ms/abstract" if ms else "")
                         + (f" ({precision})" if precision else "") + (f" on {where}" if where else "")))
    elif isinstance(speed, list) and speed:
        rows.append(("Speed", html.escape(str(speed[-1]))))
    else:
        rows.append(("Speed", "not measured on this machine yet"))
    cells = "".join(f"<tr><td><b>{html.escape(str(k))}</b></td><td>{html.escape(str(v))}</td></tr>"
                    for k, v in rows)
    return f"<h3>{html.escape(name)}</h3><table cellspacing=2>{cells}</table>"


class ModelPicker(QComboBox):
    """Registry models by name; ``modelChosen`` carries the name (empty for none)."""

    modelChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMinimumContentsLength(24)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.manifests: dict[str, dict] = {}
        self.addItem("(looking for models…)", "")
        self.currentIndexChanged.connect(lambda _i: self.modelChosen.emit(self.current_name()))

    def set_entries(self, entries: list[Any], select: str | None = None) -> None:
        """Show registry entries (listed by a background job: the registry's import
        of transformers takes seconds)."""
        keep = select or self.current_name()
        self.blockSignals(True)
        self.clear()
        self.manifests = {}
        for entry in entries:
            manifest = manifest_dict(entry)
            self.manifests[entry.name] = manifest
            self.addItem(entry.name, entry.name)
            self.setItemData(self.count() - 1, card_html(entry.name, manifest), Qt.ItemDataRole.ToolTipRole)
        if not entries:
            self.addItem("(no models: train or import one)", "")
        index = max(0, self.findData(keep)) if keep else 0
        self.setCurrentIndex(index)
        self.blockSignals(False)
        self.modelChosen.emit(self.current_name())

    def current_name(self) -> str:
        return self.currentData() or ""


class ModelCard(QTextBrowser):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.show_model("", {})

    def show_model(self, name: str, manifest: dict) -> None:
        if not name:
            self.setHtml("<p>No model chosen. Distil or train one (Model menu), or import one with "
                         "<code>fastbioner models import FOLDER</code>.</p>")
        else:
            self.setHtml(card_html(name, manifest))
