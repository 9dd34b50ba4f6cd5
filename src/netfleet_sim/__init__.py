"""netfleet's simulation and emulation tooling — development and test machinery, never part of
the product wheel (which ships ``src/netfleet`` only).

netfleet loads it lazily: :mod:`netfleet.cloud.backing` for ``backing: sim``, and
:mod:`netfleet.plugins` for the modules ``NETFLEET_PLUGINS`` names.

* :mod:`.instances` — EC2 instances as lab namespaces shaped from their advertised figures;
* :mod:`.fargate` — Fargate tiers as lab namespaces shaped like seed 000's measurements;
* :mod:`.labs` — the sim backing's labs on disk, and taking them down safely;
* :mod:`.faults` — kill points (``NETFLEET_FAULT_AT``) for the kill -9 walks;
* :mod:`.awsfaults` — AWS's misbehaviour (eventual consistency, throttling, capacity,
  DependencyViolation, spot notices, stopped tasks) injected in front of moto;
* :mod:`.userland` — ``backing: ssh`` instances realised as booted Debian 12 userlands.
"""
