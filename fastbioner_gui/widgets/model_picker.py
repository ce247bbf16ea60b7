"""The model picker: the registry's models in a combo box, and the chosen model's card
(base, layers, parameters, size, devel F1 per type, measured speed)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QSizePolicy, QStyle, QStyleOptionComboBox, QStylePainter, QTextBrowser,
                               QWidget)

from fastbioner.base.config import reading_description
from fastbioner.models.manifest import scores_on


# The picker's narrowest, in characters: a name and the start of its figures.
MIN_CHARS = 26


@dataclass
class ModelListing:
    entries: list[Any]
    default: str | None  # the shipped default model's name, when it is installed


@dataclass
class FoundModel:
    """A model known by its card before the registry is scanned (the shipped default,
    read from its folder: no registration, no torch import)."""
    name: str
    manifest: dict[str, Any]


def shipped_default() -> FoundModel | None:
    """The shipped default model as its folder describes it (None: none shipped).
    Quick: the registration that copies it and imports torch comes after."""
    from fastbioner.models.shipped import shipped_model_folder
    from fastbioner.base.errors import ModelError
    from fastbioner.models.manifest import MANIFEST, read_manifest

    folder = shipped_model_folder()
    if not (folder / "config.json").is_file():
        return None
    try:
        manifest = read_manifest(folder).to_dict() if (folder / MANIFEST).is_file() else {}
    except ModelError:
        return None
    return FoundModel(manifest.get("name") or "default", manifest)


class ListingRelay(QObject):
    """Lives in the GUI thread; the listing job emits on it when the default model is
    found, before the slower scan of the registry ends."""

    found = Signal(object)  # FoundModel


def list_models(on_event=None, cancel=None, on_default=None) -> ModelListing:
    """The registry's usable entries (a folder that cannot be used is left out), after
    registering the shipped models on first use. ``on_default`` gets the shipped
    default (a :class:`FoundModel`) first, as soon as its folder is read: the app can
    tag with it while the registration (seconds on a first start) goes on."""
    from fastbioner.models.shipped import shipped_models
    from fastbioner.base.errors import ModelError
    from fastbioner.models.registry import Registry

    found = shipped_default()
    if found is not None and on_default is not None:
        on_default(found)
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
    rows.append(("Reads", reading_description(m)))
    learnt = trained_on_text(m)
    if learnt:
        rows.append(("Trained on", learnt))
    metrics = _first(m, "metrics", default={})
    twin = scores_twin(m)
    words, key = scores_on(m)
    reviews = key.startswith("reviews:")
    if reviews and _f1_rows(metrics):
        # A fine-tuned model's scores are on the curator's held-back documents, not a devel set.
        rows.append(("Scored", words))
    for label, f1 in _f1_rows(metrics):
        rows.append((f"F1 {label}" if reviews else f"devel F1 {label}", f"{100 * f1:.2f}" if f1 <= 1 else f"{f1:.2f}"))
    comparison = (m.get("config") or {}).get("comparison") if isinstance(m.get("config"), dict) else None
    if reviews and isinstance(comparison, dict) and all(isinstance(comparison.get(k), (int, float))
                                                        for k in ("before", "after", "low", "high")):
        rows.append(("Against its start", f"{100 * comparison['before']:.1f} → {100 * comparison['after']:.1f} "
                                          f"(95% interval of the change {100 * comparison['low']:+.1f} to "
                                          f"{100 * comparison['high']:+.1f})"))
    if twin:
        # Devel taught this model, so its own devel scores would flatter it.
        rows.append(("Scores from", f"{twin}, the same recipe trained without devel"))
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
    summary = m.get("summary")
    lead = f"<p>{html.escape(summary)}</p>" if isinstance(summary, str) and summary.strip() else ""
    return f"<h3>{html.escape(name)}</h3>{lead}<table cellspacing=2>{cells}</table>"


def scores_twin(manifest: dict[str, Any]) -> str | None:
    """The model whose devel scores a model's card shows in place of its own (a final
    build trained on train + devel reports its train-only twin's); None: its own."""
    metrics = (manifest or {}).get("metrics")
    source = metrics.get("source") if isinstance(metrics, dict) else None
    twin = source.get("twin") if isinstance(source, dict) else None
    return twin if isinstance(twin, str) and twin else None


def trained_on_text(manifest: dict[str, Any]) -> str:
    """The labelled files a model learnt from, and how much unlabelled text, in a few
    words ("train.tsv + devel.tsv, and 64 files of unlabelled text"); "" when not said."""
    data = (manifest or {}).get("training_data")
    if not isinstance(data, list):
        return ""
    rows = [d for d in data if isinstance(d, dict)]
    labelled = list(dict.fromkeys(str(d.get("file")) for d in rows if d.get("role") == "train"))
    unlabelled = sum(1 for d in rows if d.get("role") == "unlabeled")
    if not labelled:
        return ""
    more = f", and {unlabelled} file{'s' if unlabelled != 1 else ''} of unlabelled text" if unlabelled else ""
    return " + ".join(labelled) + more


def devel_f1(manifest: dict[str, Any]) -> float | None:
    """A model's overall devel F1 as a fraction, from its card (None: not scored)."""
    rows = dict(_f1_rows(_first(manifest or {}, "metrics", default={})))
    f1 = rows.get("overall")
    return None if f1 is None else (f1 / 100 if f1 > 1 else f1)


