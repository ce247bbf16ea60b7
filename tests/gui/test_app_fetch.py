"""File > Fetch from PubMed against a fake E-utilities server on 127.0.0.1: the fetch
runs as a background job, its abstracts join the workspace (those already open are
left alone), missing PMIDs and errors are reported in the dialog."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fastbioner.jobs import JobState

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eutils_fake import FakeEutils, closed_port_url, make_articles  # noqa: E402


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", "k3y")  # 10 requests a second: the real limiter waits less
    articles = make_articles(6)
    with FakeEutils(articles, searches={"aspirin headache": list(articles)}) as server:
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", server.url)
        yield server


def _dialog(window):
    from fastbioner_gui.dialogs.fetch_dialog import FetchDialog

    return FetchDialog(window.workspace, window.jobs, window)


def _run(dialog, qtbot):
    job = dialog.start()
    assert job is not None
    with qtbot.waitSignal(job.finished, timeout=20000):
        pass
    return job


def test_the_file_menu_offers_fetch(window):
    file_menu = window.menuBar().actions()[0].menu()
    assert window.fetch_action in file_menu.actions()


def test_fetch_by_pmids_adds_abstracts_and_names_the_missing(window, fake, qtbot):
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000, 1001\n1002 777777")
    job = _run(dialog, qtbot)
    assert job.state is JobState.DONE
    assert [window.workspace.document(r).id for r in range(len(window.workspace))] == ["1000", "1001", "1002"]
    assert window.workspace.entry(0).origin == "PubMed"
    assert window.row == 0 and "Article 1000 on aspirin." in window.view.toPlainText()
    text = dialog.report.text()
    assert "Added 3 abstracts to the workspace." in text and "1 PMID(s) not in PubMed: 777777" in text
    assert dialog.fetch_button.isEnabled()
    # Fetching again adds only what is new; what is open (and perhaps curated) stays as it is.
    dialog.pmids.setPlainText("1002 1003")
    _run(dialog, qtbot)
    assert len(window.workspace) == 4 and "1 already open were left as they are" in dialog.report.text()


def test_fetch_by_query_takes_the_first_matches(window, fake, qtbot):
    dialog = _dialog(window)
    dialog.by_query.setChecked(True)
    assert not dialog.pmids.isEnabled() and dialog.max_results.isEnabled()
    dialog.query.setText("aspirin headache")
    dialog.max_results.setValue(4)
    _run(dialog, qtbot)
    assert len(window.workspace) == 4
    assert fake.calls("esearch")[0].params["term"] == "aspirin headache"
    assert window.workspace.entry(0).origin == "PubMed query 'aspirin headache'"


def test_errors_show_in_the_dialog_and_add_nothing(window, fake, qtbot, monkeypatch):
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000 abc")
    assert dialog.start() is None and "not a PMID: 'abc'" in dialog.report.text()
    monkeypatch.setenv("FASTBIONER_EUTILS_URL", closed_port_url())
    dialog.pmids.setPlainText("1000")
    job = _run(dialog, qtbot)
    assert job.state is JobState.FAILED and len(window.workspace) == 0
    assert "cannot reach NCBI E-utilities" in dialog.report.text() and "offline" in dialog.report.text()


def test_closing_the_dialog_cancels_the_fetch(window, fake, qtbot):
    fake.slow("efetch", 30.0)  # answers only when the server stops
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    job = dialog.start()
    qtbot.waitUntil(lambda: bool(fake.calls("efetch")), timeout=10000)
    dialog.reject()
    assert job.token.cancelled
    with qtbot.waitSignal(job.finished, timeout=20000):
        fake.hang_up()  # the request in flight ends; the job stops before another
    assert job.state is JobState.CANCELLED and len(window.workspace) == 0
    assert len(fake.calls("efetch")) == 1
