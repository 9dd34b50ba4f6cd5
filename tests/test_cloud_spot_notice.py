"""The spot interruption notice, two minutes ahead (issue 24 item 6), read the way a real
instance offers it: IMDSv2 (a PUT for a session token, then the document with the token).

The probe's real command (sh + curl) runs as a real process; the metadata service is a small
HTTP server on loopback that answers like IMDSv2 does: 401 without a token, 404 for
``spot/instance-action`` until an interruption is scheduled, then the JSON document."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from netfleet.cloud.aws.measure import spot
from netfleet.hosts.local import LocalHost

TOKEN = "AQAEAtest-token"


class Imds(BaseHTTPRequestHandler):
    notice: ClassVar[dict[str, str] | None] = None
    untokened: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_PUT(self) -> None:
        if self.path == "/latest/api/token" and self.headers.get(
            "X-aws-ec2-metadata-token-ttl-seconds"
        ):
            self._send(200, TOKEN)
        else:
            self._send(400, "")

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            Imds.untokened.append(self.path)
            self._send(401, "")
        elif self.path == "/latest/meta-data/spot/instance-action" and Imds.notice:
            self._send(200, json.dumps(Imds.notice))
        else:
            self._send(404, "")

    def _send(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def imds() -> Iterator[str]:
    Imds.notice, Imds.untokened = None, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Imds)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_notice_is_seen_before_ec2_acts(imds: str) -> None:
    seen: list[tuple[str, str]] = []
    host = LocalHost(name="spot-1", address="127.0.0.1")
    probe = spot.NoticeProbe(
        [("i-0abc", host)], lambda iid, why: seen.append((iid, why)), every_s=0.05, base=imds
    )

    async def go() -> None:
        await probe.poll()
        assert not seen  # 404: nothing scheduled
        Imds.notice = {"action": "terminate", "time": "2026-11-25T22:02:00Z"}
        await probe.poll()
        await probe.poll()  # once per instance

    asyncio.run(go())
    assert seen == [
        ("i-0abc", f"{spot.RECLAIMED}: EC2 notice: terminate at 2026-11-25T22:02:00Z "
         "(two-minute warning)")
    ]  # fmt: skip
    assert not Imds.untokened  # IMDSv2 only: every GET carried the session token


@pytest.mark.parametrize(
    "text",
    ["", "not json", '{"action": "none"}', "[1]", '{"time": "2026-11-25T22:02:00Z"}'],
)
def test_no_notice_without_a_scheduled_action(text: str) -> None:
    assert spot.parse_notice(text) is None


def test_a_hostile_time_is_not_repeated() -> None:
    why = spot.parse_notice('{"action": "stop", "time": "\\u001b[31mnow"}')
    assert why is not None and "\x1b" not in why and "an unstated time" in why
