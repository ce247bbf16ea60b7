"""A fake NCBI E-utilities server on 127.0.0.1 for the fetch tests: no test reaches
the real network.

It serves ``esearch.fcgi`` (JSON) and ``efetch.fcgi`` (PubMed XML built from small
article fixtures), by GET or POST, and records every request. Faults are queued per
endpoint and served one per request before normal replies resume: an HTTP status
(500, 429 ...), a malformed body, an NCBI error message, or a delay (a slow server).
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def article_xml(pmid: str, title: str, abstract: str) -> str:
    return (f"<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"1\">{pmid}</PMID>"
            f"<Article><Journal><JournalIssue><PubDate><Year>2020</Year></PubDate></JournalIssue>"
            f"<Title>Fake J</Title></Journal><ArticleTitle>{escape(title)}</ArticleTitle>"
            f"<Abstract><AbstractText>{escape(abstract)}</AbstractText></Abstract></Article>"
            f"</MedlineCitation></PubmedArticle>")


def make_articles(n: int, first: int = 1000) -> dict[str, tuple[str, str]]:
    """``n`` small articles keyed by PMID (first, first+1, ...)."""
    return {str(first + i): (f"Article {first + i} on aspirin.", f"Aspirin caused headache in case {i}.")
            for i in range(n)}


@dataclass
class Fault:
    status: int = 200
    body: bytes | None = None      # None: the normal reply
    delay: float = 0.0             # seconds before answering
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    endpoint: str
    params: dict[str, str]
    method: str


class FakeEutils:
    """Use as a context manager; ``url`` is the base URL to give the client."""

    def __init__(self, articles: dict[str, tuple[str, str]] | None = None,
                 searches: dict[str, list[str]] | None = None,
                 on_request: Callable[[Request], None] | None = None,
                 records: dict[str, str] | None = None):
        """``articles``: PMID -> (title, abstract), built into records; ``records``:
        PMID -> a whole ``<PubmedArticle>`` element as text (real ones, say)."""
        self.articles = articles if articles is not None else make_articles(5)
        self.records = records or {}
        self.searches = searches or {}
        self.on_request = on_request
        self.requests: list[Request] = []
        self.faults: dict[str, list[Fault]] = {"esearch": [], "efetch": []}
        self._lock = threading.Lock()
        self._stop = threading.Event()  # wakes delayed replies when the server stops
        self._server: ThreadingHTTPServer | None = None

    # Scripting ---------------------------------------------------------------
    def fail(self, endpoint: str, status: int = 500, times: int = 1, body: bytes | None = b"",
             headers: dict[str, str] | None = None) -> None:
        for _ in range(times):
            self.faults[endpoint].append(Fault(status, body, headers=headers or {}))

    def garble(self, endpoint: str, times: int = 1) -> None:
        """A 200 reply whose body is cut short (not JSON, not well-formed XML)."""
        for _ in range(times):
            self.faults[endpoint].append(Fault(200, b"<?xml version=\"1.0\"?><PubmedArticleSet><Pubmed"
                                           if endpoint == "efetch" else b"{\"esearchresult\": {\"idl"))

    def ncbi_error(self, endpoint: str, message: str) -> None:
        """A 200 reply carrying NCBI's own error message, as E-utilities sends them."""
        body = (json.dumps({"esearchresult": {"ERROR": message}}).encode() if endpoint == "esearch" else
                f"<?xml version=\"1.0\"?><eFetchResult><ERROR>{escape(message)}</ERROR></eFetchResult>".encode())
        self.faults[endpoint].append(Fault(200, body))

    def slow(self, endpoint: str, delay: float, times: int = 1) -> None:
        """Normal replies, each after ``delay`` seconds."""
        for _ in range(times):
            self.faults[endpoint].append(Fault(delay=delay))

    def hang_up(self) -> None:
        """End every delayed reply (and any to come) without an answer: the connection closes."""
        self._stop.set()

    def calls(self, endpoint: str) -> list[Request]:
        return [r for r in self.requests if r.endpoint == endpoint]

    # Replies -------------------------------------------------------------------
    def _reply(self, endpoint: str, params: dict[str, str]) -> tuple[int, bytes, str, dict[str, str], float]:
        with self._lock:
            fault = self.faults.get(endpoint, []) and self.faults[endpoint].pop(0)
        if fault and fault.body is not None:
            ctype = "application/json" if endpoint == "esearch" else "text/xml"
            return fault.status, fault.body, ctype, fault.headers, fault.delay
        delay = fault.delay if fault else 0.0
        if endpoint == "esearch":
            ids = self.searches.get(params.get("term", ""), [])
            retmax = int(params.get("retmax", "20"))
            body = {"header": {"type": "esearch", "version": "0.3"},
                    "esearchresult": {"count": str(len(ids)), "retmax": str(min(retmax, len(ids))),
                                      "retstart": "0", "idlist": ids[:retmax]}}
            return 200, json.dumps(body).encode(), "application/json", {}, delay
        if endpoint == "efetch":
            ids = [i for i in params.get("id", "").split(",") if i]
            records = "".join(self.records[i] if i in self.records else article_xml(i, *self.articles[i])
                              for i in ids if i in self.records or i in self.articles)
            body = f"<?xml version=\"1.0\" ?>\n<PubmedArticleSet>{records}</PubmedArticleSet>\n"
            return 200, body.encode("utf-8"), "text/xml", {}, delay
        return 404, b"unknown endpoint", "text/plain", {}, 0.0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str, query: str) -> None:
                endpoint = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".fcgi")
                params = dict(urllib.parse.parse_qsl(query))
                request = Request(endpoint, params, method)
                with fake._lock:
                    fake.requests.append(request)
                if fake.on_request:
                    fake.on_request(request)
                status, body, ctype, headers, delay = fake._reply(endpoint, params)
                if delay and fake._stop.wait(delay):
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET", urllib.parse.urlsplit(self.path).query)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self._serve("POST", self.rfile.read(length).decode("ascii"))

            def log_message(self, *args) -> None:  # noqa: ANN002 - quiet
                pass

        return Handler

    # Life cycle -----------------------------------------------------------------
    def __enter__(self) -> "FakeEutils":
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-eutils",
                         daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self._stop.set()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/entrez/eutils/"


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused): offline, as the client sees it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/entrez/eutils/"
