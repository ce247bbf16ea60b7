"""Abstracts from PubMed through NCBI E-utilities: by PMIDs, or by a query.

A query goes to ``esearch`` (JSON) for its PMIDs; PMIDs go to ``efetch`` in batches
(``rettype=abstract``, ``retmode=xml``: PubMed XML), read by the project's PubMed XML
reader. As NCBI asks of every client (https://www.ncbi.nlm.nih.gov/books/NBK25497/):

* at most 3 requests a second, 10 with an API key (``NCBI_API_KEY``, sent as
  ``api_key``); requests are spaced by one process-wide :class:`RateLimiter` per rate,
  so two fetches running side by side in the app share the allowance;
* ``tool`` and ``email`` parameters name the software and a contact (``NCBI_EMAIL``);
* HTTP 429 (too many requests), 5xx and timeouts are retried with exponential back-off
  (longer when the reply says ``Retry-After``); other failures stop the fetch at once
  with one line naming the request and the reason.

The base URL is ``FASTBIONER_EUTILS_URL`` or a parameter, so tests talk to a local fake
server. Only the standard library speaks HTTP (``urllib``).
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
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from . import __version__
from .documents import Document
from .errors import FastBioNERError, InputError
from .formats import pubmed_xml
from .jobs import CancelToken, EventCallback, ProgressReporter, run_job

DEFAULT_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
URL_ENV, API_KEY_ENV, EMAIL_ENV = "FASTBIONER_EUTILS_URL", "NCBI_API_KEY", "NCBI_EMAIL"
TOOL = "fastbioner"
BATCH_SIZE = 200          # PMIDs per efetch: NCBI's advice for one request
DEFAULT_MAX_RESULTS = 100
MAX_RESULTS_LIMIT = 10_000  # esearch returns at most the first 10,000 PMIDs of a query
RATE_WITHOUT_KEY, RATE_WITH_KEY = 3.0, 10.0
RETRY_AFTER_CAP = 60.0    # seconds: a Retry-After beyond this is not waited out in full
_PMID_RE = re.compile(r"^[1-9][0-9]{0,9}$")
_PMID_PREFIX_RE = re.compile(r"\bpmid\s*:?\s*(?=\d)", re.I)
_NCBI_ERROR_RE = re.compile(rb"<ERROR>(.*?)</ERROR>", re.S)


class FetchError(FastBioNERError):
    """PubMed could not be reached, or NCBI answered with an error."""


class _Retryable(Exception):
    """A failed attempt worth repeating (429, 5xx, timeout, a garbled reply)."""


Clock = Callable[[], float]
Sleep = Callable[[float], None]


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
    timeout: float = 20.0      # seconds without a byte from the server before an attempt fails
    attempts: int = 5          # tries per request, the first included
    backoff: float = 1.0       # seconds before the 2nd try, doubled for each one after
    batch_size: int = BATCH_SIZE

    @classmethod
    def from_env(cls, **overrides: object) -> "EutilsSettings":
        env = {"base_url": os.environ.get(URL_ENV) or DEFAULT_EUTILS_URL,
               "api_key": os.environ.get(API_KEY_ENV) or None,
               "email": os.environ.get(EMAIL_ENV) or None}
        env.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**env)  # type: ignore[arg-type]

    @property
    def requests_per_second(self) -> float:
        return RATE_WITH_KEY if self.api_key else RATE_WITHOUT_KEY


class EutilsClient:
    """Requests to E-utilities: common parameters, rate limit, retries, errors as one line.

    ``limiter`` defaults to the process-wide one for the settings' rate; ``sleep`` (the
    back-off wait) defaults to waiting on the job's cancel token, so a cancel does not
    wait out a back-off."""

    def __init__(self, settings: EutilsSettings | None = None, *, limiter: RateLimiter | None = None,
                 sleep: Sleep | None = None):
        self.settings = settings or EutilsSettings.from_env()
        if self.settings.attempts < 1 or self.settings.batch_size < 1:
            raise FetchError("E-utilities settings: attempts and batch size must be at least 1")
        self.limiter = limiter or shared_limiter(self.settings.requests_per_second)
        self.sleep = sleep

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

    def request(self, endpoint: str, params: dict[str, str], what: str, parse: Callable[[bytes], object],
                cancel: CancelToken, on_retry: Callable[[str], None] | None = None) -> object:
        """POST ``params`` to ``endpoint`` and return ``parse(body)``. ``what`` names the
        request in errors ("efetch of batch 2 of 3"). ``parse`` raises :class:`_Retryable`
        for a garbled body and :class:`FetchError` for an error NCBI stated. ``on_retry``
        hears why and when the next try comes (the app shows it while waiting)."""
        s = self.settings
        # POST: NCBI's advice for long ID lists (a GET URL of 200 PMIDs is near proxies' limits).
        data = urllib.parse.urlencode(self._params(params)).encode("ascii")
        last, last_retry_after = "", None
        for attempt in range(s.attempts):
            if attempt:
                self._back_off(attempt, last_retry_after, cancel, lambda delay: on_retry and on_retry(
                    f"{what}: {last}; trying again in {delay:g} s"))
            cancel.check()
            self.limiter.wait()
            last_retry_after = None
            req = urllib.request.Request(self.url(endpoint), data=data, method="POST",
                                         headers={"User-Agent": f"{TOOL}/{__version__}"})
            try:
                with urllib.request.urlopen(req, timeout=s.timeout) as reply:
                    body = reply.read()
                return parse(body)
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                last = f"HTTP {exc.code} {exc.reason}" + (f" ({detail})" if detail else "")
                if exc.code == 429 or exc.code >= 500:
                    last_retry_after = _retry_after(exc)
                    continue
                raise FetchError(f"PubMed {what} failed: NCBI answered {last}") from None
            except _Retryable as exc:
                last = str(exc)
                continue
            except (TimeoutError, socket.timeout):
                last = f"no answer within {s.timeout:g} s"
                continue
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    last = f"no answer within {s.timeout:g} s"
                    continue
                raise self._unreachable(what, exc.reason) from None
            except http.client.HTTPException as exc:  # a reply cut short, a garbled status line
                last = f"broken reply ({type(exc).__name__})"
                continue
            except (ConnectionError, OSError) as exc:  # reset mid-reply, refused after a redirect ...
                if isinstance(exc, ConnectionRefusedError):
                    raise self._unreachable(what, exc) from None
                last = f"connection lost ({_reason(exc)})"
                continue
        raise FetchError(f"PubMed {what} failed after {s.attempts} attempt(s): {last}")

    def _unreachable(self, what: str, reason: object) -> FetchError:
        offline = isinstance(reason, (ConnectionRefusedError, socket.gaierror, OSError)) and \
            not isinstance(reason, ssl.SSLError)
        return FetchError(f"PubMed {what} failed: cannot reach NCBI E-utilities at {self.settings.base_url} "
                          f"({_reason(reason)})" + ("; are you offline?" if offline else ""))

    def _back_off(self, attempt: int, retry_after: float | None, cancel: CancelToken,
                  announce: Callable[[float], object]) -> None:
        delay = self.settings.backoff * 2 ** (attempt - 1)
        if retry_after is not None:
            delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
        announce(delay)
        if self.sleep is not None:
            self.sleep(delay)
        else:
            cancel.wait(delay)
        cancel.check()

    # The two E-utilities a fetch needs ------------------------------------
    def search(self, query: str, max_results: int, cancel: CancelToken,
               on_retry: Callable[[str], None] | None = None) -> tuple[list[str], int]:
        """The first ``max_results`` PMIDs matching ``query`` and how many match in all."""
        params = {"term": query, "retmax": str(max_results), "retmode": "json"}
        return self.request("esearch", params, f"search for {query!r}", _parse_search, cancel,  # type: ignore[return-value]
                            on_retry)

    def fetch(self, pmids: Sequence[str], what: str, cancel: CancelToken,
              on_retry: Callable[[str], None] | None = None) -> list[Document]:
        """The PubMed records of ``pmids`` (those PubMed has; unknown PMIDs are absent)."""
        params = {"id": ",".join(pmids), "rettype": "abstract", "retmode": "xml"}
        return self.request("efetch", params, what, _parse_articles, cancel, on_retry)  # type: ignore[return-value]


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "host name not found"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason)


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: rare enough to fall back on the back-off
        return None


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """NCBI's own words from an error reply ({"error": ...} or <ERROR>), if any."""
    try:
        body = exc.read(4096)
    except Exception:  # noqa: BLE001 - the status line is enough then
        return ""
    try:
        data = json.loads(body)
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return data["error"]
    except ValueError:
        pass
    match = _NCBI_ERROR_RE.search(body)
    return " ".join(match.group(1).decode("utf-8", "replace").split()) if match else ""