def tokens_per_second(manifest: dict[str, Any]) -> float | None:
    """A model's measured speed from its card (the mode it tags in; None: not timed)."""
    speed = (manifest or {}).get("speed")
    if not isinstance(speed, dict):
        return None
    tps = _first(speed, "tokens_per_s", "tokens_per_second")
    return float(tps) if isinstance(tps, (int, float)) and tps > 0 else None


def picker_summaries(manifests: dict[str, dict[str, Any]]) -> dict[str, str]:
    """What the picker shows beside each model's name, in plain words, from the models'
    own cards: "fast" for the fastest and "accurate" for the best F1 among models
    scored on the same data (when there are models to compare: a fine-tuned model's
    held-back documents are its own, so it is never called accurate against a devel
    score), the F1 with what it was measured on, and the speed relative to the
    slowest model timed ("speed 2.9×": 2.9 times its tokens a second)."""
    f1s = {n: f for n, m in manifests.items() if (f := devel_f1(m)) is not None}
    scored = {n: scores_on(manifests[n]) for n in f1s}
    speeds = {n: t for n, m in manifests.items() if (t := tokens_per_second(m)) is not None}
    slowest = min(speeds.values(), default=None)
    out: dict[str, str] = {}
    for name in manifests:
        words = []
        if len(speeds) > 1 and name in speeds and speeds[name] == max(speeds.values()):
            words.append("fast")
        peers = [f1s[n] for n in f1s if name in scored and scored[n][1] == scored[name][1]]
        if len(peers) > 1 and f1s[name] == max(peers):
            words.append("accurate")
        parts = [", ".join(words)] if words else []
        if name in f1s:
            what, key = scored[name]
            parts.append(f"F1 {100 * f1s[name]:.1f} {what}" if key.startswith("reviews:")
                         else f"{what.replace('devel F1', f'devel F1 {100 * f1s[name]:.1f}')}")
        if name in speeds and len(speeds) > 1:
            parts.append(f"speed {speeds[name] / slowest:.1f}×")
        elif name in speeds:
            parts.append(f"{speeds[name]:,.0f} tokens/s")
        out[name] = " · ".join(parts) if parts else "not scored or timed yet"
    return out


def picker_text(name: str, summary: str) -> str:
    return f"{name} — {summary}" if summary else name


def fitted_picker_text(text: str, fits) -> str:
    """``text`` (:func:`picker_text`) shortened to what ``fits(text)`` accepts: the
    summary's last parts dropped whole ("… · speed 2.9×" goes before "devel F1"), then
    its last words, then the name elided; never a word cut in the middle while
    whole words fit."""
    if fits(text):
        return text
    name, _, summary = text.partition(" — ")
    parts = summary.split(" · ") if summary else []
    while parts:
        parts.pop()
        candidate = f"{name} — {' · '.join(parts)} …" if parts else f"{name} …"
        if fits(candidate):
            return candidate
    words = name.split(" ")
    while len(words) > 1:
        words.pop()
        if fits(" ".join(words) + " …"):
            return " ".join(words) + " …"
    return ""  # not even the name: the caller elides it


class ModelPicker(QComboBox):
    """Registry models by name; ``modelChosen`` carries the name (empty for none)."""

    modelChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        # Narrow enough for the toolbar of a 1024-pixel window (its other commands stay
        # on it), and as wide as the chosen model's name and figures where there is room.
        self.setMinimumContentsLength(MIN_CHARS)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.manifests: dict[str, dict] = {}
        self.addItem("(looking for models…)", "")
        self._fit_width()
        self.currentIndexChanged.connect(lambda _i: self.modelChosen.emit(self.current_name()))

    def set_entries(self, entries: list[Any], select: str | None = None) -> None:
        """Show registry entries (listed by a background job: the registry's import
        of transformers takes seconds)."""
        keep = select or self.current_name()
        self.blockSignals(True)
        self.clear()
        self.manifests = {entry.name: manifest_dict(entry) for entry in entries}
        # Speed and accuracy beside each name, not only in a tooltip or a hidden card.
        summaries = picker_summaries(self.manifests)
        for entry in entries:
            self.addItem(picker_text(entry.name, summaries[entry.name]), entry.name)
            self.setItemData(self.count() - 1, card_html(entry.name, self.manifests[entry.name]),
                             Qt.ItemDataRole.ToolTipRole)
        if not entries:
            self.addItem("(no models: train or import one)", "")
        self._fit_width()
        index = max(0, self.findData(keep)) if keep else 0
        self.setCurrentIndex(index)
        self.blockSignals(False)
        self.modelChosen.emit(self.current_name())

    def _fit_width(self) -> None:
        """The list opens wide enough for each name and its figures; the box grows no wider."""
        widest = max((self.fontMetrics().horizontalAdvance(self.itemText(i)) for i in range(self.count())),
                     default=0) + 40
        self.view().setMinimumWidth(widest)
        self.setMaximumWidth(max(widest, self.minimumSizeHint().width()))

    def current_name(self) -> str:
        return self.currentData() or ""

    def paintEvent(self, _event) -> None:
        """The chosen model's name and figures, shortened to the box's room by whole
        parts (:func:`fitted_picker_text`; a combo box cuts its text off mid-letter)."""
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        metrics = self.fontMetrics()
        text = fitted_picker_text(option.currentText, lambda t: metrics.horizontalAdvance(t) <= field.width())
        option.currentText = text or metrics.elidedText(option.currentText, Qt.TextElideMode.ElideRight,
                                                        field.width())
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)


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
