"""Abstracts from PubMed through NCBI E-utilities: by PMIDs, or by a query.

A query goes to ``esearch`` (JSON) for its PMIDs; PMIDs go to ``efetch`` in batches
(``rettype=abstract``, ``retmode=xml``: PubMed XML), read by the project's PubMed XML
reader. As NCBI asks of every client (https://www.ncbi.nlm.nih.gov/books/NBK25497/):

* at most 3 requests a second, 10 with an API key (``NCBI_API_KEY``, sent as
  ``api_key``); requests are spaced by one process-wide :class:`RateLimiter` per rate,
  so two fetches running side by side in the app share the allowance;
* ``tool`` and ``email`` parameters name the software and a contact (``NCBI_EMAIL``);
* HTTP 429 (too many requests), 5xx, timeouts and garbled replies are retried with
  exponential back-off (longer when the reply says ``Retry-After``); other failures
  stop the fetch at once with one line naming the request and the reason.

Limits, so that no server can hold a fetch for ever or fill the memory (docs/reference/limits.md):
one attempt has ``timeout`` seconds in all, from connecting to the reply's last byte
(not per read); a fetch gives up once ``patience`` seconds pass without a batch of
abstracts arriving, tries and back-offs included (so a fetch of one batch, a query's
search included, ends within ``patience``); a reply is refused past
``max_reply_bytes``; JSON deeper than :data:`MAX_JSON_DEPTH` is refused; a redirect
is followed only to the same host; cancel cuts a request under way at once; what a
server says is escaped (:func:`printable`) before it is shown; and only the records
asked for are kept, at most ``max_results`` of a query.

The base URL is ``FASTBIONER_EUTILS_URL`` or a parameter, so tests talk to a local fake
server. Only the standard library speaks HTTP (``http.client``, through
:mod:`fastbioner.net.client`): retry, back-off and rate limit are the few lines below rather
than ``urllib3``'s ``Retry`` (a dependency of a dependency here, not one of ours), whose
back-off sleeps cannot be woken by a cancel and which has neither a time limit over all
tries nor a rate limit.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar

from fastbioner import __version__

from fastbioner.net import client as netio
from fastbioner.io.documents import Document
from fastbioner.base.errors import FastBioNERError, InputError
from fastbioner.io.formats import pubmed_xml
from fastbioner.base.jobs import CancelToken, EventCallback, ProgressReporter, run_job
from fastbioner.base.terminal import shown

DEFAULT_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
URL_ENV, API_KEY_ENV, EMAIL_ENV = "FASTBIONER_EUTILS_URL", "NCBI_API_KEY", "NCBI_EMAIL"
TOOL = "fastbioner"
BATCH_SIZE = 200          # PMIDs per efetch: NCBI's advice for one request
DEFAULT_MAX_RESULTS = 100
MAX_RESULTS_LIMIT = 10_000  # esearch returns at most the first 10,000 PMIDs of a query
RATE_WITHOUT_KEY, RATE_WITH_KEY = 3.0, 10.0
ATTEMPT_SECONDS = 20.0    # one attempt, connecting to the last byte
# A fetch waits this long for its next batch, all tries included: with the start-up of
# the command, under the 60 s in all that a fetch of one batch may take.
PATIENCE_SECONDS = 50.0
MAX_REPLY_BYTES = 64 * 2**20   # an efetch of 200 abstracts is 0.5-3 MB
MAX_SEARCH_BYTES = 4 * 2**20   # 10,000 PMIDs in JSON are about 150 kB
MAX_JSON_DEPTH = 64       # esearch's JSON is 3 levels deep
MAX_REDIRECTS = 3         # to the same host only
_PMID_RE = re.compile(r"^[1-9][0-9]{0,9}\Z")  # \Z, not $: "123" and a newline is not a PMID
_PMID_PREFIX_RE = re.compile(r"\bpmid\s*:?\s*(?=\d)", re.I)
# Bounded, and looked for in a reply's head only: NCBI's error documents are short, and
# an unbounded lazy match over a large hostile body is quadratic.
_NCBI_ERROR_RE = re.compile(rb"<ERROR>(.{0,2000}?)</ERROR>", re.S)
_ERROR_HEAD = 64 * 1024


class FetchError(FastBioNERError):
    """PubMed could not be reached, or NCBI answered with an error."""


class _Retryable(Exception):
    """A failed attempt worth repeating (429, 5xx, timeout, a garbled reply)."""


Clock = Callable[[], float]
Sleep = Callable[[float], None]


def printable(text: str, limit: int = 300) -> str:
    """What a server said, made safe to print on one line: runs of white space become
    one space, control characters are shown escaped (``\\x1b``, by
    :func:`fastbioner.base.terminal.shown`, as every command does), and anything past
    ``limit`` characters is cut (``…``)."""
    return shown(" ".join(text.split()), limit)


class RateLimiter:
    """Spaces the starts of requests at least ``1 / per_second`` apart, across threads.

    Spacing (rather than counting requests per wall-clock second) never lets a burst
    through at a second's boundary. ``clock`` and ``sleep`` are injectable so tests
    check the spacing without waiting."""

    def __init__(self, per_second: float, clock: Clock = time.monotonic, sleep: Sleep = time.sleep):
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        self.interval = 1.0 / per_second
        self.clock, self.sleep = clock, sleep
        self._next: float | None = None
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Return when the next request may start (sleeping if it is too early)."""
        with self._lock:  # held while sleeping: requests queue up, one per interval
            now = self.clock()
            if self._next is not None and now < self._next:
                self.sleep(self._next - now)
                now = self._next
            self._next = now + self.interval


