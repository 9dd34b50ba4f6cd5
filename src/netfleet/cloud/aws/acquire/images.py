"""The machine image of a campaign's instances, per region and architecture.

``image: al2023`` (the default) reads Amazon Linux 2023's SSM public parameter; ``debian-12`` /
``debian-13`` ask EC2 DescribeImages for Debian's own AMIs — owner ``136693071363`` (the Debian
cloud team's account), name ``debian-<release>-<amd64|arm64>-*``, state available — and take
the newest by CreationDate. An explicit ``ami:`` is used as it is (and assumed Amazon Linux-like:
user ``ec2-user``, dnf).
"""

from __future__ import annotations

from typing import Any

from netfleet import aws
from netfleet.cloud.bootstrap.families import FAMILIES, Family
from netfleet.errors import EnvironmentProblem

__all__ = ["FAMILIES", "Family", "architecture", "debian_ami", "debian_filter", "resolve"]

#: Debian's official AWS account (the Debian cloud team publishes bookworm and later here)
DEBIAN_OWNER = "136693071363"
AL2023_PARAMETER = {
    "x86_64": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
    "arm64": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64",
}
#: EC2's architecture → Debian's name for it
DEBIAN_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def architecture(architectures: tuple[str, ...]) -> str:
    """x86_64 when the type runs it, else arm64 (Graviton), from DescribeInstanceTypes."""
    return "x86_64" if "x86_64" in architectures else "arm64"


def debian_filter(release: str, arch: str) -> str:
    """The AMI name pattern of Debian ``release`` (12, 13) on EC2 architecture ``arch``."""
    return f"debian-{release}-{DEBIAN_ARCH[arch]}-*"


def debian_ami(ec2: Any, release: str, arch: str) -> str:
    """The newest available Debian ``release`` AMI for ``arch`` in ``ec2``'s region."""
    pattern = debian_filter(release, arch)
    images = ec2.describe_images(
        Owners=[DEBIAN_OWNER],
        Filters=[
            {"Name": "name", "Values": [pattern]},
            {"Name": "state", "Values": ["available"]},
            {"Name": "architecture", "Values": [arch]},
        ],
    )["Images"]
    if not images:
        region = ec2.meta.region_name
        raise EnvironmentProblem(
            f"no Debian {release} image in {region}: DescribeImages found none owned by "
            f"{DEBIAN_OWNER} named {pattern} (state available, architecture {arch})",
            hint="pick another region or image (image: al2023), or give `ami:`",
        )
    newest = max(images, key=lambda i: (str(i.get("CreationDate", "")), str(i["Name"])))
    return str(newest["ImageId"])


def resolve(ec2: Any, image: str, arch: str) -> str:
    """The AMI id of ``image`` (al2023, debian-12, debian-13) for ``arch`` in ``ec2``'s region."""
    if image == "al2023":
        ssm = aws.client("ssm", ec2.meta.region_name)
        return str(ssm.get_parameter(Name=AL2023_PARAMETER[arch])["Parameter"]["Value"])
    return debian_ami(ec2, image.removeprefix("debian-"), arch)
