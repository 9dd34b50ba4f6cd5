"""The webhook has one wall-clock deadline per request (issue 37 item 8): a real server on
127.0.0.1 that answers one byte at a time, each well within a socket timeout, cannot hold a
request (and the watch round behind it) past the deadline. And the ``--webhook`` checks: a URL
Python cannot split is exit 2, not a traceback; a URL on the command line, where every local
user can read it, is warned about."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from netfleet.errors import InputError
from netfleet.watch import alerts
from netfleet.watch.alerts import Webhook

NETFLEET = Path(sys.executable).parent / "netfleet"


@contextmanager
def trickling_server(every: float, for_s: float) -> Iterator[str]:
    """A server that reads the request, then sends an HTTP answer one byte every ``every`` s
    for ``for_s`` s; stopped (its socket closed, its thread joined) whatever happens."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                answer = b"HTTP/1.1 204 No Content\r\nX-Slow: " + b"x" * 1000
                end = time.monotonic() + for_s
                for byte in answer:
                    if stop.is_set() or time.monotonic() > end:
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break
                    stop.wait(every)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_trickling_server_cannot_hold_a_webhook_past_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(alerts, "WEBHOOK_TIMEOUT", 1.0)  # a byte every 0.3 s: within 1 s each
    with trickling_server(every=0.3, for_s=12) as addr:
        started = time.monotonic()
        error = Webhook.parse(f"http://{addr}/hook").post({"event": "alert raised"})
        took = time.monotonic() - started
    assert error == f"webhook http://{addr}/…: no answer within 1 s"
    assert took < 6, f"the request took {took:.1f} s"


def test_a_deadline_passed_before_its_timer_thread_ran_is_still_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The socket's own timeout equals the deadline: on a busy machine the read can time out
    before the deadline's timer thread has run. The answer is still "no answer within", not
    the socket's bare "timed out" (the timer is held back here: it never fires)."""
    monkeypatch.setattr(alerts, "WEBHOOK_TIMEOUT", 1.0)
    monkeypatch.setattr(alerts._Deadline, "_expire", lambda self: None)
    with trickling_server(every=5, for_s=12) as addr:  # a byte, then silence past 1 s
        error = Webhook.parse(f"http://{addr}/hook").post({"event": "alert raised"})
    assert error == f"webhook http://{addr}/…: no answer within 1 s"


def test_a_url_python_cannot_split_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"is not a URL \(Invalid IPv6 URL\)\n.*brackets"):
        Webhook.parse("http://[::1:18104/x")


def test_a_webhook_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(NETFLEET), "watch", str(tmp_path / "none.yaml"), "--webhook", "http://[::1:18104/x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "visible to every local user" in done.stderr and "NETFLEET_WATCH_WEBHOOK" in done.stderr
