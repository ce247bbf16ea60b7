"""`fetch` against a hostile E-utilities server on 127.0.0.1: a reply dripped a byte at a
time, an endless chunked body, a terabyte Content-Length, a redirect to another host,
escape codes in an error reply, JSON nested 200,000 deep, a search sending more PMIDs
than asked, records nobody asked for, a server that never stops failing. Each ends with
one line (or only what was asked), bounded in time and memory.

No test measures time: a deadline's work is seen in the kind of error it leaves ("no
complete reply within 0.3 s", where a missing deadline would end in a garbled reply) and
in the server seeing the client hang up before its reply was complete (where a check
between reads would have waited for it); the patience over all tries is seen with a
clock that moves only when slept on. Each hostile reply is itself bounded, so a client
without the limit fails the test, never hangs it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from eutils_fake import FakeEutils, make_articles
from fastbioner.cli.main import main
from fastbioner.net.fetch import (
    EutilsClient,
    EutilsSettings,
    FetchError,
    RateLimiter,
    fetch_pubmed,
    loads_json,
    printable,
)
from fastbioner.io.formats import read_documents
from fastbioner.base.jobs import CancelToken, Cancelled


class FakeClock:
    """Moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def client_for(fake: FakeEutils, clock: FakeClock | None = None, **settings) -> EutilsClient:
    clock = clock or FakeClock()
    s = EutilsSettings(**{"base_url": fake.url, "attempts": 3, "timeout": 10.0, **settings})
    return EutilsClient(s, limiter=RateLimiter(1e9, clock, clock.sleep), sleep=clock.sleep, clock=clock)


def one_line(message: str) -> bool:
    return "\n" not in message and not any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in message)


# The deadline of one attempt: the whole reply, not each read -----------------------
@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_reply_dripped_byte_by_byte_is_cut_by_the_attempt_deadline(headers):
    """One byte every 0.05 s never trips a per-read timeout of 0.3 s; the attempt's
    deadline does. (Without it the 200 bytes arrive and the reply is garbled XML.)"""
    with FakeEutils() as fake:
        fake.drip("efetch", interval=0.05, limit=200, times=2, headers=headers)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake, timeout=0.3, attempts=2))
    assert str(err.value).endswith("failed after 2 attempt(s): no complete reply within 0.3 s")
    assert len(fake.calls("efetch")) == 2 and fake.hang_ups == ["efetch", "efetch"]


def test_an_endless_chunked_body_is_refused_at_the_size_limit_and_not_retried():
    with FakeEutils() as fake:
        fake.endless("efetch", limit=16 * 2**20, times=3)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake, max_reply_bytes=256 * 1024))
    assert str(err.value) == ("PubMed efetch of PMIDs 1000..1000 (batch 1 of 1) failed: the reply is larger "
                              "than 262,144 bytes; refused")
    assert len(fake.calls("efetch")) == 1


def test_a_declared_length_over_the_limit_is_refused_before_reading():
    with FakeEutils() as fake:
        fake.huge_length("efetch")
        with pytest.raises(FetchError, match=r"the reply is larger than 64 MiB; refused"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake))


# Redirects --------------------------------------------------------------------
def test_a_redirect_to_another_host_is_refused_in_one_line():
    """'localhost' is another host name than '127.0.0.1' (though the same machine): the
    second server, which the redirect names, hears nothing."""
    with FakeEutils() as fake, FakeEutils() as elsewhere:
        other = elsewhere.url.replace("127.0.0.1", "localhost") + "efetch.fcgi"
        fake.redirect("efetch", other, status=302)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake))
    message = str(err.value)
    assert one_line(message)
    port = other.split(":")[2].split("/")[0]
    assert f"redirect (HTTP 302) to another host, http://localhost:{port}; not followed" in message
    assert len(fake.calls("efetch")) == 1 and not elsewhere.requests


def test_a_redirect_on_the_same_host_is_followed():
    with FakeEutils() as fake:
        fake.redirect("efetch", fake.url.replace("/entrez/eutils/", "/moved/eutils/") + "efetch.fcgi", status=307)
        docs = fetch_pubmed(pmids=["1000"], client=client_for(fake))
    assert [d.id for d in docs] == ["1000"] and len(fake.calls("efetch")) == 2


@pytest.mark.parametrize("location", ["http://[::1", "http://127.0.0.1:99999999/x"])
def test_a_redirect_to_an_address_that_cannot_be_read_is_one_line(location):
    with FakeEutils() as fake:
        fake.redirect("efetch", location)
        with pytest.raises(FetchError, match=r"a redirect \(HTTP 302\) to an address that cannot be read"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake))


def test_endless_redirects_on_the_same_host_stop():
    with FakeEutils() as fake:
        fake.redirect("efetch", fake.url + "efetch.fcgi", times=50)
        with pytest.raises(FetchError, match="more than 3 redirects"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake))
    assert len(fake.calls("efetch")) == 4


