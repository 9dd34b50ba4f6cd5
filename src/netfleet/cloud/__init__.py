"""netfleet's clouds (rank 13): launch what a campaign measures, price it, and never leave
anything running — cut by the campaign's lifecycle, with each cloud's specifics in its own
package.

The lifecycle, in the order a campaign walks it::

    plan ──▶ acquire ──▶ bootstrap ──▶ measure ──▶ collect ──▶ release
    (prices, quotas,  (machines,    (host key,   (runs on the  (results,   (everything
     checks, waves)    network)      engines,     hosts, spot,  cost line,  given back,
                                     ready)       dead man)     checks)     0 left)

Provider-neutral, shared by every stage:

* :mod:`.journal` — the append-only, fsynced intent journal (written before every create).
* :mod:`.owner` — whose resources these are: the installation's identity, checked on delete.
* :mod:`.faults` — named step boundaries of acquire and release (a seam for test tooling).
* :mod:`.backing` — the ``backing: sim`` loader: the separate package ``netfleet_sim``.

Provider-neutral stages: :mod:`.plan` (waves, run-length bounds) and :mod:`.bootstrap` (host
keys, cloud-init user-data, readiness over SSH).

One package per cloud: :mod:`.aws` (EC2 and Fargate), cut by the same stages.
"""
