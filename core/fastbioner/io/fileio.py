"""Reading text files with clear errors, and writing them atomically."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import tempfile
import threading
from pathlib import Path
from typing import IO, Iterable, Iterator

from fastbioner.base.errors import FastBioNERError, InputError


# A file read whole (BioC XML, a project, a PMID list) may hold at most this many
# bytes: a character device or a sparse 2 GB file is refused, not read into memory.
# Formats read line by line stream instead (docs/reference/limits.md).
WHOLE_FILE_BYTES = 256 << 20


def open_input(path: str | Path) -> io.BufferedReader:
    """Open a file to read its bytes (buffered). A regular file, a named pipe or
    ``/dev/stdin`` (read once, as it comes) are fine; InputError, one line naming the
    file, for a folder, a missing file, a character or block device (``/dev/zero``,
    a terminal) or a socket, which are not documents and may never end."""
    path = Path(path)
    check_input(path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None


def check_input(path: str | Path) -> None:
    """The checks of :func:`open_input`, without opening (a pipe opened and closed
    would lose what its writer sends): said before a model loads."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory, expected a file", path)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        kind = ("a character device" if stat.S_ISCHR(st.st_mode) else
                "a block device" if stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "this kind of file")
        raise InputError(f"cannot read {kind}: give a file, a pipe or /dev/stdin fed from one", path)


def encoding_problem(head: bytes) -> str | None:
    """Why the first bytes of a file say it is not UTF-8 text, or None: a UTF-16 or
    UTF-32 byte-order mark, or NUL bytes interleaved the way UTF-16/UTF-32 text
    without one lays out ASCII (read as UTF-8 it would be one NUL-ridden document),
    or mostly NUL bytes (binary data, a sparse file). A stray NUL or two is left to
    the readers, as before. Such text is refused rather than decoded on a guess:
    the message says how to convert it."""
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if head.startswith(bom):
            return _convert_hint(name, "(it starts with a byte-order mark)")
    sample = head[:4096]
    nuls = sample.count(0)
    if len(sample) < 4 or nuls == 0:
        return None

    def nul_share(start: int, step: int) -> float:
        part = sample[start::step]
        return part.count(0) / len(part) if part else 0.0

    by4 = [nul_share(i, 4) for i in range(4)]
    if min(by4[1:]) >= 0.9 and by4[0] < 0.5:
        return _convert_hint("UTF-32LE", "without a byte-order mark")
    if min(by4[:3]) >= 0.9 and by4[3] < 0.5:
        return _convert_hint("UTF-32BE", "without a byte-order mark")
    even, odd = nul_share(0, 2), nul_share(1, 2)
    if odd >= 0.6 and even < 0.3:
        return _convert_hint("UTF-16LE", "without a byte-order mark")
    if even >= 0.6 and odd < 0.3:
        return _convert_hint("UTF-16BE", "without a byte-order mark")
    if nuls / len(sample) >= 0.3:
        return "binary data (mostly NUL bytes), not text"
    return None


def _convert_hint(name: str, how: str) -> str:
    return (f"looks like {name} text {how}, not UTF-8: convert it first "
            f"(iconv -f {name} -t UTF-8 FILE > FILE.utf8)")


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """Read a UTF-8 text file (a BOM is dropped, CRLF and CR become LF).

    Raises :class:`InputError` naming the file, and the line of the first bad byte,
    for a directory, a missing file, a device (see :func:`open_input`), UTF-16/32
    text or bytes that are not UTF-8, and a file over ``max_bytes`` (default
    :data:`WHOLE_FILE_BYTES`), which is refused rather than read into memory.
    """
    path = Path(path)
    limit = WHOLE_FILE_BYTES if max_bytes is None else max_bytes
    with open_input(path) as fh:
        try:
            # A regular file says its size (a sparse 2 GB file is refused unread); a
            # pipe is read up to the limit.
            too_big = os.fstat(fh.fileno()).st_size > limit
            data = b"" if too_big else fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    if too_big or len(data) > limit:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
        raise InputError(f"larger than the {size} a file read whole may hold (see docs/reference/limits.md); "
                         f"split it", path)
    problem = encoding_problem(data[:4096])
    if problem:
        raise InputError(problem, path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                         path, line) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


# Most file systems refuse a name longer than this (in bytes): said before writing.
MAX_NAME_BYTES = 255
# A temporary file is ``.NAME.fastbioner-PID.RANDOM.tmp``: the marker says this project
# made it and the process id whether its writer still runs. One left by a process that
# is gone is removed by the next write of the same name; any other name (a user's own
# ``.out.jsonl.backup.tmp``, whatever its age) is never touched.
TEMP_MARKER = "fastbioner-"
_umask_lock = threading.Lock()
_TEMP_REST = re.compile(re.escape(TEMP_MARKER) + r"([0-9]+)\.[A-Za-z0-9_]+\.tmp")