def _parse_search(body: bytes) -> tuple[list[str], int]:
    try:
        data = json.loads(body)
        result = data["esearchresult"] if "esearchresult" in data else data
    except (ValueError, TypeError) as exc:
        raise _Retryable(f"the reply is not JSON ({exc})") from None
    if not isinstance(result, dict):
        raise _Retryable("the reply is not an esearch result")
    error = result.get("ERROR") or result.get("error")
    if error:
        raise FetchError(f"PubMed search failed: NCBI answered {' '.join(str(error).split())!r}")
    try:
        ids = [str(i) for i in result["idlist"]]
        count = int(result.get("count", len(ids)))
    except (KeyError, TypeError, ValueError):
        raise _Retryable("the reply holds no list of PMIDs") from None
    return ids, count


def _parse_articles(body: bytes) -> list[Document]:
    match = _NCBI_ERROR_RE.search(body)
    if match:
        message = " ".join(match.group(1).decode("utf-8", "replace").split())
        raise FetchError(f"PubMed efetch failed: NCBI answered {message!r}")
    # The project's PubMed reader reads files (safely: defusedxml, and as a stream on
    # branches that stream); a reply of at most one batch is small enough to pass on disk.
    with tempfile.TemporaryDirectory(prefix="fastbioner-efetch-") as folder:
        path = Path(folder) / "efetch.pubmed.xml"
        path.write_bytes(body)
        try:
            return list(pubmed_xml.read(path))
        except InputError as exc:
            where = f" (line {exc.line})" if exc.line else ""
            raise _Retryable(f"the reply is not PubMed XML: {exc.message}{where}") from None


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