_shared_limiters: dict[float, RateLimiter] = {}
_shared_lock = threading.Lock()


def shared_limiter(per_second: float) -> RateLimiter:
    """The process-wide limiter for a rate (NCBI counts per key or address, not per job)."""
    with _shared_lock:
        if per_second not in _shared_limiters:
            _shared_limiters[per_second] = RateLimiter(per_second)
        return _shared_limiters[per_second]


@dataclass(frozen=True)
class EutilsSettings:
    """How to talk to E-utilities. :meth:`from_env` fills the URL, key and e-mail from
    the environment; each field can be given instead."""

    base_url: str = DEFAULT_EUTILS_URL
    api_key: str | None = None
    email: str | None = None
    tool: str = TOOL
    timeout: float = ATTEMPT_SECONDS      # seconds one attempt may take in all (not per read)
    patience: float = PATIENCE_SECONDS    # seconds without a batch arriving before a fetch gives up
    attempts: int = 5          # tries per request, the first included
    backoff: float = 1.0       # seconds before the 2nd try, doubled for each one after
    batch_size: int = BATCH_SIZE
    max_reply_bytes: int = MAX_REPLY_BYTES

    @classmethod
    def from_env(cls, **overrides: object) -> "EutilsSettings":
        # Any: an override of an unknown name or of the wrong type fails in the constructor
        env: dict[str, Any] = {"base_url": os.environ.get(URL_ENV) or DEFAULT_EUTILS_URL,
                               "api_key": os.environ.get(API_KEY_ENV) or None,
                               "email": os.environ.get(EMAIL_ENV) or None}
        env.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**env)

    @property
    def requests_per_second(self) -> float:
        return RATE_WITH_KEY if self.api_key else RATE_WITHOUT_KEY


_Parsed = TypeVar("_Parsed")  # what a request's parse makes of the reply


