"""netfleet's AWS provider (rank 13): launch what a campaign measures, price it, and never leave
anything running.

* :mod:`.catalogue` — advertised network figures from DescribeInstanceTypes.
* :mod:`.prices` — the dated price table shipped in the repo and its refresh from the Pricing API.
* :mod:`.journal` — the append-only, fsynced intent journal (written before every create).
* :mod:`.provision` — :class:`Provisioner`: acquire → hosts with pinned host keys, release.
* :mod:`.teardown` — ordered teardown, ``destroy`` from the journal alone, ``reap`` by tag.
"""
