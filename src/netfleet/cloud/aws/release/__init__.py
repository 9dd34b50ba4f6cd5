"""Release on AWS: ordered teardown from the journal and the tags (:mod:`.teardown`), Fargate's
part of it (:mod:`.fargate_teardown`), ``destroy`` and ``reap``."""
