"""Topologies → rounds of (client, server) pairs.

A full mesh is scheduled like a round-robin tournament (the circle method): with n hosts, n − 1
rounds in which every host meets exactly one other, so a round's runs never share a host; with
odd n a phantom host is added and whoever meets it rests that round (one bye per round, n
rounds). Every unordered pair meets exactly once; a mesh runs both orientations, a→b then b→a,
inside that pair's slot of the round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from netfleet.spec.topology import Topology

T = TypeVar("T")

#: a round: (client, server) pairs in which no host appears twice (for a mesh)
Round = list[tuple[str, str]]


def circle_rounds(items: Sequence[T]) -> list[list[tuple[T, T]]]:
    """Round-robin rounds over ``items``: each unordered pair exactly once, each item at most
    once per round. n − 1 rounds for even n; n rounds (one bye each) for odd n."""
    n = len(items)
    if n < 2:
        return []
    ring = list(range(n)) + ([-1] if n % 2 else [])  # -1: the phantom that gives a bye
    size = len(ring)
    half = size // 2
    rounds: list[list[tuple[T, T]]] = []
    for _ in range(size - 1):
        pairs = []
        for i in range(half):
            a, b = ring[i], ring[size - 1 - i]
            if a >= 0 and b >= 0:
                pairs.append((items[a], items[b]))
        rounds.append(pairs)
        ring.insert(1, ring.pop())  # keep position 0, rotate the rest by one
    return rounds


def topology_rounds(topology: Topology, campaign_hosts: list[str]) -> list[Round]:
    """The (client, server) pairs a topology runs, grouped in rounds, in plan order."""
    members = topology.members(campaign_hosts)
    if topology.kind == "pairs":
        return [[(members[i], members[i + 1]) for i in range(0, len(members), 2)]]
    if topology.kind == "star":
        assert topology.center is not None  # checked by the spec
        return [[(client, topology.center) for client in members]]
    rounds = []
    for pairs in circle_rounds(members):
        rounds.append(pairs + [(b, a) for a, b in pairs])
    return rounds
