"""Playing EC2 reclaiming a spot instance (moto cannot set an instance's state reason).

:func:`reclaim` tags the instance with ``netfleet.cloud.aws.measure.spot.SIM_REASON_TAG`` —
the reason a watcher built with ``sim=True`` (``backing: sim``) reads instead of EC2's state
reason — then terminates it for real.
"""

from __future__ import annotations

from typing import Any

from netfleet.cloud.aws.measure.spot import SIM_REASON_TAG, SPOT_CODE


def reclaim(ec2: Any, instance_id: str) -> None:
    """What the sim (or a test) does to play EC2 reclaiming a spot instance."""
    ec2.create_tags(Resources=[instance_id], Tags=[{"Key": SIM_REASON_TAG, "Value": SPOT_CODE}])
    ec2.terminate_instances(InstanceIds=[instance_id])
