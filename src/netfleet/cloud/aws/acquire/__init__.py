"""Acquire on AWS: the :class:`~.provision.Provisioner` (VPC, subnets, security group, key pair,
instances — every create journalled first), machine images (:mod:`.images`), the state labels
of a launched instance (:mod:`.configstate`) and Fargate tiers (:mod:`.fargate`,
:mod:`.fargate_exec`)."""
