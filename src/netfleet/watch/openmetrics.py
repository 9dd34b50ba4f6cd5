"""The latest value of every watched series as OpenMetrics text (what Prometheus scrapes), in a
file (rewritten atomically each round) and, when asked, over HTTP on a loopback address.

Families (docs/watch.md): per metric, the latest round's mean and the baseline mean in base
units (``netfleet_watch_goodput_bits_per_second``, ``netfleet_watch_rr_p50_seconds``, …), and
for every series ``netfleet_watch_change_ratio``, ``netfleet_watch_alert`` (0/1); per campaign
``netfleet_watch_rounds_total`` and ``netfleet_watch_last_round_timestamp_seconds``.
"""

from __future__ import annotations

import ipaddress
import math
import socket
import threading
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from netfleet.durable import atomic_write
from netfleet.errors import InputError
from netfleet.watch.baseline import SERIES_KEYS, Judgement

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PREFIX = "netfleet_watch"
#: compare's metric → (base unit suffix, factor from the metric's unit to it)
BASE_UNITS: dict[str, tuple[str, float]] = {
    "goodput": ("bits_per_second", 1e6),
    "rr_p50": ("seconds", 1e-6),
    "rr_p99": ("seconds", 1e-6),
    "ping_mean": ("seconds", 1e-6),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _num(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(float(x))


class _Family:
    def __init__(self, name: str, kind: str, help_: str, unit: str = "") -> None:
        self.name, self.kind, self.help, self.unit = name, kind, help_, unit
        self.samples: list[str] = []

    def add(self, labels: Sequence[tuple[str, str]], value: float, suffix: str = "") -> None:
        self.samples.append(f"{self.name}{suffix}{_labels(labels)} {_num(value)}")

    def text(self) -> str:
        head = [f"# TYPE {self.name} {self.kind}"]
        if self.unit:
            head.append(f"# UNIT {self.name} {self.unit}")
        head.append(f"# HELP {self.name} {_escape(self.help)}")
        return "\n".join(head + self.samples)


def exposition(
    campaign: str, judgements: Sequence[Judgement], rounds: int, last_round_time: float
) -> str:
    """The OpenMetrics text of the latest judgement of every series (ends with ``# EOF``)."""
    families: dict[str, _Family] = {}

    def family(name: str, kind: str, help_: str, unit: str = "") -> _Family:
        if name not in families:
            families[name] = _Family(name, kind, help_, unit)
        return families[name]

    for j in sorted(judgements, key=lambda j: j.series.name):
        labels = [("campaign", campaign)]
        labels += [(k, j.series.key.get(k, "")) for k in SERIES_KEYS]
        unit, factor = BASE_UNITS[j.series.metric]
        m = j.series.metric
        if j.latest is not None:
            family(
                f"{PREFIX}_{m}_{unit}", "gauge", f"latest round's mean {m} per series", unit
            ).add(labels, j.latest * factor)
        if j.baseline is not None:
            family(
                f"{PREFIX}_{m}_baseline_{unit}", "gauge", f"rolling baseline mean {m}", unit
            ).add(labels, j.baseline * factor)
        with_metric = [*labels, ("metric", m)]
        d = j.diff
        if d is not None and d.diff_percent is not None:
            family(f"{PREFIX}_change_ratio", "gauge", "(recent − baseline) / baseline mean").add(
                with_metric, d.diff_percent / 100
            )
        family(f"{PREFIX}_alert", "gauge", "1 while the series is in alert, else 0").add(
            with_metric, 1.0 if j.state == "alert" else 0.0
        )
    camp = [("campaign", campaign)]
    family(f"{PREFIX}_rounds", "counter", "rounds run by this watch").add(camp, rounds, "_total")
    family(
        f"{PREFIX}_last_round_timestamp_seconds", "gauge", "when the latest round ended (Unix)"
    ).add(camp, last_round_time)
    return "\n".join(f.text() for f in families.values()) + "\n# EOF\n"


def write_metrics(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode())


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:9464`` / ``[::1]:9464`` → (host, port); only loopback addresses."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
        loopback = sep and ipaddress.ip_address(host).is_loopback and 0 <= port < 65536
    except ValueError:
        loopback = False
    if not loopback:
        raise InputError(
            f"--metrics-listen: {text!r} is not a loopback ADDRESS:PORT",
            hint="e.g. 127.0.0.1:9464 (a reverse proxy or node exporter can publish it further)",
        )
    return host, port


#: connections served at once (a thread each); one more is closed at once
MAX_CONNECTIONS = 16
#: seconds a connection may sit idle (no request, or a request trickled) before it is closed
CONNECTION_TIMEOUT = 5.0


class _Bounded(ThreadingHTTPServer):
    """At most :data:`MAX_CONNECTIONS` connections (threads) at a time: 1,000 idle
    connections held 1,006 threads of the root process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: closed, no thread
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _V6Server(_Bounded):
    address_family = socket.AF_INET6


class MetricsServer:
    """Serves the latest exposition at ``/metrics`` on a loopback address, in a thread."""

    def __init__(self, host: str, port: int) -> None:
        self._text = "# EOF\n"
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = CONNECTION_TIMEOUT  # the socket's: an idle connection is closed

            def do_GET(self) -> None:
                if self.path.split("?")[0] not in ("/", "/metrics"):
                    self.send_error(404)
                    return
                body = server.text.encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        cls: type[_Bounded] = _V6Server if ":" in host else _Bounded
        try:
            self._httpd = cls((host, port), Handler)
        except OSError as exc:
            raise InputError(
                f"--metrics-listen {host}:{port}: {exc.strerror}", hint="choose a free port"
            ) from exc
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def text(self) -> str:
        with self._lock:
            return self._text

    def update(self, text: str) -> None:
        with self._lock:
            self._text = text

    def __enter__(self) -> MetricsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
