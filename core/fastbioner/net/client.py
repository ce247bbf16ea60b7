"""One HTTP request with hard limits: an overall deadline, a reply size limit, cancel
at once, no redirects followed.

``urllib`` and ``http.client`` time out per socket operation, so a server sending one
byte a second (or an endless chunked body) holds a request for ever. Here a watchdog
thread shuts the socket down when the attempt's deadline passes or its cancel token is
set: whatever the request is blocked in (connecting, the TLS handshake, a proxy tunnel,
headers, the body) returns at once and the request ends as :class:`TimeUp` or
:class:`~fastbioner.base.jobs.Cancelled`. Name resolution, which no socket timeout bounds,
runs in a helper thread waited for in slices. The body is read in pieces and refused
(:class:`TooLarge`) past ``max_bytes``; redirects are returned as replies, for the
caller to judge (:mod:`fastbioner.net.fetch` follows only those to the same host).

Only the standard library is used (``http.client``); proxies named in the usual
environment variables (``https_proxy``, ``no_proxy`` ...) are honoured, as ``urllib``
did. Kept apart from :mod:`fastbioner.net.fetch`, which decides what to ask and when to
try again.
"""

from __future__ import annotations

import errno
import http.client
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from typing import Any

from fastbioner.base.jobs import Cancelled, CancelToken

POLL = 0.05            # seconds: how often the watchdog looks at the cancel token
READ_PIECE = 64 * 1024
ERROR_BODY_LIMIT = 4096  # bytes of an error reply kept (for the message NCBI puts there)


class TimeUp(Exception):
    """The attempt's deadline passed before the whole reply arrived."""


class TooLarge(Exception):
    """The reply is larger than the limit (said by its Content-Length, or counted)."""


@dataclass
class Reply:
    status: int
    reason: str
    headers: Message
    body: bytes       # the whole body (2xx), its first bytes (an error), or nothing (3xx)


class _Attempt:
    """The sockets of one attempt and the watchdog that cuts them."""

    def __init__(self, seconds: float, cancel: CancelToken):
        self.end = time.monotonic() + seconds
        self.cancel = cancel
        self.cut_by: str | None = None      # "deadline" or "cancel" once cut
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._handles: list[socket.socket] = []  # duplicates of the sockets' descriptors

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self) -> None:
        """Raise if the attempt was cut, or should be now."""
        if self.cancel.cancelled:
            self.cut_by = self.cut_by or "cancel"
        elif self.left() <= 0:
            self.cut_by = self.cut_by or "deadline"
        self.raise_if_cut()

    def raise_if_cut(self) -> None:
        if self.cut_by == "cancel":
            raise Cancelled()
        if self.cut_by == "deadline":
            raise TimeUp()

    def watch(self) -> None:
        while not self.done.is_set():
            if self.cancel.cancelled:
                self._cut("cancel")
                return
            left = self.left()
            if left <= 0:
                self._cut("deadline")
                return
            self.done.wait(min(POLL, left))

    def register(self, sock: socket.socket) -> None:
        """Let the watchdog shut ``sock`` down. A duplicate descriptor is kept: TLS
        wrapping detaches the original object, and shutdown acts on the connection
        whichever descriptor names it."""
        handle = socket.fromfd(sock.fileno(), sock.family, sock.type)
        with self._lock:
            self._handles.append(handle)
            cut = self.cut_by is not None
        if cut:
            _shutdown(handle)

    def _cut(self, why: str) -> None:
        with self._lock:
            self.cut_by = self.cut_by or why
            handles = list(self._handles)
        for handle in handles:
            _shutdown(handle)

    def close(self) -> None:
        self.done.set()
        with self._lock:
            handles, self._handles = self._handles, []
        for handle in handles:
            handle.close()

    # Connecting -------------------------------------------------------------
    def resolve(self, host: str, port: int) -> list[Any]:
        """getaddrinfo in a helper thread (it has no timeout of its own), waited for in
        slices so a cancel or the deadline ends the wait; a late answer is dropped."""
        infos: list[list[Any]] = []  # what the helper thread found, or the error it met
        errors: list[OSError] = []

        def run() -> None:
            try:
                infos.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
            except OSError as exc:
                errors.append(exc)

        thread = threading.Thread(target=run, name="fastbioner-resolve", daemon=True)
        thread.start()
        while thread.is_alive():
            self.check()
            thread.join(min(POLL, max(self.left(), 0.001)))
        if errors:
            raise errors[0]
        return infos[0]

    def connect(self, address: tuple[str, int], timeout: object = None, source_address: object = None
                ) -> socket.socket:
        """Stands in for :func:`socket.create_connection`: a non-blocking connect waited
        for in slices, then a blocking socket the watchdog can cut."""
        last: OSError | None = None
        for family, kind, proto, _name, sockaddr in self.resolve(*address):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                err = sock.connect_ex(sockaddr)
                while err in (errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK):
                    self.check()
                    _r, writable, _x = select.select([], [sock], [], min(POLL, max(self.left(), 0.001)))
                    if writable:
                        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    raise OSError(err, os.strerror(err))  # OSError picks the subclass (refused ...)
                sock.setblocking(True)
                sock.settimeout(max(self.left(), 0.001))  # a fallback: the watchdog cuts first
                self.register(sock)
                return sock
            except BaseException as exc:
                sock.close()
                if not isinstance(exc, OSError):
                    raise
                last = exc
        raise last or OSError(f"no address for {address[0]}")


