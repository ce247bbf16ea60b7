"""Models on disk: one folder per model, with a manifest, installed atomically.

The registry's root is ``$FASTBIONER_HOME/models`` when ``FASTBIONER_HOME`` is set
(tests set it, so they never touch a real registry), else
``platformdirs.user_data_dir("fastbioner")/models``. A model folder holds the
Hugging Face ``save_pretrained`` output (safetensors only), its tokenizer and
``fastbioner.json``, the :class:`Manifest`.

A model is built in a staging folder under the root and renamed into place only
when complete::

    with registry.staging() as folder:      # deleted on error or cancel
        save_model(model, tokenizer, folder)
        write_manifest(folder, manifest)
        registry.install(folder, "my-model")

so a cancelled or failed job leaves no entry and no partial folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterator


from fastbioner.base.errors import FastBioNERError, InputError, ModelError
from fastbioner.base.home import user_home
from fastbioner.io.fileio import check_not_an_input, current_umask, process_alive
from fastbioner.io.labels import split_tag
from fastbioner.models.folder import copy_model_files, folder_size, model_files
from fastbioner.models.loading import folder_config
from fastbioner.models.manifest import KINDS, MANIFEST, Manifest, now_iso, read_manifest, write_manifest
from fastbioner.models.modeling import check_weights, load_tokenizer

# filelock (some 13 ms with what it imports) is imported when the registry is written, not to list it.

# modeling and loading import torch and transformers only inside the functions that load
# weights: listing models, and every command line start-up, need none of them.

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # whole name (fullmatch): a safe file name


def _is_dir(path: Path) -> bool:
    """A folder there; False for a name the system cannot look up (too long, a NUL)
    rather than an OSError or ValueError traceback."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                    "tokenizer.model")
# A tokenizer that turns most of this into its unknown token cannot tag text.
_PROBE = "Cocaine induced seizures and hypertension in rats treated with aspirin."


@dataclass(frozen=True)
class ModelEntry:
    name: str
    path: Path
    manifest: Manifest
    registered: bool = True  # False: a plain folder given by path

    @property
    def labels(self) -> list[str]:
        return list(self.manifest.labels)


def manifest_from_folder(folder: str | Path, kind: str = "teacher") -> Manifest:
    """A manifest for a Hugging Face folder made elsewhere, from its config.json and
    its safetensors headers (the weights are not loaded)."""
    folder = Path(folder)
    checked = check_weights(folder)  # config within the limits, weights sound: read, not loaded
    cfg, base_model = folder_config(folder)  # without transformers for what the light engine runs
    labels, params = checked.labels, checked.parameters
    return Manifest(name=folder.name, kind=kind, base_model=base_model,
                    model_type=getattr(cfg, "model_type", ""),
                    layers=getattr(cfg, "num_hidden_layers", None),
                    width=getattr(cfg, "hidden_size", None), parameters=params,
                    size_bytes=folder_size(folder), labels=labels, created=now_iso())


def check_bio_labels(labels: list[str], where: str | Path) -> None:
    try:
        for label in labels:
            if split_tag(label)[0] not in ("O", "B", "I"):
                raise ValueError(label)
    except ValueError:
        raise ModelError(f"{where}: the model's labels are not IOB2 tags "
                         f"({', '.join(labels[:6])}); a tagger needs O, B-<type>, I-<type>") from None
    if "O" not in labels:
        raise ModelError(f"{where}: the model's labels lack 'O'")


def check_tokenizer(folder: Path, shown: str | Path | None = None) -> None:
    """ModelError unless ``folder`` holds tokenizer files that load into a fast tokenizer
    which knows most of a biomedical sentence (a tokenizer rebuilt from a config alone
    knows five tokens, and tags nothing)."""
    shown = shown or folder
    if not any((folder / f).is_file() for f in _TOKENIZER_FILES):
        raise ModelError(f"{shown}: no tokenizer files ({', '.join(_TOKENIZER_FILES[:2])} ...); "
                         f"a model cannot tag without its tokenizer")
    tok = load_tokenizer(folder)
    ids = tok(_PROBE, add_special_tokens=False)["input_ids"]
    unknown = sum(1 for i in ids if i == tok.unk_token_id)
    if not ids or unknown * 2 > len(ids):
        raise ModelError(f"{shown}: the tokenizer knows too little ({len(tok)} tokens; {unknown} of "
                         f"{len(ids)} pieces of a test sentence unknown)")


# Staging folders are ``.staging-PID-RANDOM``: a folder whose process is gone (kill -9
# during an import, a power cut) is removed by the next staging in the same registry.
STAGING_PREFIX = ".staging-"
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"(?:([0-9]+)-)?[A-Za-z0-9_]+")
_LEGACY_STALE_SECONDS = 24 * 3600  # a staging folder named without a process id (older versions)
_TRASH_STALE_SECONDS = 3600        # ``.trash-*``: what a delete or an overwrite was removing


