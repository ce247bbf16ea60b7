"""A fake NCBI E-utilities server on 127.0.0.1 for the fetch tests: no test reaches
the real network.

It serves ``esearch.fcgi`` (JSON) and ``efetch.fcgi`` (PubMed XML built from small
article fixtures), by GET or POST, and records every request. Faults are queued per
endpoint and served one per request before normal replies resume: an HTTP status
(500, 429 ...), a malformed body, an NCBI error message, or a delay (a slow server).

Hostile behaviours, for the client's limits (each bounded, so a client without the
limit fails its test instead of hanging it): a body or headers dripped a byte at a time,
an endless chunked body, a Content-Length of a terabyte, a redirect to another host,
escape codes in an error reply, JSON nested 200,000 deep, a search that ignores
``retmax`` (``ignore_retmax``) and records nobody asked for (``unasked``).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
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


def real_records(files) -> tuple[dict[str, str], list]:
    """Real efetch records from PubMed XML files (``../shared/data/pubmed-xml``): each
    ``<PubmedArticle>`` element as text by PMID, for ``FakeEutils(records=...)``, and the
    documents the core's reader makes of the files, in order."""
    import re

    from fastbioner.io.formats import pubmed_xml

    records, docs = {}, []
    for path in files:
        found = list(pubmed_xml.read(path))
        text = path.read_text(encoding="utf-8")
        for doc, record in zip(found, re.findall(r"<PubmedArticle>.*?</PubmedArticle>", text, re.S)):
            records[doc.id] = record
            docs.append(doc)
    return records, docs