# What the server says is escaped ------------------------------------------------
HOSTILE_TEXT = "\x1b[2J\x1b]0;owned\x07clear\u202eevil\x9b31m"


def test_escape_codes_in_an_error_reply_are_shown_escaped(monkeypatch, tmp_path, capsys):
    body = f"<eFetchResult><ERROR>{HOSTILE_TEXT}</ERROR></eFetchResult>".encode()
    with FakeEutils() as fake:
        fake.fail("efetch", status=400, body=body, reason="Bad \x1b[31mRequest")
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake))
        fake.fail("efetch", status=400, body=body)
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        assert main(["fetch", "--pmid", "1000", "--out", str(tmp_path / "x.jsonl"), "--quiet"]) == 2
    message = str(err.value)
    assert one_line(message) and "\u202e" not in message
    assert "HTTP 400 Bad \\x1b[31mRequest" in message
    assert "\\x1b[2J\\x1b]0;owned\\x07clear\\u202eevil\\x9b31m" in message
    printed = capsys.readouterr().err
    assert "\x1b" not in printed and "\x07" not in printed and "\\x1b[2J" in printed


def test_printable_cuts_long_text_and_joins_lines():
    assert printable("a\n\tb" + "x" * 500, limit=10) == "a bxxxxxxx…"


# JSON ---------------------------------------------------------------------------
def test_json_nested_200000_deep_is_one_line_not_a_recursion_error():
    with FakeEutils() as fake:
        fake.deep_json(200_000, times=2)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(query="q", client=client_for(fake, attempts=2))
    assert str(err.value) == ("PubMed search for 'q' failed after 2 attempt(s): the reply's JSON is "
                              "nested deeper than 64 levels")


def test_the_depth_count_ignores_brackets_inside_strings():
    deep_string = '"' + "[" * 1000 + '\\"{' + '"'
    assert loads_json(f'{{"a": {deep_string}, "b": [[1]]}}'.encode()) == {"a": "[" * 1000 + '"{', "b": [[1]]}
    with pytest.raises(ValueError, match="nested deeper than 3 levels"):
        loads_json(b'{"a": [[[1]]]}', max_depth=3)


def test_a_deep_json_error_reply_gives_its_status_line():
    with FakeEutils() as fake:
        fake.fail("esearch", status=400, body=b"[" * 4000 + b"]" * 4000)
        with pytest.raises(FetchError, match=r"NCBI answered HTTP 400 Bad Request$"):
            fetch_pubmed(query="q", client=client_for(fake))


# Never more, never other records than asked ----------------------------------------
def test_a_search_sending_2000_pmids_for_max_5_fetches_5():
    articles = make_articles(2000)
    with FakeEutils(articles, searches={"q": list(articles)}, ignore_retmax=True) as fake:
        docs = fetch_pubmed(query="q", max_results=5, client=client_for(fake))
    assert [d.id for d in docs] == list(articles)[:5] and docs.matches == 2000
    (efetch,) = fake.calls("efetch")
    assert efetch.params["id"].split(",") == list(articles)[:5]


def test_the_command_writes_5_of_2000_pmids_sent(monkeypatch, tmp_path):
    articles = make_articles(2000)
    with FakeEutils(articles, searches={"q": list(articles)}, ignore_retmax=True) as fake:
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        out = tmp_path / "q.jsonl"
        assert main(["fetch", "--query", "q", "--max", "5", "--out", str(out), "--quiet"]) == 0
    assert [d.id for d in read_documents(out)] == list(articles)[:5]


@pytest.mark.parametrize("bad", ["\u0661\u0662\u0663", "\uff11\uff12\uff13", "123\n", "12x", "0", ["1"]])
def test_a_search_listing_something_that_is_not_a_pmid_is_refused(bad):
    with FakeEutils() as fake:
        import json

        fake.fail("esearch", status=200, body=json.dumps({"esearchresult": {"count": "2",
                                                                            "idlist": ["1000", bad]}}).encode())
        with pytest.raises(FetchError, match=r"the reply lists .* among the PMIDs, which is not a PMID"):
            fetch_pubmed(query="q", client=client_for(fake))
    assert not fake.calls("efetch")


def test_records_nobody_asked_for_are_left_out_and_named(monkeypatch, tmp_path, capsys):
    unasked = {"4242": ("Not asked", "Someone else's abstract."), "1001": ("Also not asked", "x")}
    with FakeEutils(make_articles(3), unasked=unasked) as fake:
        docs = fetch_pubmed(pmids=["1000"], client=client_for(fake))
        assert [d.id for d in docs] == ["1000"] and sorted(docs.unasked) == ["1001", "4242"]
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        out = tmp_path / "one.pubtator"
        assert main(["fetch", "--pmid", "1000", "--out", str(out), "--quiet"]) == 0
    assert [d.id for d in read_documents(out)] == ["1000"]
    assert "the server sent 2 record(s) not asked for (PMID(s) 4242, 1001); left out" in capsys.readouterr().err