def current_umask() -> int:
    with _umask_lock:  # os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def check_not_an_input(out: str | Path, inputs: Iterable[str | Path]) -> None:
    """InputError, one line, when writing ``out`` would write where a command reads:
    ``out`` is one of ``inputs`` (the same path, a symbolic link to it, or a hard link:
    the same inode), or lies inside an input folder (read recursively: the output would
    replace a file being read, or be read back by the next run), or is a file of such a
    folder under another name. Every command that reads inputs and writes a file or a
    folder asks this first (``convert``, ``rank``, ``tag``, ``agree --json``,
    ``models export``)."""
    out = Path(out)
    target = _resolved(out)
    out_inode = _inode(out)
    for src in map(Path, inputs):
        real = _resolved(src)
        if _is_folder(src):
            if real == target or real in target.parents:
                raise InputError(f"the output lies inside the input folder {src}; write it outside that folder",
                                 out)
            if out_inode is not None and any(_inode(f) == out_inode for f in _files_under(src)):
                raise InputError(f"the output is a file of the input folder {src} (a link to it); "
                                 f"write it outside that folder", out)
        elif real == target or (out_inode is not None and _inode(src) == out_inode):
            raise InputError("output would overwrite the input; choose another file", out)


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _inode(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names (links followed); None when absent."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _files_under(folder: Path) -> Iterator[Path]:
    for parent, _dirs, files in os.walk(folder):
        for name in files:
            yield Path(parent) / name


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def output_target(path: str | Path) -> Path:
    """The file a write to ``path`` replaces, checked before anything is written:
    a symbolic link is written through (its target is replaced, the link stays);
    InputError, one line, for a folder, a FIFO or device, a link loop, a name over
    :data:`MAX_NAME_BYTES` bytes or a parent that is a file."""
    path = Path(path)
    if len(os.fsencode(path.name)) > MAX_NAME_BYTES:
        raise InputError(f"cannot write: the file name is longer than {MAX_NAME_BYTES} bytes", path)
    try:
        return _checked_target(path)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None


def _checked_target(path: Path) -> Path:
    if path.is_symlink():
        try:
            path = Path(os.path.realpath(path, strict=True)) if path.exists() else path.resolve()
        except (OSError, RuntimeError):
            raise InputError("cannot write: a symbolic link loop", path) from None
    if path.is_dir():
        raise InputError("is a directory, expected a file to write", path)
    if path.exists() and not path.is_file():
        raise InputError("cannot write: not a regular file (a FIFO, device or socket); choose a file name",
                         path)
    if len(os.fsencode(path.name)) > MAX_NAME_BYTES:  # a link's target may be long
        raise InputError(f"cannot write: the file name is longer than {MAX_NAME_BYTES} bytes", path)
    for parent in [path.parent, *path.parent.parents]:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise InputError(f"cannot write: {parent} is not a folder", path)
            break
    return path


def _temp_prefix(name: str) -> str:
    short = os.fsencode(name)[:150].decode("utf-8", errors="ignore") or "out"
    return f".{short}."


def sweep_stale_temps(path: Path) -> None:
    """Remove temporary files (``.NAME.fastbioner-PID.*.tmp``) that writes of ``path``
    left when their process died (kill -9, power loss); those of a live process, and
    files the project did not name, stay."""
    prefix = _temp_prefix(path.name)
    try:
        candidates = [p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(".tmp")]
    except OSError:
        return
    for tmp in candidates:
        # Only ``fastbioner-PID.random.tmp``; anything else (``.a.jsonl.bak.fastbioner-1.x.tmp``
        # is another output's, ``.a.jsonl.mine.tmp`` the user's) stays.
        m = _TEMP_REST.fullmatch(tmp.name[len(prefix):])
        if m is None:
            continue
        try:
            if process_alive(int(m.group(1))) or not tmp.is_file() or tmp.is_symlink():
                continue
            tmp.unlink()
        except OSError:
            continue


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (or may: one of another user's, a number out of range)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process killed (kill -9) but not yet reaped by its parent: it still answers
    kill(pid, 0) but writes nothing any more (Linux; elsewhere False)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"Z"


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place only when the
    block ends without error: the output is complete or absent, never half-written.

    The file gets the mode a new file gets under the umask, or keeps the mode of the
    file it replaces; a symbolic link is written through to its target. Problems
    with the path (see :func:`output_target`) and failed writes (no space, no
    permission) are one-line :class:`InputError`\\ s naming the output."""
    path = output_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder {path.parent}: {exc.strerror or exc}", path) from None
    sweep_stale_temps(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{_temp_prefix(path.name)}{TEMP_MARKER}{os.getpid()}.",
                                   suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write in {path.parent}: {exc.strerror or exc}", path) from None
    try:
        try:
            old_mode = path.stat().st_mode & 0o7777
        except OSError:
            old_mode = 0o666 & ~current_umask()
        with (os.fdopen(fd, mode) if "b" in mode else os.fdopen(fd, mode, encoding=encoding, newline="")) as fh:
            if hasattr(os, "fchmod"):  # mkstemp makes it 0600 whatever the umask
                os.fchmod(fh.fileno(), old_mode)
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
        raise


def write_json_record(path: str | Path, record: object) -> None:
    """A command's ``--json`` figures, written whole or not at all; a folder that cannot
    take it is one line naming the file."""
    try:
        with atomic_write(path) as fh:
            fh.write(json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise FastBioNERError(f"{path}: cannot write ({exc.strerror or exc})") from None


def write_text(path: str | Path, text: str) -> None:
    """``text`` written to ``path`` whole or not at all (:func:`atomic_write`)."""
    with atomic_write(path) as fh:
        fh.write(text)