def sweep_stale_staging(root: Path) -> list[Path]:
    """Remove the staging folders (and trash) that processes now gone left in the
    registry ``root``; a live process's staging folder stays. Only names this module
    makes are touched. Returns the folders removed."""
    removed: list[Path] = []
    try:
        items = [p for p in root.iterdir() if p.name.startswith((STAGING_PREFIX, ".trash-"))]
    except OSError:
        return removed
    for item in items:
        try:
            if item.is_symlink() or not item.is_dir():
                continue
            age = time.time() - item.lstat().st_mtime
            if item.name.startswith(".trash-"):
                if re.fullmatch(r"\.trash-[A-Za-z0-9_]+", item.name) is None or age < _TRASH_STALE_SECONDS:
                    continue
            else:
                m = _STAGING_NAME.fullmatch(item.name)
                if m is None:
                    continue
                if m.group(1) is not None:
                    if process_alive(int(m.group(1))):
                        continue
                elif age < _LEGACY_STALE_SECONDS:
                    continue
        except OSError:
            continue
        shutil.rmtree(item, ignore_errors=True)
        removed.append(item)
    return removed


def default_root() -> Path:
    return user_home() / "models"


class RegistryUnwritable(ModelError):
    """The registry's folder cannot be written: read-only, a regular file where the
    folder should be, a full disk. Tagging with a shipped model goes on without
    registering it (see :mod:`fastbioner.models.shipped`)."""


