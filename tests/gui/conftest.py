"""Fixtures of the app's tests: a main window over small documents the tests build."""

from __future__ import annotations

import pytest

from gui_documents import make_documents


@pytest.fixture(autouse=True)
def no_default_model(monkeypatch, tmp_path_factory):
    """Windows list models; without this each would copy the shipped default model
    into its test's private registry. Tests that want one point this elsewhere."""
    monkeypatch.setenv("FASTBIONER_DEFAULT_MODEL", str(tmp_path_factory.getbasetemp() / "no-default-model"))


@pytest.fixture
def window(qtbot):
    from fastbioner_gui.main_window import MainWindow

    w = MainWindow()
    w.show()
    yield w
    # Not qtbot.addWidget: pytest-qt would close the window before this teardown, and
    # a modified window stops on its "save changes?" question.
    w.jobs.cancel_all()
    w.projects.mark_clean()
    w.close()
    w.deleteLater()


@pytest.fixture
def loaded(window, qtbot):
    """The window with the three documents of :func:`make_documents`, the first shown,
    and the concept dictionary (built in the background) holding their concepts."""
    window.workspace.add_documents(make_documents(), origin="test")
    qtbot.waitUntil(lambda: window.row == 0, timeout=30000)
    qtbot.waitUntil(window.features["concept_lookup"].lookup.up_to_date, timeout=30000)
    return window
