"""Fetching from PubMed against a fake E-utilities server on the loopback address:
batches, queries, NCBI's parameters, retries and back-off, errors in one line, the
rate limit (with an injected clock), cancel, and the `fetch` command. No test reaches
the real network; none measures time (the clock and back-off sleeps are injected)."""

from __future__ import annotations

import pytest

from eutils_fake import FakeEutils, closed_port_url, make_articles, real_records
from fastbioner.cli.main import main
from fastbioner.base.errors import InputError
from fastbioner.net.fetch import (
    BATCH_SIZE, EutilsClient, EutilsSettings, FetchError, RateLimiter, fetch_pubmed, parse_pmids,
)
from fastbioner.io.formats import read_documents
from fastbioner.base.jobs import CancelToken, Cancelled, JobState


class FakeClock:
    """A clock that only moves when slept on: request times without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def client_for(fake: FakeEutils, clock: FakeClock | None = None, backoffs: list | None = None,
               **settings) -> EutilsClient:
    clock = clock or FakeClock()
    settings = {"base_url": fake.url, "attempts": 3, "timeout": 10.0, **settings}
    sleep = backoffs.append if backoffs is not None else (lambda _s: None)
    s = EutilsSettings(**settings)
    return EutilsClient(s, limiter=RateLimiter(s.requests_per_second, clock, clock.sleep), sleep=sleep)


def test_fetch_by_pmids_in_batches_keeps_order_and_skips_unknown_pmids():
    articles = make_articles(2 * BATCH_SIZE + 50)
    asked = list(articles)[::-1] + ["999999"]  # reversed, plus one PubMed lacks
    events = []
    with FakeEutils(articles) as fake:
        docs = fetch_pubmed(pmids=asked, client=client_for(fake), on_event=events.append)
    assert [d.id for d in docs] == asked[:-1]
    first = docs[0]
    assert first.title == f"Article {asked[0]} on aspirin." and "Aspirin caused headache" in first.text
    assert first.metadata["journal"] == "Fake J"
    fetches = fake.calls("efetch")
    assert [len(r.params["id"].split(",")) for r in fetches] == [BATCH_SIZE, BATCH_SIZE, 51]
    assert all(r.method == "POST" and r.params["db"] == "pubmed" and r.params["rettype"] == "abstract"
               and r.params["retmode"] == "xml" and r.params["tool"] == "fastbioner" for r in fetches)
    assert not fake.calls("esearch")
    steps = [e.step for e in events if e.stage == "fetch" and not e.finished]
    assert steps == sorted(steps) and steps[-1] == len(asked)
    assert events[-1].state is JobState.DONE


def test_fetch_by_query_searches_then_fetches_at_most_max():
    articles = make_articles(8)
    with FakeEutils(articles, searches={"aspirin headache": list(articles)}) as fake:
        docs = fetch_pubmed(query="aspirin headache", max_results=5, client=client_for(fake))
    assert [d.id for d in docs] == list(articles)[:5]
    (search,) = fake.calls("esearch")
    assert search.params["term"] == "aspirin headache" and search.params["retmax"] == "5"
    assert search.params["retmode"] == "json"
    assert fake.calls("efetch")[0].params["id"] == ",".join(list(articles)[:5])


def test_a_query_without_matches_fetches_nothing():
    with FakeEutils() as fake:
        assert fetch_pubmed(query="nothing matches", client=client_for(fake)) == []
    assert not fake.calls("efetch")


def test_email_and_api_key_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", "k3y")
    monkeypatch.setenv("NCBI_EMAIL", "curator@example.org")
    with FakeEutils() as fake:
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        settings = EutilsSettings.from_env()
        assert settings.base_url == fake.url and settings.requests_per_second == 10
        docs = fetch_pubmed(pmids=["1000"], client=EutilsClient(settings, sleep=lambda _s: None))
    assert [d.id for d in docs] == ["1000"]
    params = fake.calls("efetch")[0].params
    assert params["api_key"] == "k3y" and params["email"] == "curator@example.org"


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:port/", "file:///etc/passwd", "127.0.0.1"])
def test_an_eutils_address_that_is_not_an_http_url_is_one_line(monkeypatch, tmp_path, capsys, url):
    """FASTBIONER_EUTILS_URL that urllib cannot split (an unclosed IPv6 bracket, a port
    of letters) or that is not http(s): one line naming the variable, nothing written."""
    monkeypatch.setenv("FASTBIONER_EUTILS_URL", url)
    out = tmp_path / "x.jsonl"
    assert main(["fetch", "--pmid", "1000", "--out", str(out), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "is not an http(s) URL" in err and not out.exists()


def test_without_a_key_no_key_is_sent_and_the_rate_is_three(monkeypatch):
    monkeypatch.delenv("NCBI_API_KEY", raising=False)
    monkeypatch.delenv("NCBI_EMAIL", raising=False)
    settings = EutilsSettings.from_env(base_url="http://127.0.0.1:1/")
    assert settings.requests_per_second == 3 and settings.base_url == "http://127.0.0.1:1/"
    with FakeEutils() as fake:
        fetch_pubmed(pmids=["1000"], client=client_for(fake))
    assert "api_key" not in fake.calls("efetch")[0].params and "email" not in fake.calls("efetch")[0].params


@pytest.mark.parametrize("key, gap", [(None, 1 / 3), ("k3y", 1 / 10)])
def test_the_rate_limiter_spaces_requests(key, gap):
    clock = FakeClock()
    arrivals = []
    articles = make_articles(5)
    with FakeEutils(articles, searches={"q": list(articles)},
                    on_request=lambda _r: arrivals.append(clock.now)) as fake:
        fetch_pubmed(query="q", client=client_for(fake, clock, api_key=key, batch_size=1))
    assert len(arrivals) == 6  # one search, five batches of one
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert all(g >= gap - 1e-9 for g in gaps), gaps
    assert clock.sleeps and max(clock.sleeps) <= gap + 1e-9  # waits no longer than it must


def test_the_rate_limiter_does_not_wait_when_requests_are_far_apart():
    clock = FakeClock()
    limiter = RateLimiter(3, clock, clock.sleep)
    limiter.wait()
    clock.now += 5
    limiter.wait()
    limiter.wait()
    assert clock.sleeps == [pytest.approx(1 / 3)]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retries_after_server_errors_with_exponential_backoff(status):
    backoffs: list[float] = []
    events = []
    with FakeEutils() as fake:
        fake.fail("efetch", status=status, times=2)
        docs = fetch_pubmed(pmids=["1000", "1001"], client=client_for(fake, backoffs=backoffs, backoff=1.5),
                            on_event=events.append)
    assert [d.id for d in docs] == ["1000", "1001"]
    assert len(fake.calls("efetch")) == 3
    assert backoffs == [1.5, 3.0]
    said = [e.message for e in events if "trying again" in e.message]
    assert len(said) == 2 and f"HTTP {status}" in said[0] and said[1].endswith("trying again in 3 s")


def test_retry_after_is_honoured():
    backoffs: list[float] = []
    with FakeEutils() as fake:
        fake.fail("esearch", status=429, body=b'{"error":"API rate limit exceeded","count":"11"}',
                  headers={"Retry-After": "7"})
        fetch_pubmed(query="q", client=client_for(fake, backoffs=backoffs))
    assert backoffs == [7.0]


def test_gives_up_after_the_last_attempt_with_one_clear_line():
    with FakeEutils() as fake:
        fake.fail("efetch", status=500, times=3)
        with pytest.raises(FetchError) as err:
            fetch_pubmed(pmids=["1000"], client=client_for(fake, attempts=3))
    message = str(err.value)
    assert "\n" not in message
    assert "efetch of PMIDs 1000..1000" in message and "after 3 attempt(s)" in message and "HTTP 500" in message
    assert len(fake.calls("efetch")) == 3


def test_a_malformed_reply_is_retried_then_reported():
    with FakeEutils() as fake:
        fake.garble("efetch")
        assert [d.id for d in fetch_pubmed(pmids=["1000"], client=client_for(fake))] == ["1000"]
        fake.garble("esearch", times=3)
        with pytest.raises(FetchError, match=r"search for 'q' failed after 3 attempt\(s\): the reply is not JSON"):
            fetch_pubmed(query="q", client=client_for(fake))
        fake.garble("efetch", times=3)
        with pytest.raises(FetchError, match="the reply is not PubMed XML: not well-formed XML"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake))


@pytest.mark.parametrize("endpoint, kwargs", [("esearch", {"query": "a[[b"}), ("efetch", {"pmids": ["1000"]})])
def test_an_error_stated_by_ncbi_is_reported_at_once(endpoint, kwargs):
    with FakeEutils() as fake:
        fake.ncbi_error(endpoint, "Invalid query syntax")
        with pytest.raises(FetchError, match="NCBI answered 'Invalid query syntax'"):
            fetch_pubmed(client=client_for(fake), **kwargs)
    assert len(fake.calls(endpoint)) == 1  # an answer, not a glitch: no retry


def test_a_client_error_is_not_retried():
    with FakeEutils() as fake:
        fake.fail("efetch", status=400, body=b"<eFetchResult><ERROR>Empty id list</ERROR></eFetchResult>")
        with pytest.raises(FetchError, match=r"NCBI answered HTTP 400 Bad Request \(Empty id list\)"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake))
    assert len(fake.calls("efetch")) == 1


def test_offline_gives_one_clear_line():
    url = closed_port_url()
    with pytest.raises(FetchError) as err:
        fetch_pubmed(pmids=["1000"], base_url=url, client=EutilsClient(EutilsSettings(base_url=url)))
    message = str(err.value)
    assert "\n" not in message
    assert f"cannot reach NCBI E-utilities at {url} (connection refused); are you offline?" in message


def test_a_slow_server_within_the_timeout_is_waited_for():
    with FakeEutils() as fake:
        fake.slow("efetch", 0.05)
        assert [d.id for d in fetch_pubmed(pmids=["1000"], client=client_for(fake, timeout=10.0))] == ["1000"]


def test_a_server_slower_than_the_timeout_is_retried_then_reported():
    with FakeEutils() as fake:
        fake.slow("efetch", 3.0)
        docs = fetch_pubmed(pmids=["1000"], client=client_for(fake, timeout=0.2))
        assert [d.id for d in docs] == ["1000"] and len(fake.calls("efetch")) == 2
        fake.slow("efetch", 3.0, times=2)
        with pytest.raises(FetchError, match=r"after 2 attempt\(s\): no complete reply within 0.2 s"):
            fetch_pubmed(pmids=["1000"], client=client_for(fake, timeout=0.2, attempts=2))


def test_cancel_stops_between_batches():
    token = CancelToken()
    events = []

    def on_event(event):
        events.append(event)
        if event.stage == "fetch" and event.step > 0 and not event.finished:
            token.cancel()

    with FakeEutils(make_articles(5)) as fake:
        with pytest.raises(Cancelled):
            fetch_pubmed(pmids=list(make_articles(5)), client=client_for(fake, batch_size=2),
                         on_event=on_event, cancel=token)
    assert len(fake.calls("efetch")) == 1
    assert events[-1].state is JobState.CANCELLED


def test_cancel_wakes_a_back_off_wait():
    """A cancel during a back-off ends the job without the next attempt (the default
    wait sleeps on the cancel token; here it is already set when the wait starts)."""
    token = CancelToken()
    with FakeEutils() as fake:
        fake.fail("efetch", status=503, times=1)
        settings = EutilsSettings(base_url=fake.url, backoff=3600.0)
        client = EutilsClient(settings, limiter=RateLimiter(1e9))
        fake.on_request = lambda _r: token.cancel()
        with pytest.raises(Cancelled):
            fetch_pubmed(pmids=["1000"], client=client, cancel=token)
    assert len(fake.calls("efetch")) == 1


def test_bad_requests_are_refused_before_any_request():
    with pytest.raises(FetchError, match="PMIDs or a query"):
        fetch_pubmed()
    with pytest.raises(FetchError, match="at most 10,000"):
        fetch_pubmed(query="q", max_results=20000)
    with pytest.raises(InputError, match="not a PMID: 'abc'"):
        fetch_pubmed(pmids=["123", "abc"])


def test_parse_pmids_reads_lists_as_people_write_them(tmp_path):
    assert parse_pmids(["123, 456;789", "PMID:123", "pmid: 42  # a comment", ""]) == ["123", "456", "789", "42"]
    with pytest.raises(InputError) as err:
        parse_pmids(["123", "", "12x"], tmp_path / "ids.txt")
    assert str(err.value) == f"{tmp_path / 'ids.txt'}:3: not a PMID: '12x' (PMIDs are whole numbers)"


@pytest.mark.shared_data
def test_real_pubmed_records_come_through_as_the_reader_reads_their_files(shared_data):
    """The 60 real efetch records of ../shared/data/pubmed-xml, served in batches of 25:
    the fetched documents equal those read from the files."""
    records, expected = real_records(sorted((shared_data / "pubmed-xml").glob("*.xml")))
    assert len(expected) >= 60
    with FakeEutils({}, records=records) as fake:
        docs = fetch_pubmed(pmids=[d.id for d in expected], client=client_for(fake, batch_size=25))
    assert docs == expected  # text, passages, section labels, metadata
    assert len(fake.calls("efetch")) == -(-len(expected) // 25)


# The command ------------------------------------------------------------------
@pytest.fixture
def fake_env(monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", "k3y")  # 10 requests/s: the real limiter waits less
    articles = make_articles(6)
    with FakeEutils(articles, searches={"aspirin": list(articles)}) as fake:
        monkeypatch.setenv("FASTBIONER_EUTILS_URL", fake.url)
        yield fake


def test_cli_fetches_pmids_into_a_readable_file(fake_env, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text("1000\n1001 # the second\n\n1002\n424242\n", encoding="utf-8")
    out = tmp_path / "abstracts.pubtator"
    assert main(["fetch", "--pmids-file", str(ids), "--out", str(out), "--quiet"]) == 0
    docs = list(read_documents(out))
    assert [d.id for d in docs] == ["1000", "1001", "1002"]
    assert docs[0].title == "Article 1000 on aspirin." and docs[0].abstract.startswith("Aspirin caused")
    captured = capsys.readouterr()
    assert "wrote 3 document(s)" in captured.out
    assert "1 PMID(s) not in PubMed: 424242" in captured.err


def test_cli_fetches_a_query_in_the_format_asked(fake_env, tmp_path):
    out = tmp_path / "q.out"
    assert main(["fetch", "--query", "aspirin", "--max", "4", "--out", str(out), "--format", "bioc",
                 "--quiet"]) == 0
    assert [d.id for d in read_documents(out, "bioc")] == ["1000", "1001", "1002", "1003"]


def test_cli_reports_errors_in_one_line_and_writes_nothing(fake_env, tmp_path, capsys, monkeypatch):
    out = tmp_path / "x.jsonl"
    assert main(["fetch", "--query", "nothing", "--out", str(out)]) == 1
    assert "no PubMed record matches 'nothing'" in capsys.readouterr().err and not out.exists()
    monkeypatch.setenv("FASTBIONER_EUTILS_URL", closed_port_url())
    assert main(["fetch", "--pmid", "1000", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fastbioner: error: PubMed efetch of PMIDs 1000..1000 (batch 1 of 1) failed: "
                              "cannot reach NCBI E-utilities")
    assert not out.exists()