class Registry:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root).expanduser() if root is not None else default_root()

    # -- looking up -------------------------------------------------------------------

    @staticmethod
    def check_name(name: str) -> str:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ModelError(f"bad model name {name!r}: use letters, digits, '.', '_' and '-' "
                             f"(starting with a letter or digit)")
        return name

    def exists(self, name: str) -> bool:
        try:
            return (self.root / name / MANIFEST).is_file()
        except OSError:  # a registry that cannot be read holds nothing usable
            return False

    def _unwritable(self, exc: OSError | FastBioNERError) -> RegistryUnwritable:
        reason = exc.strerror or str(exc) if isinstance(exc, OSError) else getattr(exc, "message", str(exc))
        return RegistryUnwritable(f"{self.root}: cannot save models there ({reason}); set FASTBIONER_HOME "
                                  f"to a folder you can write")

    def get(self, name: str) -> ModelEntry:
        self.check_name(name)
        folder = self.root / name
        if not folder.is_dir():
            raise ModelError(f"no model named {name!r} in the registry ({self.root})")
        return ModelEntry(name, folder, read_manifest(folder))

    def problems(self) -> list[tuple[str, str]]:
        """(name, message) for each folder in the registry that cannot be used."""
        return [(p.name, e) for p in self._folders() if isinstance(e := self._try(p), str)]

    def _folders(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    @staticmethod
    def _try(folder: Path) -> ModelEntry | str:
        try:
            return ModelEntry(folder.name, folder, read_manifest(folder))
        except ModelError as exc:
            return str(exc)
        except Exception as exc:
            return f"{folder}: unusable ({type(exc).__name__}: {exc})"

    # After the methods annotated with list[...]: below this point a type checker reads
    # `list` in this class body as the method.
    def list(self) -> list[ModelEntry]:
        """Usable entries, by name; see :meth:`problems` for the others."""
        return [e for e in (self._try(p) for p in self._folders()) if isinstance(e, ModelEntry)]

    def resolve(self, ref: str | Path) -> ModelEntry:
        """A registry name, or a model folder (registered or not)."""
        ref_str = str(ref)
        if _NAME.fullmatch(ref_str) and _is_dir(self.root / ref_str):
            return self.get(ref_str)
        folder = Path(ref_str).expanduser()
        if _is_dir(folder):
            if (folder / MANIFEST).is_file():
                check_weights(folder)  # the manifest must describe the model beside it
                return ModelEntry(folder.name, folder.resolve(), read_manifest(folder), registered=False)
            return ModelEntry(folder.name, folder.resolve(), manifest_from_folder(folder), registered=False)
        raise ModelError(f"no model named {ref_str!r} in the registry ({self.root}) and no such folder")

    # -- building and installing --------------------------------------------------

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A fresh folder under the root (same file system, so install is a rename);
        removed when the block ends unless it was installed."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            sweep_stale_staging(self.root)
            # The process id in the name tells a later sweep whether its maker still runs.
            folder = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.root))
            folder.chmod(0o777 & ~current_umask())  # mkdtemp makes it 0700 whatever the umask
        except OSError as exc:
            raise self._unwritable(exc) from None
        try:
            yield folder
        except OSError as exc:  # a full disk while saving into it
            raise self._unwritable(exc) from None
        except Exception as exc:
            # safetensors reports a full disk as its own error (no OSError), its reason inside.
            if type(exc).__name__ != "SafetensorError":
                raise
            reason = re.search(r'message: "([^"]+)"', str(exc))
            raise self._unwritable(OSError(0, reason.group(1) if reason else str(exc))) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def install(self, staging: str | Path, name: str, overwrite: bool = False) -> ModelEntry:
        """Move a complete model folder (weights, tokenizer, manifest) into place as
        ``name`` in one rename. The manifest's name and size are set here."""
        self.check_name(name)
        staging = Path(staging)
        check_weights(staging)
        manifest = read_manifest(staging)
        manifest.name = name
        dest = self.root / name
        if staging.resolve().parent != self.root.resolve():
            raise ModelError(f"{staging}: install only folders made by Registry.staging()")
        try:
            write_manifest(staging, manifest)
            manifest.size_bytes = folder_size(staging)
            write_manifest(staging, manifest)
            # Checking the name and renaming into it happen under the registry's lock, so
            # of two processes installing the same new name exactly one wins.
            with self._locked():
                if dest.exists() and not overwrite:
                    raise ModelError(f"a model named {name!r} already exists; choose another name or delete it")
                trash = None
                if dest.exists():
                    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=self.root)) / name
                    os.replace(dest, trash)
                os.replace(staging, dest)
        except (OSError, InputError) as exc:  # a read-only or full registry (InputError: atomic_write's)
            raise self._unwritable(exc) from None
        if trash is not None:
            shutil.rmtree(trash.parent, ignore_errors=True)
        return ModelEntry(name, dest, manifest)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the registry (``.lock``; the system's lock on every
        platform, flock on POSIX and LockFileEx on Windows, released when the process
        dies, so a crash never leaves it held)."""
        from filelock import FileLock

        with FileLock(self.root / ".lock"):
            yield

    def import_folder(self, folder: str | Path, name: str | None = None, kind: str | None = None,
                      overwrite: bool = False) -> ModelEntry:
        """Copy a Hugging Face token-classification folder into the registry: only the
        regular files a model needs (weights, config, tokenizer, manifest) at its top
        level, never code, pickles or sub-folders, never a link out of the folder.
        Its labels must be IOB2 tags, its manifest (if any) well typed and its
        tokenizer usable."""
        folder = Path(folder).expanduser()
        name = self.check_name(name or folder.name)
        if kind is not None and kind not in KINDS:
            raise ModelError(f"kind must be one of {', '.join(KINDS)}")
        if self.exists(name) and not overwrite:
            raise ModelError(f"a model named {name!r} already exists; choose another name or delete it")
        files = model_files(folder)
        # The user's folder is checked where it is, before anything is copied or built:
        # a bad config, weights or manifest is blamed on the user's file, not a copy.
        check_weights(folder)
        with self.staging() as st:
            try:
                copy_model_files(folder, st, files, on_write_error=self._unwritable)
                check_weights(st)  # what was copied (a file may have changed meanwhile)
                if (st / MANIFEST).is_file():
                    manifest = read_manifest(st)
                    if kind:
                        manifest.kind = kind
                else:
                    manifest = manifest_from_folder(st, kind or "teacher")
                    manifest.name = folder.name
                    if manifest.base_model == str(st):
                        manifest.base_model = str(folder)
                check_bio_labels(manifest.labels, folder)
                check_tokenizer(st, folder)
                write_manifest(st, manifest)
                return self.install(st, name, overwrite=overwrite)
            except ModelError as exc:  # name the user's folder, never the staging copy (deleted now)
                raise type(exc)(str(exc).replace(str(st), str(folder))) from None
            except (OSError, InputError) as exc:  # the manifest's write (atomic_write) in a full registry
                raise self._unwritable(exc) from None

    def export(self, name: str, dest: str | Path) -> Path:
        """Copy a model to ``dest`` (into it, as ``dest/name``, when ``dest`` is an
        existing folder); the copy appears complete or not at all, and holds only what
        a model needs (:func:`~fastbioner.models.folder.copy_model_files`: never a
        pickle). A ``dest`` inside the model's own folder is refused."""
        entry = self.get(name)
        dest = Path(dest).expanduser()
        check_not_an_input(dest, [entry.path])  # copying a folder into itself never ends
        if dest.is_dir():
            dest = dest / name
        if dest.exists():
            raise ModelError(f"{dest}: already exists")
        files = model_files(entry.path)
        tmp = None
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
            (tmp / "m").mkdir()
            copy_model_files(entry.path, tmp / "m", files)
            os.replace(tmp / "m", dest)
        except OSError as exc:  # shutil.Error (several files) is an OSError too
            reason = exc.strerror or str(exc).splitlines()[0][:200]
            raise ModelError(f"{dest}: cannot export there ({reason})") from None
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        return dest

    def delete(self, name: str) -> None:
        entry_folder = self.root / self.check_name(name)
        if not entry_folder.is_dir():
            raise ModelError(f"no model named {name!r} in the registry ({self.root})")
        try:
            trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=self.root))
            os.replace(entry_folder, trash / name)  # gone from list() at once, whatever rmtree does
        except OSError as exc:
            raise self._unwritable(exc) from None
        shutil.rmtree(trash, ignore_errors=True)

    def update_manifest(self, name: str, **changes: Any) -> ModelEntry:
        """Replace manifest fields (e.g. ``speed=...``, ``compression=...``) atomically."""
        entry = self.get(name)
        known = {f.name for f in fields(Manifest)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ModelError(f"unknown manifest field(s): {', '.join(unknown)}")
        data = entry.manifest.to_dict()
        data.update(changes)
        manifest = Manifest.from_dict(data)
        write_manifest(entry.path, manifest)
        return ModelEntry(name, entry.path, manifest)
