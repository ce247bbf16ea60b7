"""What a corpus folder remembers between runs, under ``_state/`` (a name Parquet
readers of the folder skip), so that one folder has one history:

- ``inputs.json``: every input the folder has taken, by shard name: its last path,
  size and SHA-256, and its place in the order (PubMed files by file number, other
  files in the order first given);
- ``scans/NAME.parquet``: each input's document ids and text hashes in file order
  and the PMIDs it deletes, so an input seen before (same size and hash) is never
  parsed again, and deletions and revisions keep applying to every shard whatever
  a later run lists;
- ``spool/``: this run's parsed documents (the tagging stage reads them instead of
  parsing again; removed at the end of a run);
- ``pending/``: tagged chunks not yet in a shard (a checkpoint: an interrupted run
  loses at most the chunk in flight);
- ``replaced/``: a shard's previous version while the run that rewrites it may still
  read rows from it (hard links, removed at the end of a run).

:class:`RowIndex` finds where each document's tagged row already is (a shard, a
checkpoint), so that a run tags only documents whose text or fingerprint changed.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write
from fastbioner.scale.shards import META_KEY, file_record, pubmed_file_number, shard_name
from fastbioner.scale.updates import InputScan, _Codes
from fastbioner.scale.work import file_digest

STATE_DIR = "_state"
HISTORY_DIR = "_history"
STATE_FORMAT = 2


@dataclass
class InputRecord:
    name: str            # the shard's file name, unique in the folder
    path: str            # the input's identity: its path (see FolderState.identify)
    size: int
    sha256: str
    order: list[int]     # sort key: [0, year, file number, sequence] for PubMed files, else [1, sequence]
    mtime_ns: int = 0    # when its bytes were hashed: same path, size and time, same bytes

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "size": self.size, "sha256": self.sha256,
                "order": self.order, "mtime_ns": self.mtime_ns}


@dataclass
class FolderState:
    out_dir: Path
    inputs: dict[str, InputRecord] = field(default_factory=dict)
    sequence: int = 0    # inputs numbered as first given
    runs: int = 0
    _by_path: dict[str, str] | None = field(default=None, repr=False)   # real path -> name

    @property
    def root(self) -> Path:
        return self.out_dir / STATE_DIR

    @classmethod
    def load(cls, out_dir: Path) -> "FolderState":
        state = cls(out_dir)
        path = state.root / "inputs.json"
        if not path.is_file():
            return state
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != STATE_FORMAT:
                raise ValueError("another format")
            state.sequence = int(data.get("sequence", 0))
            state.runs = int(data.get("runs", 0))
            for d in data.get("inputs", []):
                state.inputs[d["name"]] = InputRecord(d["name"], d["path"], int(d["size"]), d["sha256"],
                                                      [int(x) for x in d["order"]], int(d.get("mtime_ns", 0)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"the folder's record of its inputs cannot be read ({exc}); remove "
                             f"{STATE_DIR}/ to start the folder afresh", path) from None
        return state

    def save(self) -> None:
        with atomic_write(self.root / "inputs.json") as fh:
            json.dump({"format": STATE_FORMAT, "sequence": self.sequence, "runs": self.runs,
                       "inputs": [r.to_dict() for r in self.ordered()]}, fh, indent=1)
            fh.write("\n")

    def order_of(self, name: str, path: str) -> list[int]:
        """An input's place: PubMed files by file number (update files continue the
        baseline's numbers; two files of one number in the order first given), others
        in the order they were first given."""
        number = pubmed_file_number(path)
        known = self.inputs.get(name)
        if known is not None and (known.order[0] == 0) == (number is not None):
            return known.order
        self.sequence += 1
        return [0, *number, self.sequence] if number is not None else [1, self.sequence]

    def identify(self, path: str, taken: set[str]) -> tuple[str, InputRecord | None]:
        """The shard name of input ``path`` and its record, if the folder knows it: by its
        path (the same file, perhaps with new bytes: a new version of that input), else
        by its bytes where a known input's file is gone (moved). Any other file is a new
        input with a shard name of its own (``abs.parquet`` taken by another input:
        ``abs-2.parquet``), never another input's. ``taken``: names given this run."""
        if self._by_path is None:
            self._by_path = {os.path.realpath(r.path): r.name for r in self.inputs.values()}
        name = self._by_path.get(os.path.realpath(path))
        if name is not None and name not in taken:
            return name, self.inputs[name]
        size = os.path.getsize(path)
        moved = [r for r in self.ordered() if r.size == size and r.name not in taken and not os.path.exists(r.path)]
        if moved:
            digest = file_digest(path)[1]
            for record in moved:
                if record.sha256 == digest:
                    return record.name, record
        base = shard_name(path)
        name, k = base, 2
        while name in self.inputs or name in taken:
            name = f"{base[:-len('.parquet')]}-{k}.parquet"
            k += 1
        return name, None

    def ordered(self) -> list[InputRecord]:
        return sorted(self.inputs.values(), key=lambda r: (r.order, r.name))

    # -- files ----------------------------------------------------------------------

    def scan_path(self, name: str) -> Path:
        return self.root / "scans" / name

    def spool_path(self, name: str) -> Path:
        return self.root / "spool" / name

    @property
    def pending_dir(self) -> Path:
        return self.root / "pending"

    @property
    def replaced_dir(self) -> Path:
        return self.root / "replaced"

    def save_scan(self, name: str, scan: InputScan) -> None:
        # Ids as the scan holds them (numbers, and the other ids by position), so that
        # loading all of PubMed's scans is a read, not 36 million parses.
        other: list[str | None] = [None] * len(scan.numbers)
        for k, id_ in scan.others.items():
            other[k] = id_
        table = pa.table({"number": pa.array(scan.numbers, pa.int64()), "other": pa.array(other, pa.string()),
                          "text_hash": pa.array(scan.hashes, pa.int64())})
        meta = {"deleted": scan.deleted, "sha256": scan.sha256, "size": scan.size}
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        with atomic_write(self.scan_path(name), "wb") as fh:
            pq.write_table(table, fh, compression="zstd")

    def load_scan(self, name: str, path: str) -> InputScan | None:
        """The stored scan of input ``name``; None when missing or unreadable (the
        input is then parsed again)."""
        try:
            table = pq.read_table(self.scan_path(name))
            meta = json.loads(table.schema.metadata[META_KEY])
        except (OSError, KeyError, ValueError, pa.ArrowException):
            return None
        other = table.column("other").combine_chunks()
        positions = np.nonzero(other.is_valid().to_numpy(zero_copy_only=False))[0]
        others = dict(zip(positions.tolist(), other.filter(other.is_valid()).to_pylist()))
        return InputScan(path, table.column("number").to_numpy(), others, meta["deleted"], meta["sha256"],
                         table.column("text_hash").to_numpy(), int(meta["size"]))

    def clear_run_files(self) -> None:
        """What only a run in progress needs (spool, replaced shards)."""
        for folder in (self.root / "spool", self.replaced_dir):
            shutil.rmtree(folder, ignore_errors=True)


