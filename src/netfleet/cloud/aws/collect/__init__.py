"""Collect on AWS: cross-checks of the results after the runs (:mod:`.checks`: ENA, CloudWatch
bytes against iperf3)."""
