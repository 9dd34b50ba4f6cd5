"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 that records every POST (path,
Authorization header, JSON body). A path starting ``/fail`` answers 500, ``/redirect`` a 307."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Yield (``127.0.0.1:PORT``, the list the POSTs are appended to); stop it whatever happens."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append(
                {"path": self.path, "body": json.loads(body), "auth": self.headers["Authorization"]}
            )
            if self.path.startswith("/redirect"):
                self.send_response(307)
                self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.end_headers()
                return
            self.send_response(500 if self.path.startswith("/fail") else 204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}", got
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
