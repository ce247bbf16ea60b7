"""A full disk under a command that saves weights is one line, not safetensors' traceback
(issue 70: compact and train-teacher into a full disk, found by the trouble sweep)."""

from __future__ import annotations

import argparse

import pytest

from fastbioner.cli import main as cli_main


class SafetensorError(Exception):
    """What safetensors raises (its class lives in a compiled module: matched by name)."""


def _parser_raising(exc: BaseException):
    def build() -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser()

        def func(args):
            raise exc
        parser.set_defaults(func=func)
        return parser
    return build


def test_a_full_disk_while_saving_weights_is_one_line(monkeypatch, capsys):
    exc = SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
    monkeypatch.setattr(cli_main, "build_parser", _parser_raising(exc))
    assert cli_main.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fastbioner: error: cannot save the model's weights there (No space left on device (os error 28))"]


@pytest.mark.parametrize("exc", [SafetensorError("Error while deserializing header: HeaderTooLarge"),
                                 RuntimeError("I/O error: not safetensors'")])
def test_other_errors_are_not_taken_for_a_refused_write(monkeypatch, exc):
    monkeypatch.setattr(cli_main, "build_parser", _parser_raising(exc))
    with pytest.raises(type(exc)):
        cli_main.main([])
