"""A command whose job fails says why once (issue 67: the fetch error was printed twice,
by the progress bar's last line and by the command's error line)."""

from __future__ import annotations

from fastbioner.base.errors import InputError
from fastbioner.base.jobs import run_job
from fastbioner.cli.main import main
from fastbioner.cli.progress import ProgressBar


def test_a_failed_job_is_reported_by_the_error_line_only(capsys):
    bar = ProgressBar()

    def job(reporter):
        reporter.stage("fetch", total=1)
        raise InputError("cannot reach NCBI E-utilities (host name not found); are you offline?")

    try:
        run_job(job, bar)
    except InputError:
        pass
    assert "cannot reach NCBI" not in capsys.readouterr().err


def test_the_command_line_prints_a_fetch_error_once(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FASTBIONER_EUTILS_URL", "http://127.0.0.1:9/")   # nothing listens there
    code = main(["fetch", "--pmid", "123", "--out", str(tmp_path / "x.pubtator")])
    err = capsys.readouterr().err
    assert code != 0
    lines = [line for line in err.splitlines() if "efetch" in line or "cannot reach" in line]
    assert len(lines) == 1, err
