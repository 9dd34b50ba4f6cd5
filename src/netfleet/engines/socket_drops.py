"""A receiving host's UDP socket-buffer drops: ``RcvbufErrors`` of the ``Udp:`` lines in
``/proc/net/snmp`` plus ``Udp6RcvbufErrors`` in ``/proc/net/snmp6`` — datagrams that reached the
host but found their socket's receive buffer full (the reading tool fell behind). Read before and
after a ``pps`` run, their growth tells the receiver's losses from the path's. The counters are
per network namespace (a lab host's own), else the whole host's: other UDP receivers on the host
count too."""

from __future__ import annotations

from itertools import pairwise

from netfleet.engines.contract import Host
from netfleet.errors import HostError

SOURCES = ("/proc/net/snmp", "/proc/net/snmp6")


def parse(text: str) -> int | None:
    """The sum of the UDP receive-buffer drop counters found in ``text`` (the two files'
    contents); None when neither is there."""
    found: list[int] = []
    lines = text.splitlines()
    for head, values in pairwise(lines):
        names, numbers = head.split(), values.split()
        if names[:1] == ["Udp:"] == numbers[:1] and "RcvbufErrors" in names:
            at = names.index("RcvbufErrors")
            if at < len(numbers) and numbers[at].isdigit():
                found.append(int(numbers[at]))
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0] == "Udp6RcvbufErrors" and words[1].isdigit():
            found.append(int(words[1]))
    return sum(found) if found else None


async def read(host: Host) -> int | None:
    """The host's UDP receive-buffer drops so far; None where they cannot be read (no
    ``/proc/net/snmp``: not Linux). A host without IPv6 has no snmp6: its IPv4 count is kept."""
    try:
        res = await host.run(["cat", *SOURCES], timeout=10)
    except HostError:
        return None
    return parse(res.stdout)


def grown(before: int | None, after: int | None) -> int | None:
    """Drops during the run: ``after − before``; None when either is unknown or the counter
    went back (a reboot, or another namespace answered)."""
    if before is None or after is None or after < before:
        return None
    return after - before
