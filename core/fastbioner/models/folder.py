"""What a model folder holds, read without torch or transformers: its safetensors files,
their total size, and its small JSON files read within a size limit. The bottom of the
models layer: the manifest, the checks, loading and the registry all read folders through it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

from fastbioner.base.errors import ModelError

MAX_CONFIG_BYTES = 10 * 2**20        # config.json, fastbioner.json
# Pickled weights: never loaded (unpickling can run code), named in messages.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


# What a model is: its weights (safetensors), its configs, its tokenizer, its manifest
# (``fastbioner.json``, models/manifest.py's MANIFEST) and its card (README.md), regular
# files at the folder's top level. Nothing else is ever copied into or out of the
# registry (import, export, compact, fine-tune): no code, no pickle (pytorch_model.bin,
# optimizer.pt, training_args.bin), no sub-folder, no checkpoint.
MODEL_FILES = frozenset({
    "config.json", "generation_config.json", "fastbioner.json", "model.safetensors.index.json",
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model",
    "README.md",
})


def is_model_file(name: str) -> bool:
    return name in MODEL_FILES or (name.endswith(".safetensors") and not name.startswith("."))


def model_files(folder: Path) -> list[Path]:
    """The files of ``folder`` a model is made of (see :data:`MODEL_FILES`), by name;
    ModelError for such a file that is a link out of the folder, a link loop, or not a
    regular file."""
    try:
        root = folder.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: Python 3.11's symlink loop
        raise ModelError(f"{folder}: no such model folder ({exc})") from None
    if not root.is_dir():
        raise ModelError(f"{folder}: no such model folder")
    chosen = []
    for item in sorted(root.iterdir()):
        if not is_model_file(item.name):
            continue
        if item.is_symlink():
            try:
                real = item.resolve(strict=True)
            except (OSError, RuntimeError):
                raise ModelError(f"{item}: a symbolic link loop or a broken link") from None
            if root not in real.parents:
                raise ModelError(f"{item}: a symbolic link out of the model folder (to {real}); "
                                 f"copy the file into the folder to import it") from None
        else:
            real = item
        if not real.is_file():
            raise ModelError(f"{item}: not a regular file")
        chosen.append(item)
    return chosen


def copy_model_files(src: Path, dest: Path, files: Iterable[Path] | None = None, skip: Iterable[str] = (),
                     on_write_error: Callable[[OSError], Exception] | None = None) -> list[str]:
    """Copy what a model needs from the folder ``src`` into the existing folder ``dest``:
    ``files`` (default :func:`model_files` of ``src``) less the names in ``skip`` (those
    the caller writes itself), contents only (a link's target, no modes). The one copy
    import, export, compact and fine-tune make, so a pickle never enters the registry
    nor leaves it. Returns the names copied. A file that cannot be read is a
    ModelError naming it; one that cannot be written, ``on_write_error(exc)`` when
    given (the registry's "cannot save models there"), else a ModelError."""
    skipped = set(skip)
    copied = []
    for item in (model_files(src) if files is None else files):
        if item.name in skipped:
            continue
        try:
            source = open(item, "rb")
        except OSError as exc:
            raise ModelError(f"{item}: cannot read ({exc.strerror or exc})") from None
        with source:
            try:
                with open(dest / item.name, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
            except OSError as exc:
                if on_write_error is not None:
                    raise on_write_error(exc) from None
                raise ModelError(f"{dest / item.name}: cannot write ({exc.strerror or exc})") from None
        copied.append(item.name)
    return copied


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