def fetch_pubmed(pmids: Optional[Sequence[str]] = None, query: Optional[str] = None,
                 max_results: int = DEFAULT_MAX_RESULTS, *, base_url: str | None = None,
                 client: EutilsClient | None = None, on_event: EventCallback | None = None,
                 cancel: CancelToken | None = None) -> list[Document]:
    """PubMed abstracts by PMIDs, or the first ``max_results`` matching ``query``, as
    documents in PubMed's order (a query) or the order asked (PMIDs; those PubMed does
    not have are left out: compare ids to find them).

    Stages: ``search`` (a query only), then ``fetch`` counting PMIDs. Cancel is checked
    before every request (and wakes a back-off); a cancelled fetch returns nothing."""
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
                              sleep=client.sleep)

    def job(reporter: ProgressReporter) -> list[Document]:
        nonlocal ids

        def on_retry(message: str) -> None:
            reporter.emit(message=message)
        if query is not None:
            reporter.stage("search", total=1, message=f"searching PubMed for {query!r}")
            ids, count = client.search(query, max_results, reporter.cancel, on_retry)
            reporter.emit(step=1, message=f"{count:,} record(s) match; fetching {len(ids):,}",
                          metrics={"matches": count})
        size = client.settings.batch_size
        batches = [ids[i:i + size] for i in range(0, len(ids), size)]
        reporter.stage("fetch", total=len(ids), message=f"fetching {len(ids):,} abstract(s)")
        docs: list[Document] = []
        for n, batch in enumerate(batches, 1):
            reporter.check()
            what = f"efetch of PMIDs {batch[0]}..{batch[-1]} (batch {n} of {len(batches)})"
            docs.extend(client.fetch(batch, what, reporter.cancel, on_retry))
            reporter.emit(step=min(len(ids), n * size), metrics={"documents": len(docs)})
        return docs

    return run_job(job, on_event, cancel)