def test_a_record_sent_twice_is_kept_once():
    with FakeEutils(make_articles(2), unasked={"1000": ("Article 1000 again", "x")}) as fake:
        docs = fetch_pubmed(pmids=["1000", "1001"], client=client_for(fake))
    assert [d.id for d in docs] == ["1000", "1001"] and docs[0].title == "Article 1000 on aspirin."


# Patience over all tries: a fetch gives up within it --------------------------------
def test_a_server_that_always_fails_is_given_up_within_the_patience():
    clock = FakeClock()
    with FakeEutils() as fake:
        fake.fail("efetch", status=503, times=20)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake, clock, attempts=10, backoff=4.0, patience=10.0))
    # tries at 0 and 4 s; the next back-off (8 s) would end past 10 s: no third try
    assert len(fake.calls("efetch")) == 2 and clock.now == pytest.approx(4.0)
    assert str(err.value).endswith("HTTP 503 Service Unavailable; gave up after 2 attempt(s), as no more fit "
                                   "in a fetch's 10 s limit")


def test_a_retry_after_beyond_the_patience_gives_up_at_once():
    clock = FakeClock()
    with FakeEutils() as fake:
        fake.fail("efetch", status=503, headers={"Retry-After": "3600"})
        with pytest.raises(FetchError, match=r"HTTP 503 Service Unavailable \(the server asked to wait 3600 s\); "
                                             "gave up after 1 attempt"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake, clock))
    assert clock.now == 0 and len(fake.calls("efetch")) == 1


def test_the_search_and_the_first_batch_share_one_patience():
    clock = FakeClock()
    with FakeEutils(searches={"q": ["1000"]}) as fake:
        fake.fail("esearch", status=503)
        fake.fail("efetch", status=503, times=5)
        with pytest.raises(FetchError, match=r"efetch .* gave up after 1 attempt"):
            fetch_pubmed(query="q", client=client_for(fake, clock, attempts=5, backoff=6.0, patience=10.0))
    assert len(fake.calls("esearch")) == 2 and len(fake.calls("efetch")) == 1


def test_each_batch_that_arrives_gives_the_next_its_own_patience():
    clock = FakeClock()
    with FakeEutils() as fake:
        fake.fail("efetch", status=503)   # 1000 at 0 s
        fake.slow("efetch", 0.0)          # 1000 again at 6 s: it arrives
        fake.fail("efetch", status=503)   # 1001 at 6 s
        docs = fetch_pubmed(pmids=["1000", "1001"],
                            client=client_for(fake, clock, attempts=5, backoff=6.0, patience=10.0, batch_size=1))
    # 1001's second try at 12 s is within 10 s of 1000's arrival (not of the start)
    assert [d.id for d in docs] == ["1000", "1001"] and clock.now == pytest.approx(12.0)
    assert len(fake.calls("efetch")) == 4


# Cancel cuts a request under way -------------------------------------------------
def test_cancel_cuts_a_request_under_way():
    """The server answers only after 30 s (or when stopped); cancel comes as the request
    arrives. Without a cut the reply would come and the job would end done."""
    token = CancelToken()
    with FakeEutils() as fake:
        fake.slow("efetch", 30.0)
        fake.on_request = lambda _r: token.cancel()
        with pytest.raises(Cancelled):
            fetch_pubmed(pmids=["1000"], client=client_for(fake, timeout=600.0, attempts=1), cancel=token)
    assert len(fake.calls("efetch")) == 1
    assert fake.hang_ups == ["efetch"]  # the request was cut, not left to end on its own


def test_ctrl_c_stops_the_command_mid_request(monkeypatch, tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    with FakeEutils() as fake:
        fake.slow("efetch", 30.0)
        fake.on_request = lambda _r: os.kill(os.getpid(), signal.SIGINT)
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        assert main(["fetch", "--pmid", "1000", "--out", str(out), "--quiet"]) == 130
    assert f"cancelled; {out} not written" in capsys.readouterr().err and not out.exists()
    assert fake.hang_ups == ["efetch"]  # the first Ctrl-C cut the request under way


# --out is checked before anything is downloaded ------------------------------------
@pytest.mark.parametrize("case", ["folder", "parent-is-a-file", "unwritable-folder"])
def test_a_bad_out_is_refused_before_any_request(case, monkeypatch, tmp_path, capsys):
    if case == "folder":
        out = tmp_path / "a.jsonl"
        out.mkdir()
        expected = "is a directory"
    elif case == "parent-is-a-file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "a.jsonl"
        expected = "is not a folder"
    else:
        if os.geteuid() == 0:  # root writes in a read-only folder, but not in /proc
            out = Path(tmp_path.anchor, "proc", "fastbioner-fetch-test.jsonl")
        else:
            folder = tmp_path / "ro"
            folder.mkdir()
            folder.chmod(0o500)
            out = folder / "a.jsonl"
        expected = "cannot write in"
    with FakeEutils() as fake:
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        assert main(["fetch", "--pmid", "1000", "--out", str(out), "--quiet"]) == 2
    assert expected in capsys.readouterr().err
    assert not fake.requests
