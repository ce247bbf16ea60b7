"""What a model folder holds, read without torch or transformers: its safetensors files,
their total size, and its small JSON files read within a size limit. The bottom of the
models layer: the manifest, the checks, loading and the registry all read folders through it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastbioner.base.errors import ModelError

MAX_CONFIG_BYTES = 10 * 2**20        # config.json, fastbioner.json
# Pickled weights: never loaded (unpickling can run code), named in messages.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


def safetensors_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def folder_size(folder: str | Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def _bad(path: Path, message: str) -> ModelError:
    return ModelError(f"{path}: {message}")


def read_json_object(path: Path, what: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A small JSON file holding an object; ModelError naming ``path`` otherwise."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise _bad(path, f"{what} is not a regular file")
        if size > limit:
            raise _bad(path, f"{what} of {size:,} bytes, over the limit of {limit:,}")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except ModelError:
        raise
    except OSError as exc:
        raise _bad(path, f"unreadable {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise _bad(path, f"unreadable {what} (not UTF-8 text)") from None
    except ValueError as exc:
        raise _bad(path, f"unreadable {what} (not JSON: {str(exc)[:80]})") from None
    except RecursionError:
        raise _bad(path, f"unreadable {what} (JSON nested too deeply)") from None
    if not isinstance(data, dict):
        raise _bad(path, f"unreadable {what} (not a JSON object)")
    return data