class EutilsClient:
    """Requests to E-utilities: common parameters, rate limit, retries, limits, errors
    as one line.

    ``limiter`` defaults to the process-wide one for the settings' rate; ``sleep`` (the
    back-off wait) defaults to waiting on the job's cancel token, so a cancel does not
    wait out a back-off; ``clock`` measures the fetch's patience (tests inject one that
    moves only when slept on). An attempt's own deadline runs on the real clock."""

    def __init__(self, settings: EutilsSettings | None = None, *, limiter: RateLimiter | None = None,
                 sleep: Sleep | None = None, clock: Clock = time.monotonic):
        self.settings = s = settings or EutilsSettings.from_env()
        if s.attempts < 1 or s.batch_size < 1:
            raise FetchError("E-utilities settings: attempts and batch size must be at least 1")
        if not (s.timeout > 0 and s.patience > 0 and s.max_reply_bytes > 0):
            raise FetchError("E-utilities settings: timeout, patience and reply limit must be positive")
        try:  # an address that cannot be split ("http://[::1", a port of letters) is a bad address too
            parts = urllib.parse.urlsplit(s.base_url)
            _ = parts.port  # reading a port that is not a number raises ValueError
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchError(f"E-utilities address {printable(s.base_url)!r} is not an http(s) URL "
                             f"(check {URL_ENV})")
        self.limiter = limiter or shared_limiter(s.requests_per_second)
        self.sleep = sleep
        self.clock = clock

    def url(self, endpoint: str) -> str:
        return self.settings.base_url.rstrip("/") + f"/{endpoint}.fcgi"

    def _params(self, params: dict[str, str]) -> dict[str, str]:
        s = self.settings
        common = {"db": "pubmed", "tool": s.tool}
        if s.email:
            common["email"] = s.email
        if s.api_key:
            common["api_key"] = s.api_key
        return {**common, **params}

    def deadline(self) -> float:
        """When a fetch starting now gives up (on :attr:`clock`)."""
        return self.clock() + self.settings.patience

    def request(self, endpoint: str, params: dict[str, str], what: str, parse: Callable[[bytes], _Parsed],
                cancel: CancelToken, on_retry: Callable[[str], None] | None = None, *,
                deadline: float | None = None, max_bytes: int | None = None) -> _Parsed:
        """POST ``params`` to ``endpoint`` and return ``parse(body)``. ``what`` names the
        request in errors ("efetch of batch 2 of 3"). ``parse`` raises :class:`_Retryable`
        for a garbled body and :class:`FetchError` for an error NCBI stated. ``on_retry``
        hears why and when the next try comes, and when it starts (the app shows it).
        No try starts, and no back-off is waited, past ``deadline`` (default: the
        settings' patience from now); each try has ``timeout`` seconds in all."""
        s = self.settings
        if deadline is None:
            deadline = self.deadline()
        limit = min(max_bytes or s.max_reply_bytes, s.max_reply_bytes)
        say = on_retry or (lambda _message: None)
        # POST: NCBI's advice for long ID lists (a GET URL of 200 PMIDs is near proxies' limits).
        data = urllib.parse.urlencode(self._params(params)).encode("ascii")
        last, retry_after = "", None
        for attempt in range(s.attempts):
            if attempt:
                delay = s.backoff * 2 ** (attempt - 1)
                if retry_after is not None:
                    delay = max(delay, retry_after)
                if self.clock() + delay >= deadline:
                    asked = f" (the server asked to wait {_seconds(retry_after)} s)" if retry_after else ""
                    raise self._give_up(what, last + asked, attempt)
                say(f"{what}: {last}; trying again in {delay:g} s")
                if self.sleep is not None:
                    self.sleep(delay)
                else:
                    cancel.wait(delay)
                cancel.check()
                # Replaces the "trying again in" line, which would otherwise stay up
                # through the whole next try.
                say(f"{what}: try {attempt + 1} of {s.attempts} (the last failed: {last})")
            cancel.check()
            self.limiter.wait()
            left = deadline - self.clock()
            if left < min(1.0, s.timeout / 2):  # too little left for a try worth making
                raise self._give_up(what, last or "no reply yet", attempt)
            seconds = min(s.timeout, left)
            retry_after = None
            try:
                reply = self._post(self.url(endpoint), data, what, seconds, cancel, limit)
            except netio.TimeUp:
                last = f"no complete reply within {_seconds(seconds)} s"
                continue
            except netio.TooLarge:
                raise FetchError(f"PubMed {what} failed: the reply is larger than {_size(limit)}; "
                                 "refused") from None
            except (http.client.HTTPException, ValueError) as exc:  # a reply cut short, a garbled status line
                last = f"broken reply ({type(exc).__name__})"
                continue
            except (ConnectionRefusedError, socket.gaierror, ssl.SSLCertVerificationError) as exc:
                raise self._unreachable(what, exc) from None
            except OSError as exc:  # reset mid-reply, no route ...
                last = f"connection lost ({_reason(exc)})"
                continue
            if 200 <= reply.status < 300:
                try:
                    return parse(reply.body)
                except _Retryable as exc:
                    last = str(exc)
                    continue
            detail = _error_detail(reply.body)
            last = f"HTTP {reply.status} {printable(reply.reason, 80)}".rstrip() + (f" ({detail})" if detail else "")
            if reply.status == 429 or reply.status >= 500:
                retry_after = _retry_after(reply.headers.get("Retry-After"))
                continue
            raise FetchError(f"PubMed {what} failed: NCBI answered {last}")
        raise FetchError(f"PubMed {what} failed after {s.attempts} attempt(s): {last}")

    def _post(self, url: str, data: bytes, what: str, seconds: float, cancel: CancelToken,
              limit: int) -> netio.Reply:
        """One try: the request and any redirects to the same host, all within ``seconds``."""
        end = time.monotonic() + seconds
        headers = {"User-Agent": f"{TOOL}/{__version__}",
                   "Content-Type": "application/x-www-form-urlencoded"}
        for _hop in range(MAX_REDIRECTS + 1):
            reply = netio.post(url, data, headers, seconds=end - time.monotonic(), cancel=cancel,
                               max_bytes=limit)
            location = reply.headers.get("Location") if 300 <= reply.status < 400 else None
            if not location:
                return reply
            try:
                target = urllib.parse.urljoin(url, location)
                urllib.parse.urlsplit(target).port  # noqa: B018 - raises for a port that is not a number
            except ValueError:  # "http://[::1", a port of letters ...
                raise FetchError(f"PubMed {what} failed: the server sent a redirect (HTTP {reply.status}) to an "
                                 f"address that cannot be read, {printable(location, 120)!r}; not followed") from None
            if not _same_host(url, target):
                there = urllib.parse.urlsplit(target)
                where = f"{there.scheme}://{there.netloc}" if there.netloc else target
                raise FetchError(f"PubMed {what} failed: the server sent a redirect (HTTP {reply.status}) "
                                 f"to another host, {printable(where, 120)}; not followed "
                                 f"(set {URL_ENV} to the E-utilities address itself)")
            url = target
        raise FetchError(f"PubMed {what} failed: more than {MAX_REDIRECTS} redirects")

    def _give_up(self, what: str, last: str, tries: int) -> FetchError:
        return FetchError(f"PubMed {what} failed: {last}; gave up after {tries} attempt(s), as no more fit "
                          f"in a fetch's {self.settings.patience:g} s limit")

    def _unreachable(self, what: str, reason: object) -> FetchError:
        offline = isinstance(reason, (ConnectionRefusedError, socket.gaierror, OSError)) and \
            not isinstance(reason, ssl.SSLError)
        return FetchError(f"PubMed {what} failed: cannot reach NCBI E-utilities at "
                          f"{printable(self.settings.base_url, 200)} "
                          f"({_reason(reason)})" + ("; are you offline?" if offline else ""))

    # The two E-utilities a fetch needs ------------------------------------
    def search(self, query: str, max_results: int, cancel: CancelToken,
               on_retry: Callable[[str], None] | None = None, *,
               deadline: float | None = None) -> tuple[list[str], int]:
        """The first ``max_results`` PMIDs matching ``query`` (never more, whatever the
        server sends) and how many match in all."""
        params = {"term": query, "retmax": str(max_results), "retmode": "json"}
        return self.request("esearch", params, f"search for {printable(query, 120)!r}",
                            lambda body: _parse_search(body, max_results), cancel, on_retry,
                            deadline=deadline, max_bytes=MAX_SEARCH_BYTES)

    def fetch(self, pmids: Sequence[str], what: str, cancel: CancelToken,
              on_retry: Callable[[str], None] | None = None, *,
              deadline: float | None = None) -> tuple[list[Document], list[str]]:
        """The PubMed records of ``pmids`` in the order asked (unknown PMIDs are absent),
        and the PMIDs of records the server sent that were not asked for (left out)."""
        params = {"id": ",".join(pmids), "rettype": "abstract", "retmode": "xml"}
        return self.request("efetch", params, what, lambda body: _parse_articles(body, pmids), cancel, on_retry,
                            deadline=deadline)


