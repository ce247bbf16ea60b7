"""The trouble sweep's failure signs beyond a traceback or a kill (issue 70): a raw
terminal escape in what a command printed, a pickle landing in the registry, an input
that changed under a command (data loss), and the helpers the round-3 checks share
(reading a tag-corpus view, the ids of an output file)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

# What a terminal acts on: ESC (colours, cursor moves, OSC titles), BEL, the C1 CSI and
# OSC introducers, and the right-to-left override that makes a name read as another.
RAW_MARKS = {"\x1b": "ESC", "\x07": "BEL", "\u202e": "U+202E", "\x9b": "CSI", "\x9d": "OSC"}
# A model needs safetensors, configs, a tokenizer, a manifest and a card: these are pickles.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
BIN = str(Path(sys.executable).parent / "fastbioner")


def raw_escapes(out: str) -> str:
    found = [name for mark, name in RAW_MARKS.items() if mark in out]
    return "raw escape " + "+".join(found) if found else ""


def pickles_in(registry: Path) -> set[str]:
    """Pickle files anywhere in a registry's model folders (an interrupted run's
    checkpoints under ``.checkpoints`` hold optimizer.pt by design: not a model)."""
    found: set[str] = set()
    if not registry.is_dir():
        return found
    for root, dirs, files in os.walk(registry):
        dirs[:] = [d for d in dirs if d != ".checkpoints"]
        found.update(os.path.join(root, f) for f in files if f.lower().endswith(PICKLE_SUFFIXES))
    return found


def snapshot(paths) -> dict[str, str]:
    """Each guarded file's SHA-256 (a folder: each file under it, links not followed
    into other folders); a path that is gone reads as "missing"."""
    state: dict[str, str] = {}
    for p in map(Path, paths):
        if p.is_dir() and not p.is_symlink():
            for root, _dirs, files in os.walk(p):
                for f in files:
                    state[os.path.join(root, f)] = _digest(Path(root) / f)
        else:
            state[str(p)] = _digest(p)
    return state


def _digest(p: Path) -> str:
    try:
        if not p.is_file():
            return "missing" if not os.path.lexists(p) else "not a file"
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def lost(before: dict[str, str], after: dict[str, str]) -> str:
    """The guarded files that changed or went (new files beside them are not data loss)."""
    gone = [p for p, h in before.items() if after.get(p, "missing") != h]
    return "data loss: " + ", ".join(ascii(os.path.basename(p)) for p in gone[:4]) if gone else ""


def ids_of(path: str | Path, fmt: str | None = None) -> list[str]:
    """The document ids of a file any format, read through `convert` into JSONL (a
    separate process: this script imports nothing of the project)."""
    tmp = Path(str(path) + ".ids.jsonl")
    argv = [BIN, "convert", str(path), str(tmp)] + (["--from", fmt] if fmt else [])
    subprocess.run(argv, capture_output=True, timeout=120)
    try:
        return [json.loads(line)["id"] for line in tmp.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError, KeyError):
        return []
    finally:
        tmp.unlink(missing_ok=True)


def texts_of(path: str | Path) -> dict[str, str]:
    tmp = Path(str(path) + ".texts.jsonl")
    subprocess.run([BIN, "convert", str(path), str(tmp)], capture_output=True, timeout=120)
    try:
        rows = [json.loads(line) for line in tmp.read_text(encoding="utf-8").splitlines() if line.strip()]
        return {r["id"]: r["text"] for r in rows}
    except (OSError, ValueError, KeyError):
        return {}
    finally:
        tmp.unlink(missing_ok=True)


def view_ids(out: Path) -> list[str] | None:
    """The PMIDs a tag-corpus folder's readers see: the shards of ``current`` (or the
    manifest's list) when the folder has one, else its top-level ``.parquet`` files."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    where = out / "current" if (out / "current").is_dir() else out
    shards = sorted(where.glob("*.parquet"))
    ids: list[str] = []
    for s in shards:
        try:
            ids += [str(v) for v in pq.read_table(s, columns=["pmid"]).column("pmid").to_pylist()]
        except Exception: # a user's own file of that name is not a shard
            continue
    return ids


def one_line_about(out: str, word: str) -> int:
    return sum(1 for line in out.splitlines() if word in line)


def write(p: Path, text: str | bytes) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return p


def jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def must_refuse(r) -> str:
    return "" if r.rc not in (0, None) else "wrong answer: accepted (exit 0)"
