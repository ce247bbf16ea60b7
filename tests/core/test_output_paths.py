"""Output paths (issue 13): one-line errors for paths that cannot be written, links
written through, modes from the umask, and no temporary file left behind by a
signal or by a process that died."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fastbioner.cli.main import main
from fastbioner.base.errors import InputError
from fastbioner.io.fileio import atomic_write

REPO = Path(__file__).resolve().parents[2]
PUBTATOR = "1|t|Cocaine.\n1|a|Seizures.\n1\t0\t7\tCocaine\tChemical\tD1\n\n"


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.pubtator"
    path.write_text(PUBTATOR, encoding="utf-8")
    return path


def convert_error(src, out, capsys) -> str:
    assert main(["convert", str(src), str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err.strip()


def test_a_parent_that_is_a_file_is_one_line(src, tmp_path, capsys):
    assert convert_error(src, src / "x.jsonl", capsys).endswith(f"cannot write: {src} is not a folder")
    assert convert_error(src, src / "deeper" / "x.jsonl", capsys).endswith(f"cannot write: {src} is not a folder")


def test_a_name_over_255_bytes_is_one_line(src, tmp_path, capsys):
    out = tmp_path / ("é" * 130 + ".jsonl")  # 266 bytes in UTF-8
    assert convert_error(src, out, capsys).endswith("cannot write: the file name is longer than 255 bytes")
    out = tmp_path / ("x" * 249 + ".jsonl")  # 255 bytes: fine, although its temporary file's name is longer
    assert main(["convert", str(src), str(out)]) == 0 and out.is_file()


def test_an_unwritable_folder_is_one_line(src, capsys):
    # /proc takes no new files, for root too (a chmod'ed folder would not stop root).
    assert "cannot write in /proc" in convert_error(src, Path("/proc/fastbioner-out.jsonl"), capsys)
    assert "cannot create the folder /proc/fastbioner" in convert_error(
        src, Path("/proc/fastbioner/out.jsonl"), capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(src, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert "Permission denied" in convert_error(src, folder / "x.jsonl", capsys)
    finally:
        folder.chmod(0o755)


def test_a_fifo_output_is_refused_not_replaced(src, tmp_path, capsys):
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    assert "not a regular file" in convert_error(src, fifo, capsys)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_symlink_output_is_written_through_to_its_target(src, tmp_path, capsys):
    target = tmp_path / "data" / "real.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert main(["convert", str(src), str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert '"Cocaine."' in target.read_text() or '"id": "1"' in target.read_text()
    assert [p.name for p in target.parent.iterdir()] == ["real.jsonl"]  # no temporary file left
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    assert "symbolic link loop" in convert_error(src, loop, capsys)


def test_files_honour_the_umask_and_keep_an_existing_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "new.txt") as fh:
            fh.write("x")
        assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
        existing = tmp_path / "existing.txt"
        existing.write_text("old")
        existing.chmod(0o644)
        with atomic_write(existing) as fh:
            fh.write("new")
        assert stat.S_IMODE(existing.stat().st_mode) == 0o644 and existing.read_text() == "new"
    finally:
        os.umask(old)


def test_stale_temporary_files_of_dead_processes_are_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    pid = dead.stdout.strip()
    stale = tmp_path / f".out.txt.fastbioner-{pid}.abc123.tmp"
    stale.write_text("left by kill -9")
    live = tmp_path / f".out.txt.fastbioner-{os.getppid()}.def456.tmp"  # a live process's write in progress
    live.write_text("being written")
    other = tmp_path / f".out.txt.bak.fastbioner-{pid}.x1.tmp"  # another output's (out.txt.bak)
    other.write_text("not ours")
    # The user's own files beside the output, hours old: no project marker, never swept.
    mine = [tmp_path / ".out.txt.backup.tmp", tmp_path / f".out.txt.{pid}.abc123.tmp",
            tmp_path / ".out.txt.k2j4h5g6.tmp"]
    for path in mine:
        path.write_text("the user's")
        os.utime(path, (path.stat().st_atime - 7200, path.stat().st_mtime - 7200))
    with atomic_write(tmp_path / "out.txt") as fh:
        fh.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "out.txt",
                                                                 *(p.name for p in mine)])
    assert all(p.read_text() == "the user's" for p in mine)


def test_an_output_error_inside_a_write_is_one_line(tmp_path):
    with pytest.raises(InputError, match="cannot write: No space left on device"):
        with atomic_write(tmp_path / "out.txt"):
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_leave_no_temporary_file(src, tmp_path, signum):
    """A convert stopped by a signal while it writes: no output, no ``.NAME.*.tmp``."""
    out = tmp_path / "out.jsonl"
    script = textwrap.dedent(f"""
        import sys, threading
        from fastbioner.cli.main import main
        from fastbioner.io.formats import jsonl
        real = jsonl.document_to_dict
        def stuck(doc):
            print("writing", flush=True)   # the temporary file exists now
            threading.Event().wait()       # until the signal arrives
        jsonl.document_to_dict = stuck
        sys.exit(main(["convert", {str(src)!r}, {str(out)!r}]))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline() == "writing\n"
        assert any(p.name.startswith(".out.jsonl.") for p in tmp_path.iterdir())
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum
    assert f"terminated by signal {int(signum)}" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.pubtator"]


def test_tag_checks_its_output_path_before_loading_a_model(src, capsys):
    assert main(["tag", str(src), "--out", str(src / "x.jsonl"), "--format", "jsonl", "--model", "no-such-model",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"fastbioner: error: {src / 'x.jsonl'}: cannot write: {src} is not a folder"


def _too_long(tmp_path: Path) -> str:
    return str(tmp_path / ("n" * 300 + ".pubtator"))  # one name past the 255 bytes a file system allows


@pytest.mark.parametrize("argv", [
    lambda src, bad, out: ["stats", bad],
    lambda src, bad, out: ["convert", bad, out],
    lambda src, bad, out: ["convert", src, bad],
    lambda src, bad, out: ["agree", src, bad],
    lambda src, bad, out: ["agree", src, src, "--json", bad],
])
def test_a_path_the_system_cannot_look_up_is_one_line(src, tmp_path, capsys, argv):
    """A file name too long for the file system (ENAMETOOLONG, which pathlib's is_dir and
    is_file raise rather than answer False) is one line naming it, exit 2, no traceback."""
    out = str(tmp_path / "o.jsonl")
    assert main(argv(str(src), _too_long(tmp_path), out)) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastbioner: error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and "n" * 20 in err and not Path(out).exists()


def test_a_symlink_loop_given_as_a_path_flag_is_resolved_without_a_traceback(tmp_path):
    """Path flags are made absolute; a link loop (RuntimeError in Path.resolve) is kept
    as given, for the reader to name."""
    from fastbioner.cli.config_flags import _resolved

    loop = tmp_path / "loop.pubtator"
    loop.symlink_to(loop)
    assert _resolved(str(loop)) == str(loop)
    assert _resolved(_too_long(tmp_path)) == _too_long(tmp_path)
