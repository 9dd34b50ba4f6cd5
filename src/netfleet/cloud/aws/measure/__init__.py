"""While the runs measure on AWS: spot reclaims and interruption notices (:mod:`.spot`) and the
dead man's heartbeat that keeps the campaign's expiry ahead of the plan (:mod:`.deadman`)."""
