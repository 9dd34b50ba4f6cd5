"""Where alerts go: a JSON-lines log (one record per raised or cleared alert) and, when asked,
a webhook POST of the same record.

The webhook URL is user input and may carry a secret (``https://user:token@host/…``,
``?token=…``): only ``http``/``https`` with a host are accepted, redirects are not followed, and
what netfleet prints or logs about it is :func:`redact`'s ``scheme://host[:port]/…``.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from netfleet.aws import is_loopback_url
from netfleet.errors import InputError
from netfleet.watch.baseline import Judgement, Settings

#: seconds a webhook request may take in all — connecting, sending, the answer — before the
#: round goes on without it (one wall-clock deadline: a server trickling a byte at a time
#: cannot hold it longer)
WEBHOOK_TIMEOUT = 10.0


#: the alert log is rotated (to ``alerts.jsonl.1``) past this size (a record is ~600 bytes)
MAX_ALERT_LOG_BYTES = 16 * 1024 * 1024


def alert_record(
    j: Judgement, campaign: str, round_no: int, time: str, settings: Settings
) -> dict[str, Any]:
    """The alert log's record of one raised/cleared alert (docs/watch.md lists the fields)."""
    d = j.diff
    return {
        "time": time,
        "campaign": campaign,
        "round": round_no,
        "event": f"alert {j.event}",
        "series": dict(j.series.key),
        "metric": j.series.metric,
        "unit": d.unit if d else None,
        "baseline_mean": d.mean_a if d else None,
        "recent_mean": d.mean_b if d else None,
        "latest_mean": j.latest,
        "diff_percent": d.diff_percent if d else None,
        "ci_low": d.ci_low if d else None,
        "ci_high": d.ci_high if d else None,
        "level": settings.level,
        "runs_baseline": d.n_a if d else 0,
        "runs_recent": d.n_b if d else 0,
        "verdict": d.verdict if d else None,
        "threshold_percent": settings.threshold * 100,
    }


def append_alerts(path: Path, records: list[dict[str, Any]]) -> None:
    """Append the records, one JSON object a line, flushed to disk. A log past
    :data:`MAX_ALERT_LOG_BYTES` is first renamed ``alerts.jsonl.1`` (replacing the one
    before): the log never grows without bound."""
    if not records:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags, 0o644)
    if os.fstat(fd).st_size > MAX_ALERT_LOG_BYTES:
        os.close(fd)
        os.replace(path, path.with_name(path.name + ".1"))  # a rename: never through a link
        fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Webhook:
    url: str

    @classmethod
    def parse(cls, url: str) -> Webhook:
        try:
            parts = urlsplit(url.strip())
        except ValueError as exc:  # "Invalid IPv6 URL": an unclosed [
            raise InputError(
                f"--webhook: {redact(url)!r} is not a URL ({exc})",
                hint="give http://HOST[:PORT]/PATH; an IPv6 address goes in brackets: http://[::1]:8080/x",
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"--webhook: {redact(url)!r} is not an http(s) URL",
                hint="give http://HOST[:PORT]/PATH or https://…",
            )
        try:
            parts.port  # noqa: B018 — a bad port raises here, not at the first alert
        except ValueError as exc:
            raise InputError(f"--webhook: {redact(url)!r} has a bad port") from exc
        return cls(url.strip())

    @property
    def shown(self) -> str:
        return redact(self.url)

    def post(self, record: dict[str, Any]) -> str | None:
        """POST the record as JSON; the error (redacted) or None."""
        body = json.dumps(record, sort_keys=True, allow_nan=False).encode()
        parts = urlsplit(self.url)
        headers = {"Content-Type": "application/json", "User-Agent": "netfleet-watch"}
        if parts.username is not None:  # user:password@ → HTTP Basic, not part of the host
            cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
        netloc = parts.netloc.rpartition("@")[2]
        req = urllib.request.Request(  # noqa: S310 — the scheme is checked in parse
            urlunsplit(parts._replace(netloc=netloc)), data=body, method="POST", headers=headers
        )
        deadline = _Deadline(WEBHOOK_TIMEOUT)
        handlers: list[urllib.request.BaseHandler] = [
            _NoRedirect(),
            _DeadlineHttp(deadline),
            _DeadlineHttps(deadline),
        ]
        if is_loopback_url(self.url):
            handlers.append(urllib.request.ProxyHandler({}))  # loopback never via a proxy
        opener = urllib.request.build_opener(*handlers)
        try:
            with deadline, opener.open(req, timeout=WEBHOOK_TIMEOUT) as resp:
                resp.read(65536)
        except urllib.error.HTTPError as exc:
            return f"webhook {self.shown}: HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            if deadline.expired:
                return f"webhook {self.shown}: no answer within {WEBHOOK_TIMEOUT:g} s"
            reason = getattr(exc, "reason", exc)
            return f"webhook {self.shown}: {self._scrub(str(reason))}"
        return None

    def _scrub(self, text: str) -> str:
        parts = urlsplit(self.url)
        for secret in (self.url, parts.password, parts.username, parts.query, parts.path):
            if secret and len(secret) > 1:
                text = text.replace(secret, "…")
        return text


class _Deadline:
    """One wall-clock deadline for a request: when it passes, the sockets of the connections
    made under it are shut down (a read waiting on them returns at once). Each socket
    operation's own timeout is the whole deadline, so connecting cannot outlast it either;
    whether it has passed is read from the clock too (on a busy machine a socket's timeout can
    end a read before the timer thread has run)."""

    def __init__(self, seconds: float) -> None:
        self._fired = False
        self._seconds = seconds
        self._end = time.monotonic() + seconds
        self._connections: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        return self._fired or time.monotonic() >= self._end

    def __enter__(self) -> _Deadline:
        self._end = time.monotonic() + self._seconds
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()

    def made(self, cls: Any) -> Any:
        """``cls`` (an HTTP(S)Connection class) whose instances this deadline watches."""

        def make(*args: Any, **kwargs: Any) -> Any:
            connection = cls(*args, **kwargs)
            with self._lock:
                self._connections.append(connection)
            return connection

        return make

    def _expire(self) -> None:
        with self._lock:
            self._fired = True
            for connection in self._connections:
                sock = connection.sock
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)


class _UnderDeadline:
    """An HTTP(S) handler whose connections a :class:`_Deadline` watches."""

    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(self._deadline.made(http_class), req, **kwargs)  # type: ignore[misc]


class _DeadlineHttp(_UnderDeadline, urllib.request.HTTPHandler):
    pass


class _DeadlineHttps(_UnderDeadline, urllib.request.HTTPSHandler):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is an error: the record is not re-sent elsewhere


def redact(url: str) -> str:
    """``scheme://host[:port]/…`` — no user, password, path, query or fragment (chat webhooks
    carry their token in the path)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparsable URL>"
    if ":" in host:
        host = f"[{host}]"
    rest = "/…" if parts.path.strip("/") or parts.query or parts.fragment else ""
    return f"{parts.scheme}://{host}{port}{rest}"