@dataclass
class Fault:
    status: int = 200
    body: bytes | None = None      # None: the normal reply
    delay: float = 0.0             # seconds before answering
    headers: dict[str, str] = field(default_factory=dict)
    reason: str | None = None      # the status line's words (None: the standard ones)
    mode: str = ""                 # "drip", "drip-headers", "endless", "huge-length"
    interval: float = 0.05         # drip: seconds between bytes
    limit: int = 0                 # drip: bytes sent in all; endless: bytes before it stops


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
                 records: dict[str, str] | None = None, ignore_retmax: bool = False,
                 unasked: dict[str, tuple[str, str]] | None = None):
        """``articles``: PMID -> (title, abstract), built into records; ``records``:
        PMID -> a whole ``<PubmedArticle>`` element as text (real ones, say);
        ``ignore_retmax``: a search returns every PMID it has, however few were asked
        for; ``unasked``: records added to every efetch reply, asked for or not."""
        self.articles = articles if articles is not None else make_articles(5)
        self.records = records or {}
        self.searches = searches or {}
        self.ignore_retmax = ignore_retmax
        self.unasked = unasked or {}
        self.on_request = on_request
        self.requests: list[Request] = []
        # Endpoints whose client hung up before the reply was complete (a deadline, a
        # cancel or a size limit cutting the request under way), one entry per request.
        self.hang_ups: list[str] = []
        self._active = 0  # requests being answered
        self._idle = threading.Condition()
        self.faults: dict[str, list[Fault]] = {"esearch": [], "efetch": []}
        self._lock = threading.Lock()
        self._stop = threading.Event()  # wakes delayed replies when the server stops
        self._server: ThreadingHTTPServer | None = None

    # Scripting ---------------------------------------------------------------
    def fail(self, endpoint: str, status: int = 500, times: int = 1, body: bytes | None = b"",
             headers: dict[str, str] | None = None, reason: str | None = None) -> None:
        for _ in range(times):
            self.faults[endpoint].append(Fault(status, body, headers=headers or {}, reason=reason))

    # Hostile servers ---------------------------------------------------------
    def drip(self, endpoint: str, interval: float = 0.05, limit: int = 200, times: int = 1,
             headers: bool = False) -> None:
        """A 200 reply sent one byte every ``interval`` seconds (``limit`` bytes, then the
        connection closes): of the body, or of the headers with ``headers=True``. No
        read waits long, yet the reply never ends in time."""
        for _ in range(times):
            self.faults[endpoint].append(Fault(mode="drip-headers" if headers else "drip",
                                               interval=interval, limit=limit))

    def endless(self, endpoint: str, limit: int = 64 * 2**20, times: int = 1) -> None:
        """A 200 reply with a chunked body of 64 kB chunks sent as fast as the client
        reads, until ``limit`` bytes (or the client hangs up)."""
        for _ in range(times):
            self.faults[endpoint].append(Fault(mode="endless", limit=limit))

    def huge_length(self, endpoint: str, times: int = 1) -> None:
        """A 200 reply whose Content-Length says a terabyte (and which sends 1 kB)."""
        for _ in range(times):
            self.faults[endpoint].append(Fault(mode="huge-length"))

    def redirect(self, endpoint: str, location: str, status: int = 302, times: int = 1) -> None:
        for _ in range(times):
            self.faults[endpoint].append(Fault(status, b"", headers={"Location": location}))

    def deep_json(self, depth: int = 200_000, times: int = 1) -> None:
        """An esearch reply of ``depth`` nested arrays (a parser recursing per level overflows)."""
        for _ in range(times):
            self.faults["esearch"].append(Fault(200, b"[" * depth + b"]" * depth))

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
    def _reply(self, endpoint: str, params: dict[str, str]) -> tuple[int, bytes, str, dict[str, str], float, Fault]:
        """status, body, content type, headers, delay, and the fault served (or a blank one)."""
        with self._lock:
            queue = self.faults.get(endpoint)
            fault = queue.pop(0) if queue else Fault()
        if fault.mode or fault.body is not None:
            ctype = "application/json" if endpoint == "esearch" else "text/xml"
            return fault.status, fault.body or b"", ctype, fault.headers, fault.delay, fault
        if endpoint == "esearch":
            ids = self.searches.get(params.get("term", ""), [])
            retmax = len(ids) if self.ignore_retmax else int(params.get("retmax", "20"))
            body = {"header": {"type": "esearch", "version": "0.3"},
                    "esearchresult": {"count": str(len(ids)), "retmax": str(min(retmax, len(ids))),
                                      "retstart": "0", "idlist": ids[:retmax]}}
            return 200, json.dumps(body).encode(), "application/json", {}, fault.delay, fault
        if endpoint == "efetch":
            ids = [i for i in params.get("id", "").split(",") if i]
            records = "".join(self.records[i] if i in self.records else article_xml(i, *self.articles[i])
                              for i in ids if i in self.records or i in self.articles)
            records += "".join(article_xml(i, *a) for i, a in self.unasked.items())
            body = f"<?xml version=\"1.0\" ?>\n<PubmedArticleSet>{records}</PubmedArticleSet>\n"
            return 200, body.encode("utf-8"), "text/xml", {}, fault.delay, fault
        return 404, b"unknown endpoint", "text/plain", {}, 0.0, fault

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str, query: str) -> None:
                with fake._idle:
                    fake._active += 1
                try:
                    self._answer(method, query)
                finally:
                    with fake._idle:
                        fake._active -= 1
                        fake._idle.notify_all()

            def _answer(self, method: str, query: str) -> None:
                endpoint = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".fcgi")
                params = dict(urllib.parse.parse_qsl(query))
                request = Request(endpoint, params, method)
                with fake._lock:
                    fake.requests.append(request)
                if fake.on_request:
                    fake.on_request(request)
                status, body, ctype, headers, delay, fault = fake._reply(endpoint, params)
                if fault.mode:
                    try:
                        self._hostile(fault)
                    except OSError:  # the client gave up (its deadline, its limit)
                        with fake._lock:
                            fake.hang_ups.append(endpoint)
                    self.close_connection = True
                    return
                if delay:
                    end = time.monotonic() + delay
                    while (left := end - time.monotonic()) > 0:
                        if self._client_gone():
                            with fake._lock:
                                fake.hang_ups.append(endpoint)
                            return
                        if fake._stop.wait(min(0.02, left)):
                            return
                try:
                    self.send_response(status, fault.reason)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

            def _client_gone(self) -> bool:
                """The client closed its end while the reply was still being prepared."""
                try:
                    readable, _w, _x = select.select([self.connection], [], [], 0)
                    return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            def _hostile(self, fault: Fault) -> None:
                out = self.wfile
                if fault.mode == "drip-headers":
                    out.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nX-Slow: ")
                    for _ in range(fault.limit):
                        if fake._stop.wait(fault.interval):
                            return
                        out.write(b"x")
                        out.flush()
                    return
                if fault.mode == "drip":
                    out.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n"
                              b"Content-Length: %d\r\n\r\n" % fault.limit)
                    for _ in range(fault.limit):
                        if fake._stop.wait(fault.interval):
                            return
                        out.write(b"<")
                        out.flush()
                    return
                if fault.mode == "huge-length":
                    out.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n"
                              b"Content-Length: 1000000000000\r\n\r\n" + b"<" * 1024)
                    return
                if fault.mode == "endless":
                    out.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n\r\n")
                    chunk = b"<PubmedArticleSet>".ljust(64 * 1024, b" ")
                    sent = 0
                    while sent < fault.limit and not fake._stop.is_set():
                        out.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        sent += len(chunk)
                    out.write(b"0\r\n\r\n")
                    return
                raise ValueError(f"unknown fault mode {fault.mode!r}")

            def do_GET(self) -> None:
                self._serve("GET", urllib.parse.urlsplit(self.path).query)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._serve("POST", self.rfile.read(length).decode("ascii"))

            def log_message(self, *args) -> None:
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

    def __exit__(self, *exc) -> None:
        # Replies to clients that hung up end within a write or a poll: wait for them
        # (a few seconds at most), so that hang_ups is complete when a test reads it.
        with self._idle:
            self._idle.wait_for(lambda: self._active == 0, timeout=5.0)
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
