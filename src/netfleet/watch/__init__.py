"""``netfleet watch``: a campaign run on a schedule, each round judged against a rolling baseline
of the same series with ``compare``'s statistics; alerts go to a JSON-lines log, an optional
webhook and an OpenMetrics file/endpoint (docs/watch.md).

Modules: ``schedule`` (when), ``baseline`` (the verdict), ``alerts`` (log + webhook),
``openmetrics`` (exposition + loopback endpoint), ``systemd`` (timer units), ``config`` (the
checked settings), ``loop`` (rounds).
"""
