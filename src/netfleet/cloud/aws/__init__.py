"""The AWS provider: EC2 instances and Fargate tasks, cut by the campaign's lifecycle.

* :mod:`.campaign` — :class:`CloudSpec`, the cloud part of a campaign every stage reads.
* :mod:`.provider` — :class:`AwsProvider`, host kind ``aws`` on the runner's host lifecycle.
* :mod:`.runs` — ``netfleet run``/``plan`` on a campaign with a ``cloud:`` block.
* :mod:`.retry` — AWS's "not yet" answers, retried with bounded backoff.
* :mod:`.plan` — prices, the bill, the cost guard, quotas, permissions, the safety gate, the
  instance catalogue.
* :mod:`.acquire` — the :class:`Provisioner` (VPC … instances), images, Fargate tiers.
* :mod:`.measure` — spot reclaims and notices, the dead man's heartbeat.
* :mod:`.collect` — cross-checks after the runs (ENA, CloudWatch).
* :mod:`.release` — ordered teardown, ``destroy`` from the journal, ``reap`` by tag.
"""
