"""What readers of a corpus folder see, and how a run changes it in one step.

The folder's current documents are the shards of one snapshot, ``_snapshots/NNNNN/``,
and ``current`` is a symbolic link to it. A run builds the next snapshot beside it
(hard links to the shards it leaves alone, new files for the ones it rewrites) and
publishes it with one rename of a new link over ``current``: a reader sees the
whole previous view or the whole next one, never a mix, and a run killed at any
moment leaves ``current`` as it was (the unfinished snapshot is taken up by the next
run). The snapshot ``current`` pointed to before stays complete until the next run
has published, so a reader that resolved the link (``os.path.realpath``) keeps a
consistent view for a whole update; older snapshots are removed.

Names starting with ``_`` are skipped by Parquet readers of the folder (pyarrow,
duckdb), so ``pyarrow.parquet.read_table(folder)`` reads ``current`` only.

A folder that holds anything tag-corpus did not write is refused as an output
(:func:`refuse_foreign`), so that no file of a user's is adopted or overwritten.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from fastbioner.base.errors import InputError
from fastbioner.scale.shards import file_record
from fastbioner.scale.state import HISTORY_DIR, STATE_DIR

CURRENT = "current"
SNAPSHOTS_DIR = "_snapshots"
SUMMARY_FILE = "_summary.json"  # "_" first: Parquet readers of the folder (pyarrow, duckdb) skip it
OWN_NAMES = frozenset({CURRENT, SNAPSHOTS_DIR, SUMMARY_FILE, STATE_DIR, HISTORY_DIR})


def refuse_foreign(out_dir: Path) -> None:
    """Refuse an output folder that holds files tag-corpus did not write: it must be
    new, empty, or a tag-corpus folder (its record of inputs, or only names a first
    run that was interrupted leaves)."""
    if not out_dir.is_dir() or (out_dir / STATE_DIR / "inputs.json").is_file():
        return
    foreign = sorted(p.name for p in out_dir.iterdir()
                     if p.name not in OWN_NAMES or (p.name == CURRENT and not p.is_symlink()))
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise InputError(f"holds files tag-corpus did not write ({foreign[0]}{more}): give a new "
                         f"or empty folder, or one that tag-corpus made", out_dir)


def _number(path: Path) -> int | None:
    return int(path.name) if path.name.isdigit() else None


class View:
    """The folder's published snapshot (``live``) and the one a run builds (``work``)."""

    def __init__(self, out_dir: Path, legacy_names: set[str]):
        self.out_dir = out_dir
        self.root = out_dir / SNAPSHOTS_DIR
        self.link = out_dir / CURRENT
        # A folder written before snapshots held its shards at the top: they are the live
        # view until the first snapshot is published (then removed).
        self.legacy_names = legacy_names
        self.live = self._resolve()
        self.work = self._prepare()

    def _resolve(self) -> Path | None:
        if self.link.is_symlink():
            target = (self.out_dir / os.readlink(self.link))
            return target if target.is_dir() else None
        if any((self.out_dir / n).is_file() for n in self.legacy_names):
            return self.out_dir
        return None

    def _snapshots(self) -> dict[int, Path]:
        if not self.root.is_dir():
            return {}
        return {n: p for p in self.root.iterdir() if (n := _number(p)) is not None and p.is_dir()}

    def _prepare(self) -> Path:
        """The snapshot this run builds: an interrupted run's unfinished one if any (its
        complete shards are kept), else a new one; with every live shard linked in that
        it does not hold yet."""
        for tmp in self.out_dir.glob(f".{CURRENT}.*"):   # a link a killed run made but never renamed
            tmp.unlink(missing_ok=True)
        snaps = self._snapshots()
        live_n = _number(self.live) if self.live is not None and self.live.parent == self.root else None
        newer = sorted(n for n in snaps if live_n is None or n > live_n)
        for n in newer[:-1]:
            shutil.rmtree(snaps[n], ignore_errors=True)
        if newer:
            work = snaps[newer[-1]]
        else:
            work = self.root / f"{max(snaps, default=0) + 1:05d}"
            work.mkdir(parents=True)
        for shard in self.live_shards():
            if not (work / shard.name).exists():
                link_or_copy(shard, work / shard.name)
        return work

    def live_shards(self) -> list[Path]:
        if self.live is None:
            return []
        if self.live == self.out_dir:
            return [self.out_dir / n for n in sorted(self.legacy_names) if (self.out_dir / n).is_file()]
        return sorted(self.live.glob("*.parquet"))

    def live_shard(self, name: str) -> Path | None:
        path = self.live / name if self.live is not None else None
        if path is None or not path.is_file() or (self.live == self.out_dir and name not in self.legacy_names):
            return None
        return path

    def same_as_live(self, name: str) -> bool:
        """Whether the work snapshot's shard ``name`` is the live one (the same file)."""
        live, work = self.live_shard(name), self.work / name
        return live is not None and work.is_file() and os.path.samefile(live, work)

    def restore(self, name: str) -> None:
        """The work snapshot's shard ``name`` back to the live version (none if none)."""
        (self.work / name).unlink(missing_ok=True)
        live = self.live_shard(name)
        if live is not None:
            link_or_copy(live, self.work / name)

    def publish(self) -> None:
        """Make the work snapshot the current view: one rename of a new link over
        ``current``. Then remove what no reader can still be using: snapshots before the
        one just replaced, and the top-level shards of a folder written before
        snapshots."""
        if self._unchanged() and self.live is not None:   # nothing to publish: readers keep theirs
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = self.live
            return
        tmp = self.out_dir / f".{CURRENT}.{uuid.uuid4().hex[:8]}"
        try:
            os.symlink(os.path.relpath(self.work, self.out_dir), tmp)
            os.replace(tmp, self.link)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise InputError(f"cannot link {CURRENT} to the new snapshot: {exc.strerror or exc} (the folder "
                             f"needs symbolic links)", self.out_dir) from None
        keep = {self.work.name} | ({self.live.name} if self.live is not None and self.live.parent == self.root
                                   else set())
        for path in self._snapshots().values():
            if path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)
        if self.live == self.out_dir:
            for name in self.legacy_names:
                path = self.out_dir / name
                if path.is_file() and file_record(path) is not None:   # ours, not a user's file
                    path.unlink()
        self.live = self.work


    def _unchanged(self) -> bool:
        if self.live is None or self.live.parent != self.root:
            return False
        names = sorted(p.name for p in self.work.glob("*.parquet"))
        return names == sorted(p.name for p in self.live_shards()) and all(self.same_as_live(n) for n in names)


def link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (a copy where links are not possible)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