def _same_host(origin: str, target: str) -> bool:
    """A redirect worth following: the same host and port, or the same host moving from
    http to https (never back)."""
    a, b = urllib.parse.urlsplit(origin), urllib.parse.urlsplit(target)
    try:
        ports = [p.port or (443 if p.scheme == "https" else 80) for p in (a, b)]
    except ValueError:  # a port that is not a number
        return False
    if b.scheme not in ("http", "https") or not b.hostname or (a.hostname or "").lower() != b.hostname.lower():
        return False
    if a.scheme == b.scheme:
        return ports[0] == ports[1]
    return (a.scheme, b.scheme) == ("http", "https") and ports[1] == 443


def _seconds(x: float) -> str:
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n:,} bytes"


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "host name not found"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return printable(f"certificate not trusted: {reason.verify_message or reason}", 200)
    if isinstance(reason, OSError) and reason.strerror:
        return printable(reason.strerror, 200)
    return printable(str(reason), 200)


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:  # an HTTP date: rare enough to fall back on the back-off
        return None
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None


_JSON_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


class JSONTooDeep(ValueError):
    """JSON nested deeper than the limit (refused before parsing)."""


def loads_json(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> object:
    """``json.loads`` of UTF-8 ``body``, refusing (ValueError) nesting deeper than
    ``max_depth`` before parsing: the parser recurses once per level, and a reply
    200,000 levels deep would end in RecursionError."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte offset {exc.start})") from None
    depth = 0
    for bracket in "".join(_NOT_BRACKETS.sub("", _JSON_STRING_RE.sub("", text))):
        depth += 1 if bracket in "[{" else -1
        if depth > max_depth:
            raise JSONTooDeep(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:  # should the count above ever be fooled
        raise JSONTooDeep(f"nested deeper than {max_depth} levels") from None


def _error_detail(body: bytes) -> str:
    """NCBI's own words from an error reply ({"error": ...} or <ERROR>), if any, escaped."""
    try:
        data = loads_json(body)
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return printable(data["error"], 200)
    except ValueError:
        pass
    match = _NCBI_ERROR_RE.search(body[:_ERROR_HEAD])
    return printable(match.group(1).decode("utf-8", "replace"), 200) if match else ""


def _parse_search(body: bytes, max_results: int) -> tuple[list[str], int]:
    try:
        data = loads_json(body)
    except JSONTooDeep as exc:
        raise _Retryable(f"the reply's JSON is {exc}") from None
    except ValueError as exc:
        raise _Retryable(f"the reply is not JSON ({printable(str(exc), 120)})") from None
    result = data.get("esearchresult", data) if isinstance(data, dict) else data
    if not isinstance(result, dict):
        raise _Retryable("the reply is not an esearch result")
    error = result.get("ERROR") or result.get("error")
    if error:
        raise FetchError(f"PubMed search failed: NCBI answered {printable(str(error), 200)!r}")
    idlist = result.get("idlist")
    if not isinstance(idlist, list):
        raise _Retryable("the reply holds no list of PMIDs")
    ids: dict[str, None] = {}
    for item in idlist:
        pmid = str(item) if isinstance(item, (str, int)) and not isinstance(item, bool) else None
        if pmid is None or not _PMID_RE.match(pmid):
            shown = printable(repr(item), 60)
            raise FetchError(f"PubMed search failed: the reply lists {shown} among the PMIDs, "
                             "which is not a PMID")
        ids.setdefault(pmid, None)
    try:
        count = int(result.get("count", len(ids)))
    except (TypeError, ValueError):  # absent, garbled, or thousands of digits
        raise _Retryable("the reply's count of matches is not a number") from None
    # Never more than asked: a server sending 2,000 PMIDs for --max 5 gets 5 fetched.
    return list(ids)[:max_results], max(count, len(ids))


def _parse_articles(body: bytes, asked: Sequence[str]) -> tuple[list[Document], list[str]]:
    match = _NCBI_ERROR_RE.search(body[:_ERROR_HEAD])
    if match:
        message = printable(match.group(1).decode("utf-8", "replace"), 200)
        raise FetchError(f"PubMed efetch failed: NCBI answered {message!r}")
    # The project's PubMed reader reads files (safely: defusedxml, and as a stream on
    # branches that stream); a reply within the size limit is passed on disk.
    with tempfile.TemporaryDirectory(prefix="fastbioner-efetch-") as folder:
        path = Path(folder) / "efetch.pubmed.xml"
        path.write_bytes(body)
        try:
            docs = list(pubmed_xml.read(path))
        except InputError as exc:
            where = f" (line {exc.line})" if exc.line else ""
            said = printable(exc.message, 200)
            said = said if said.startswith("not PubMed XML") else f"not PubMed XML: {said}"
            raise _Retryable(f"the reply is {said}{where}") from None
    # Only the records asked for, once each, in the order asked: a record under another
    # PMID is left out (and named), never written as if it had been asked for.
    wanted = set(asked)
    found: dict[str, Document] = {}
    unasked: list[str] = []
    for doc in docs:
        if doc.id in wanted:
            found.setdefault(doc.id, doc)
        else:
            unasked.append(printable(str(doc.id), 40))
    return [found[p] for p in asked if p in found], unasked


def parse_pmids(tokens: Iterable[str], source: str | Path | None = None) -> list[str]:
    """PMIDs from words (spaces, commas or semicolons between them; ``PMID:`` prefixes
    allowed), duplicates dropped, order kept. A word that is not a PMID raises
    :class:`InputError` (naming ``source`` and the line, when reading a file)."""
    seen: dict[str, None] = {}
    for line_no, line in enumerate(tokens, 1):
        line = _PMID_PREFIX_RE.sub("", line.split("#", 1)[0])
        for pmid in re.split(r"[\s,;]+", line.strip()):
            if not pmid:
                continue
            if not _PMID_RE.match(pmid):
                raise InputError(f"not a PMID: {pmid!r} (PMIDs are whole numbers)", source,
                                 line_no if source is not None else None)
            seen.setdefault(pmid, None)
    return list(seen)


class FetchResult(list):
    """The documents fetched (a list, in the order asked or PubMed's order), with what
    the fetch learnt on the way: ``matches`` (how many records match the query in all;
    None for PMIDs), ``skipped`` (PMIDs left out because the caller holds them already)
    and ``unasked`` (PMIDs of records the server sent unasked, left out)."""

    def __init__(self, docs: Iterable[Document] = (), *, matches: int | None = None,
                 skipped: Sequence[str] = (), unasked: Sequence[str] = ()):
        super().__init__(docs)
        self.matches = matches
        self.skipped = list(skipped)
        self.unasked = list(unasked)


def fetch_pubmed(pmids: Optional[Sequence[str]] = None, query: Optional[str] = None,
                 max_results: int = DEFAULT_MAX_RESULTS, *, base_url: str | None = None,
                 client: EutilsClient | None = None, on_event: EventCallback | None = None,
                 cancel: CancelToken | None = None, skip: Iterable[str] = ()) -> FetchResult:
    """PubMed abstracts by PMIDs, or the first ``max_results`` matching ``query``, as
    documents in PubMed's order (a query) or the order asked (PMIDs; those PubMed does
    not have are left out: compare ids to find them). PMIDs in ``skip`` (documents the
    caller has open) are not downloaded again; the result names them.

    Stages: ``search`` (a query only), then ``fetch`` counting PMIDs. Cancel cuts a
    request under way and wakes a back-off; a cancelled fetch returns nothing. The
    fetch gives up (:class:`FetchError`) once the client's ``patience`` passes without
    a batch arriving: a fetch of one batch, a query's search included, within it."""
    if (pmids is None) == (query is None):
        raise FetchError("fetch from PubMed: give PMIDs or a query (one of the two)")
    if query is not None and not query.strip():
        raise FetchError("fetch from PubMed: the query is empty")
    if not 1 <= max_results <= MAX_RESULTS_LIMIT:
        raise FetchError(f"fetch from PubMed: at most {MAX_RESULTS_LIMIT:,} results per query "
                         f"(asked for {max_results:,})")
    ids = parse_pmids(pmids) if pmids is not None else []
    if pmids is not None and not ids:
        raise FetchError("fetch from PubMed: no PMIDs given")
    if client is None:
        client = EutilsClient(EutilsSettings.from_env(base_url=base_url))
    elif base_url is not None:
        client = EutilsClient(replace(client.settings, base_url=base_url), limiter=client.limiter,
                              sleep=client.sleep, clock=client.clock)
    held = set(skip)

    def job(reporter: ProgressReporter) -> FetchResult:
        nonlocal ids

        def on_retry(message: str) -> None:
            reporter.emit(message=message)
        deadline = client.deadline()  # the search and the first batch share one patience
        count = None
        if query is not None:
            reporter.stage("search", total=1, message=f"searching PubMed for {query!r}")
            ids, count = client.search(query, max_results, reporter.cancel, on_retry, deadline=deadline)
        skipped = [p for p in ids if p in held]
        todo = [p for p in ids if p not in held]
        if query is not None:
            also = f" ({len(skipped):,} already open)" if skipped else ""
            reporter.emit(step=1, message=f"{count:,} record(s) match; fetching {len(todo):,}{also}",
                          metrics={"matches": count})
        size = client.settings.batch_size
        batches = [todo[i:i + size] for i in range(0, len(todo), size)]
        reporter.stage("fetch", total=len(todo), message=f"fetching {len(todo):,} abstract(s)")
        docs: list[Document] = []
        unasked: list[str] = []
        for n, batch in enumerate(batches, 1):
            reporter.check()
            what = f"efetch of PMIDs {batch[0]}..{batch[-1]} (batch {n} of {len(batches)})"
            got, extra = client.fetch(batch, what, reporter.cancel, on_retry, deadline=deadline)
            deadline = client.deadline()  # a batch arrived: the next one has its own patience
            docs.extend(got)
            unasked.extend(extra)
            reporter.emit(step=min(len(todo), n * size), message=f"fetched {len(docs):,} of {len(todo):,}",
                          metrics={"documents": len(docs)})
        return FetchResult(docs, matches=count, skipped=skipped, unasked=unasked)

    return run_job(job, on_event, cancel)
