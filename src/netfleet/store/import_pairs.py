"""The client's and the server's iperf3 file of one test, imported together, are one run
(issue 36): paired by iperf3's ``cookie`` (the same in both files' ``start``), the server's
document goes where netfleet keeps a server's JSON (``result.server_output_json``, as
``--get-server-output`` would have put it), so the run has its receiver's intervals and one
direction — not two runs, one "out" from the client's side and one "in" from the server's.

* Only TCP tests are paired; UDP files stay runs of their own (a UDP server's report is the
  receiver's loss and jitter, kept apart from the client's pacing).
* Files are paired within one import, when the partner comes at most :data:`PAIR_WINDOW`
  files later (files of one test sit side by side in a folder); a file left unpaired is
  imported on its own, as before.
* The pair's run id is made of both files' SHA-256 (importing the pair again is a no-op);
  the server file's provenance (its bytes, hash, source) is kept in
  ``notes.imported.server_file``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable

from netfleet.store.envelope import Envelope
from netfleet.store.import_base import run_identity

#: how many prepared files wait for their partner at most (then the oldest is imported alone)
PAIR_WINDOW = 256

#: (source, key, gzip bytes, interval flags, (cookie, side) or None)
Candidate = tuple[str, str, bytes, int, "tuple[str, str] | None"]


def pair_key(env: Envelope) -> tuple[str, str] | None:
    """(cookie, "client" | "server") of a complete iperf3 TCP file that has a cookie."""
    if env.engine.name != "iperf3" or env.status != "ok" or not isinstance(env.result, dict):
        return None
    start = env.result.get("start")
    test = start.get("test_start") if isinstance(start, dict) else None
    cookie = start.get("cookie") if isinstance(start, dict) else None
    if not isinstance(cookie, str) or not cookie or not isinstance(test, dict):
        return None
    if str(test.get("protocol", "")).upper() != "TCP":
        return None
    if env.subject == "server" and "server_output_json" not in env.result:
        return None
    return cookie, env.subject


def _envelope(gz: bytes) -> Envelope:
    return Envelope.model_validate(json.loads(gzip.decompress(gz)))


def merged(client: Envelope, server: Envelope) -> Envelope:
    """The client's run with the server's document as its ``server_output_json`` (a client
    file that has one already, from ``--get-server-output``, keeps its own)."""
    assert client.result is not None and server.result is not None
    result = dict(client.result)
    result.setdefault("server_output_json", server.result["server_output_json"])
    mine, theirs = client.notes["imported"], server.notes["imported"]
    run_id = run_identity(f"{mine['sha256']}+{theirs['sha256']}", client.campaign, client.labels)
    notes = {
        **client.notes,
        "imported": {**mine, "paired_by": "iperf3 cookie", "server_file": theirs},
    }
    return client.model_copy(
        update={
            "run_id": run_id,
            "run_key": run_id,
            "result": result,
            "notes": notes,
            "client": client.client.model_copy(update={"address": server.client.address}),
        }
    )


class Pairing:
    """Holds candidates until their partner comes (then hands ``take`` the pair's run), or
    until :data:`PAIR_WINDOW` newer ones wait (then ``take`` gets it alone)."""

    def __init__(self, take: Callable[[str, str, bytes, int], None]) -> None:
        self.take = take
        self.held: dict[tuple[str, str], tuple[str, str, bytes, int]] = {}
        #: (server file, client file) of every pair made
        self.paired: list[tuple[str, str]] = []

    def add(self, outcome: Candidate) -> None:
        source, rel, gz, flags, key = outcome
        if key is None:
            self.take(source, rel, gz, flags)
            return
        cookie, side = key
        partner = self.held.pop((cookie, "server" if side == "client" else "client"), None)
        if partner is None:
            if (cookie, side) in self.held:  # the same side twice: the first goes alone
                self.take(*self.held.pop((cookie, side)))
            self.held[(cookie, side)] = (source, rel, gz, flags)
            if len(self.held) > PAIR_WINDOW:
                self.take(*self.held.pop(next(iter(self.held))))
            return
        mine = (source, rel, gz, flags)
        client, server = (mine, partner) if side == "client" else (partner, mine)
        from netfleet.errors import StoreError
        from netfleet.store.rawfile import encode

        try:
            pair = merged(_envelope(client[2]), _envelope(server[2]))
            pair_rel, pair_gz = encode(pair, readable=True)
        except StoreError:  # the pair breaks the raw-result limit: each file alone
            self.take(*client)
            self.take(*server)
            return
        self.paired.append((server[0], client[0]))
        self.take(client[0], pair_rel, pair_gz, client[3] + server[3])

    def release(self) -> None:
        """Every file still waiting, alone (the end of the import, or its interruption)."""
        held, self.held = self.held, {}
        for outcome in held.values():
            self.take(*outcome)