def _shutdown(handle: socket.socket) -> None:
    try:
        handle.shutdown(socket.SHUT_RDWR)
    except OSError:  # not connected (yet, or any more): nothing blocks on it
        pass


def _proxy_for(parts: urllib.parse.SplitResult) -> urllib.parse.SplitResult | None:
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    return urllib.parse.urlsplit(proxy)


def post(url: str, body: bytes, headers: dict[str, str], *, seconds: float, cancel: CancelToken,
         max_bytes: int, context: ssl.SSLContext | None = None) -> Reply:
    """POST ``body`` to ``url`` and return the reply, all of it within ``seconds``.

    Raises :class:`TimeUp` (the deadline passed), :class:`Cancelled` (``cancel`` was
    set), :class:`TooLarge` (a 2xx body over ``max_bytes``), and otherwise what
    ``http.client`` and sockets raise (``OSError``, ``HTTPException``). A 3xx reply is
    returned as it is, never followed."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    attempt = _Attempt(seconds, cancel)
    attempt.check()
    watchdog = threading.Thread(target=attempt.watch, name="fastbioner-http-deadline", daemon=True)
    watchdog.start()
    proxy = _proxy_for(parts)
    target = proxy or parts
    host = target.hostname
    if not host:  # the URL's host was checked above: a proxy setting without one
        raise ValueError(f"the {parts.scheme} proxy setting names no host")
    port = target.port or (443 if target.scheme == "https" else 80)
    conn: http.client.HTTPConnection
    if target.scheme == "https":
        conn = http.client.HTTPSConnection(host, port, timeout=seconds,
                                           context=context or ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=seconds)
    # The one seam http.client offers for making its sockets: ours resolve and connect
    # within the deadline and are registered with the watchdog.
    conn._create_connection = attempt.connect  # type: ignore[attr-defined]  # private: not in typeshed
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    if proxy is not None:
        if parts.scheme == "https":
            conn.set_tunnel(parts.hostname, parts.port or 443)
        else:
            path = url  # a plain-HTTP proxy takes the absolute URL
    try:
        conn.request("POST", path, body=body, headers={"Connection": "close", **headers})
        reply = conn.getresponse()
        status = reply.status
        if 300 <= status < 400:
            return Reply(status, reply.reason, reply.msg, b"")
        limit = max_bytes if 200 <= status < 300 else ERROR_BODY_LIMIT
        declared = reply.getheader("Content-Length")
        if 200 <= status < 300 and declared and declared.strip().isascii() and declared.strip().isdigit() \
                and int(declared) > max_bytes:
            raise TooLarge()
        pieces, size = [], 0
        while True:
            attempt.check()
            piece = reply.read(READ_PIECE)
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                if limit == max_bytes:
                    raise TooLarge()
                break  # an error reply: its first bytes are enough
        attempt.raise_if_cut()  # a body without a length, cut by the watchdog, reads as ended
        return Reply(status, reply.reason, reply.msg, b"".join(pieces)[:limit])
    except (OSError, http.client.HTTPException, ValueError):
        attempt.check()  # cut by the watchdog: say why, not how the socket ended
        raise
    finally:
        attempt.close()
        conn.close()
