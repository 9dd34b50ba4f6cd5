"""The watch's outward parts hold up against another local user (issue 37, low items): the
OpenMetrics endpoint bounds its connections and closes idle ones; a systemd unit never expands
a ``$`` of a path; the alert log is rotated."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from netfleet.watch import alerts, openmetrics
from netfleet.watch.alerts import append_alerts
from netfleet.watch.openmetrics import MetricsServer
from netfleet.watch.systemd import units


def test_the_metrics_endpoint_bounds_its_connections_and_closes_idle_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(openmetrics, "CONNECTION_TIMEOUT", 0.5, raising=False)
    before = threading.active_count()
    idle: list[socket.socket] = []
    with MetricsServer("127.0.0.1", 0) as server:
        server.update("# TYPE x gauge\nx 1\n# EOF\n")
        try:
            for _ in range(60):  # connected, never a request
                idle.append(socket.create_connection(("127.0.0.1", server.port)))
            time.sleep(0.2)
            threads = threading.active_count() - before
            assert threads <= 16 + 1, threads  # MAX_CONNECTIONS, and the server's
            time.sleep(1.0)  # the idle ones are closed after their timeout
            url = f"http://127.0.0.1:{server.port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as resp:
                assert b"x 1" in resp.read()
        finally:
            for s in idle:
                s.close()


def test_a_dollar_in_a_unit_s_command_is_never_expanded(tmp_path: Path) -> None:
    spec = "/srv/${NETFLEET_WATCH_WEBHOOK}/$HOME/spec.yaml"
    u = units("nf-x", ["/usr/bin/netfleet", "watch", spec], 3600, tmp_path)
    (line,) = [ln for ln in u.service.splitlines() if ln.startswith("ExecStart=")]
    assert (
        line
        == 'ExecStart=/usr/bin/netfleet watch "/srv/$${NETFLEET_WATCH_WEBHOOK}/$$HOME/spec.yaml"'
    )


def test_the_alert_log_is_rotated_past_its_size(tmp_path: Path) -> None:
    log = tmp_path / "alerts.jsonl"
    with log.open("wb") as fh:
        fh.write(b'{"old": 1}\n')
        fh.truncate(
            alerts.MAX_ALERT_LOG_BYTES + 1 if hasattr(alerts, "MAX_ALERT_LOG_BYTES") else 1 << 30
        )
    append_alerts(log, [{"event": "alert raised"}])
    assert log.read_bytes() == b'{"event": "alert raised"}\n'
    assert (tmp_path / "alerts.jsonl.1").read_bytes().startswith(b'{"old": 1}\n')
    append_alerts(log, [{"event": "alert cleared"}])  # below the size: appended
    assert log.read_bytes().count(b"\n") == 2
