"""File > Fetch from PubMed against a fake E-utilities server on 127.0.0.1: the fetch
runs as a background job, its abstracts join the workspace (those already open are
left alone and not downloaded again), missing PMIDs and errors are reported in the
dialog, a query says how many matched in all, Cancel cuts a request under way, and a
retry's "trying again" gives way to the try itself."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from fastbioner.base.jobs import JobState

from eutils_fake import FakeEutils, closed_port_url, make_articles


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
    assert window.commands["file.fetch"] in file_menu.actions()


def test_fetch_by_pmids_adds_abstracts_and_names_the_missing(window, fake, qtbot):
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000, 1001\n1002 777777")
    job = _run(dialog, qtbot)
    assert job.state is JobState.DONE
    assert [window.workspace.document(r).id for r in range(len(window.workspace))] == ["1000", "1001", "1002"]
    assert window.workspace.entry(0).origin == "PubMed"
    assert window.row == 0 and "Article 1000 on aspirin." in window.view.toPlainText()
    text = dialog.report.text()
    assert text == "3 abstracts added to the workspace. 1 PMID not in PubMed: 777777."
    assert dialog.fetch_button.isEnabled() and dialog.cancel_button.isHidden()
    # Fetching again adds only what is new; what is open (and perhaps curated) stays as
    # it is, and is not downloaded again.
    dialog.pmids.setPlainText("1002 1003")
    _run(dialog, qtbot)
    assert len(window.workspace) == 4
    assert dialog.report.text() == ("1 abstract added to the workspace. "
                                    "1 already open was left as it is (not downloaded again).")
    assert fake.calls("efetch")[-1].params["id"] == "1003"
    dialog.pmids.setPlainText("1000 1001 1003")
    _run(dialog, qtbot)
    assert dialog.report.text() == ("0 abstracts added to the workspace. "
                                    "3 already open were left as they are (not downloaded again).")
    assert len(fake.calls("efetch")) == 2  # nothing left to ask for: no request


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
    assert dialog.report.text() == "6 matched in PubMed, 4 abstracts added to the workspace."
    dialog.max_results.setValue(5)
    _run(dialog, qtbot)
    assert dialog.report.text() == ("6 matched in PubMed, 1 abstract added to the workspace. "
                                    "4 already open were left as they are (not downloaded again).")
    assert fake.calls("efetch")[-1].params["id"] == "1004"


def test_errors_show_in_the_dialog_and_add_nothing(window, fake, qtbot, monkeypatch):
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000 abc")
    assert dialog.start() is None and "not a PMID: 'abc'" in dialog.report.text()
    monkeypatch.setenv("FASTBIONER_EUTILS_URL", closed_port_url())
    dialog.pmids.setPlainText("1000")
    job = _run(dialog, qtbot)
    assert job.state is JobState.FAILED and len(window.workspace) == 0
    assert "cannot reach NCBI E-utilities" in dialog.report.text() and "offline" in dialog.report.text()


def test_cancel_fetch_cuts_the_request_under_way(window, fake, qtbot):
    """The server would answer only after 30 s; Cancel fetch ends the job well before
    (the 20 s wait below would run out otherwise) and the server sees the client go."""
    fake.slow("efetch", 30.0)
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    job = dialog.start()
    assert not dialog.cancel_button.isHidden() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: bool(fake.calls("efetch")), timeout=10000)
    with qtbot.waitSignal(job.finished, timeout=20000):
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    assert job.state is JobState.CANCELLED and len(window.workspace) == 0
    assert dialog.report.text() == "Fetch cancelled; nothing was added."
    assert dialog.cancel_button.isHidden() and dialog.fetch_button.isEnabled()
    qtbot.waitUntil(lambda: fake.hang_ups == ["efetch"], timeout=10000)


def test_the_retry_message_gives_way_when_the_next_try_starts(window, fake, qtbot):
    fake.fail("efetch", status=503)
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    shown = []
    job = dialog.start()
    job.progress.connect(lambda _e: shown.append(dialog.report.text()))
    with qtbot.waitSignal(job.finished, timeout=20000):
        pass
    waiting = next(i for i, t in enumerate(shown) if "trying again in 1 s" in t)
    assert "try 2 of 5 (the last failed: HTTP 503 Service Unavailable)" in shown[waiting + 1]
    assert job.state is JobState.DONE and dialog.report.text() == "1 abstract added to the workspace."


def test_a_server_that_never_answers_fails_within_the_fetch_limit(window, fake, qtbot, monkeypatch):
    """The CLI's limits: each try has ``timeout`` in all, the fetch ``patience`` (shrunk
    here to 0.3 s and 1 s); the dialog shows the one line."""
    from fastbioner.net import fetch

    settings = fetch.EutilsSettings.from_env
    monkeypatch.setattr(fetch.EutilsSettings, "from_env", classmethod(
        lambda cls, **kw: fetch.replace(settings(**kw), timeout=0.3, patience=1.0, backoff=0.01)))
    fake.slow("efetch", 30.0, times=10)
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    job = _run(dialog, qtbot)
    assert job.state is JobState.FAILED and len(window.workspace) == 0
    assert "no complete reply within" in dialog.report.text() and "gave up" in dialog.report.text()
    assert fake.hang_ups and set(fake.hang_ups) == {"efetch"}  # each try was cut, not waited out


def test_server_words_are_shown_as_text_not_markup(window, fake, qtbot):
    fake.fail("efetch", status=400, body=b'{"error": "<img src=x> \\u001b[31m"}')
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    _run(dialog, qtbot)
    text = dialog.report.text()
    assert "&lt;img src=x&gt;" in text and "<img" not in text and "\\x1b[31m" in text


def test_closing_the_dialog_cancels_the_fetch(window, fake, qtbot):
    fake.slow("efetch", 30.0)  # answers only when the server stops
    dialog = _dialog(window)
    dialog.pmids.setPlainText("1000")
    job = dialog.start()
    qtbot.waitUntil(lambda: bool(fake.calls("efetch")), timeout=10000)
    with qtbot.waitSignal(job.finished, timeout=20000):  # the request in flight is cut
        dialog.reject()
    assert job.token.cancelled
    assert job.state is JobState.CANCELLED and len(window.workspace) == 0
    assert len(fake.calls("efetch")) == 1
    qtbot.waitUntil(lambda: fake.hang_ups == ["efetch"], timeout=10000)
