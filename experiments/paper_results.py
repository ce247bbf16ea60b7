"""The results file of the paper tables (``experiments/results/paper_rows.json``,
``{row id: {seed: result}}``): reading and writing it, one finished run's entry made
from its registered manifest, and the per-row means over seeds the report reads.
Rows themselves (what each runs) are ``runs.toml``'s; a row here is anything with
``id``, ``epochs`` and ``model_name(seed)``."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from .paths import PAPER_ROWS as RESULTS
from .paths import REPO


def portable(text: str) -> str:
    """A command or path as a reader's machine has it, never this one's: the shared
    corpora as ``../shared/...``, the repository's files relative to its root, the home
    folder as ``~``. Results files and the report hold commands in this form; commands
    are compared in it too (:func:`experiments.queue_state.normalised`), so a command
    recorded on one machine is the same run as the queued command on another."""
    text = text.replace(f"{REPO.parent / 'shared'}/", "../shared/").replace(f"{REPO}/", "")
    return text.replace(f"{Path.home()}/", "~/")


def load_results(path: Path = RESULTS) -> dict:
    """``{row id: {seed: result}}``."""
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return {}


def save_results(results: dict, path: Path = RESULTS) -> None:
    write_json(path, results, sort_keys=True)


def write_json(path: str | Path, data, sort_keys: bool = False) -> None:
    """``data`` as indented JSON, written whole or not at all (a temporary file renamed):
    a script cut short leaves the previous file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=sort_keys) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def record(row, seed: int, entry: dict, path: Path = RESULTS) -> None:
    """Store one finished run, re-reading the file first (another process may have
    written meanwhile)."""
    from filelock import FileLock  # the same flock as before on POSIX; also on Windows

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_suffix(".lock")):
        results = load_results(path)
        by_seed = results.setdefault(row.id, {})
        before = by_seed.get(str(seed))
        if before is not None and before.get("command") and before.get("finished") != entry.get("finished"):
            # The same row run again (a prerequisite rebuilt on a replaced machine): the
            # rows already trained from the earlier model keep its figures beside the new.
            earlier = before.pop("earlier", [])
            entry = {**entry, "earlier": [before, *earlier]}
        by_seed[str(seed)] = entry
        save_results(results, path)


def cpu_name() -> str:
    """The CPU's model name, as the result records name it (the library's helper)."""
    import fastbioner

    return fastbioner.cpu_model_name()


def manifest_of(name: str) -> dict:
    import fastbioner

    return fastbioner.Registry().get(name).manifest.to_dict()


def result_from_manifest(m: dict) -> dict:
    metrics = m.get("metrics") or {}
    per_type = {t: {k: s[k] for k in ("precision", "recall", "f1", "support")}
                for t, s in (metrics.get("per_type") or {}).items()}
    training = m.get("training") or {}
    return {"precision": metrics.get("precision"), "recall": metrics.get("recall"), "f1": metrics.get("f1"),
            "per_type": per_type, "parameters": m.get("parameters"), "size_bytes": m.get("size_bytes"),
            "layers": m.get("layers"), "width": m.get("width"), "method": m.get("method"),
            "parent": m.get("parent"), "epoch_seconds": training.get("epoch_seconds"),
            "steps": training.get("steps"), "best_step": training.get("best_step"),
            "history": [{"step": h.get("step"), "f1": h.get("f1")} for h in training.get("history") or []],
            "calibration": (training.get("calibration") or {}).get("scales"),
            "compression": m.get("compression") or {}}


def result_entry(row, seed: int, command: str, wall: float | None, manifest: dict,
                 commit: str | None = None) -> dict:
    return {"command": portable(command), "seed": seed, "epochs": row.epochs,
            "wall_seconds": None if wall is None else round(wall, 1), "cpu": cpu_name(),
            "cores": os.cpu_count(), "commit": commit,
            "finished": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
            "model": row.model_name(seed), **result_from_manifest(manifest)}


def _mean_sd(xs: list[float]) -> tuple[float, float | None]:
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    return m, (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def aggregate(results: dict) -> dict:
    """One entry per row for the report: the first seed's figures, with precision,
    recall and F1 (overall and per type) replaced by their means over the seeds run,
    and ``f1_sd`` (sample standard deviation) and ``seeds`` added."""
    out = {}
    for row_id, by_seed in results.items():
        runs = [by_seed[k] for k in sorted(by_seed, key=int)]
        if not runs:
            continue
        first = dict(runs[0])
        for key in ("precision", "recall", "f1"):
            vals = [r[key] for r in runs if r.get(key) is not None]
            if vals:
                first[key], sd = _mean_sd(vals)
                first[f"{key}_sd"] = sd
        for typ in first.get("per_type") or {}:
            vals = [r["per_type"][typ]["f1"] for r in runs if typ in (r.get("per_type") or {})]
            first["per_type"] = {**first["per_type"], typ: {**first["per_type"][typ], "f1": _mean_sd(vals)[0]}}
        first["seeds"] = [r["seed"] for r in runs]
        first["runs"] = runs
        out[row_id] = first
    return out