def keep_old_version(shard: Path, replaced_dir: Path) -> Path | None:
    """A hard link (or copy) of ``shard`` under ``replaced_dir`` before it is rewritten,
    so rows still to be moved from it to another shard stay readable."""
    if not shard.is_file():
        return None
    replaced_dir.mkdir(parents=True, exist_ok=True)
    target = replaced_dir / shard.name
    target.unlink(missing_ok=True)
    try:
        os.link(shard, target)
    except OSError:
        shutil.copy2(shard, target)
    return target


# A PMID as :mod:`.updates` stores it as a number: canonical ASCII digits, under 18 of them.
_CANONICAL = r"^(0|[1-9][0-9]{0,16})$"


def codes_of(codes: _Codes, ids: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each id's code (:class:`.updates._Codes`), vectorised for the usual case of a
    column of PMIDs (all of PubMed's 36 million ids in seconds), else id by id."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    numeric = pc.match_substring_regex(ids, _CANONICAL).fill_null(False)
    out = np.full(len(ids), -1, dtype=np.int64)
    if len(ids):
        mask = numeric.to_numpy(zero_copy_only=False)
        out[mask] = pc.cast(ids.filter(numeric), pa.int64()).to_numpy()
        for k in np.nonzero(~mask)[0].tolist():
            out[k] = codes.code(ids[k].as_py() or "")
    return out


class RowIndex:
    """Where tagged rows are: per source file (a shard, a checkpoint, a shard's
    previous version), its fingerprint, and each row's document code and text hash.
    ``locate`` answers, for documents (code, hash), the location of a row tagged
    under the current fingerprint (to reuse) and of any row with that text (to read
    the text from, without parsing). Only rows of ``wanted`` documents are held, and
    as NumPy arrays (32 bytes a row), so a daily update over all of PubMed holds its
    changed documents, not 36 million rows."""

    def __init__(self, codes: _Codes, wanted: np.ndarray | None = None):
        self.codes = codes
        self.wanted = None if wanted is None else np.unique(wanted)
        self.sources: list[Path] = []
        self.fingerprints: list[str | None] = []
        self.counts: list[int] = []
        self._code: list[np.ndarray] = []
        self._hash: list[np.ndarray] = []
        self._loc: list[np.ndarray] = []

    def add(self, path: Path) -> int | None:
        """Index one file's rows; its source number, or None if it is not a shard."""
        record = file_record(path)
        if record is None:
            return None
        table = pq.read_table(path, columns=["pmid", "text_hash"])
        src = len(self.sources)
        self.sources.append(path)
        self.fingerprints.append(record.get("fingerprint"))
        n = table.num_rows
        code = codes_of(self.codes, table.column("pmid"))
        hashes = table.column("text_hash").to_numpy()
        loc = (np.int64(src) << 32) | np.arange(n, dtype=np.int64)
        if self.wanted is not None:
            keep = np.isin(code, self.wanted)
            code, hashes, loc = code[keep], hashes[keep], loc[keep]
        self._code.append(code)
        self._hash.append(np.asarray(hashes, dtype=np.int64))
        self._loc.append(loc)
        self.counts.append(n)
        return src

    def locate(self, code: np.ndarray, hashes: np.ndarray, fp: str) -> tuple[np.ndarray, np.ndarray]:
        """(reuse, text) locations per document (``src << 32 | row``, -1 where none);
        of several rows, the one in the latest source."""
        n = len(code)
        if not self._code or n == 0:
            return np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        all_code, all_hash, all_loc = (np.concatenate(x) for x in (self._code, self._hash, self._loc))
        current = np.array([f == fp for f in self.fingerprints], dtype=bool)[all_loc >> 32]
        reuse = _lookup(all_code[current], all_hash[current], all_loc[current], code, hashes)
        text = reuse.copy()
        missing = reuse < 0
        if missing.any():
            text[missing] = _lookup(all_code, all_hash, all_loc, code[missing], hashes[missing])
        return reuse, text

    def read(self, locs: np.ndarray) -> pa.Table:
        """The rows at ``locs`` (in that order)."""
        src = locs >> 32
        row = locs & 0xFFFFFFFF
        parts, order = [], []
        for s in np.unique(src):
            picked = np.nonzero(src == s)[0]
            table = pq.read_table(self.sources[int(s)]).replace_schema_metadata(None)
            parts.append(table.take(pa.array(row[picked])))
            order.append(picked)
        if not parts:
            return None
        table = pa.concat_tables(parts)
        return table.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))


def _mix(code: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One 64-bit key per (code, hash): a lookup sorts and searches one array."""
    return (code.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ hashes.astype(np.int64).view(np.uint64)


def _lookup(code: np.ndarray, hashes: np.ndarray, loc: np.ndarray, q_code: np.ndarray,
            q_hash: np.ndarray) -> np.ndarray:
    """For each query (code, hash), the largest ``loc`` among rows with exactly that code
    and hash, else -1 (two pairs sharing a key are told apart by comparing both)."""
    if len(code) == 0:
        return np.full(len(q_code), -1, dtype=np.int64)
    keys = _mix(code, hashes)
    order = np.lexsort((loc, keys))          # by key, then location: the last of a run is the latest
    keys, code, hashes, loc = keys[order], code[order], hashes[order], loc[order]
    q = _mix(q_code, q_hash)
    pos = np.searchsorted(keys, q, side="right") - 1
    found = pos >= 0
    pos[~found] = 0
    found &= (keys[pos] == q) & (code[pos] == q_code) & (hashes[pos] == q_hash)
    return np.where(found, loc[pos], -1)
