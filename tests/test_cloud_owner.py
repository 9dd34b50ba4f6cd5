"""netfleet deletes only what this installation created (issue 24 item 2, issue 23 item 7).

Two installations (two state directories) run campaigns of the same name in one account
(moto's server, its own process on loopback): destroy and reap of one never touch the other's
resources; a foreign owner's expired campaign is reaped only with ``all_owners``. A key pair or
placement group of the campaign's name is deleted only when it carries netfleet's tags."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.cloud import owner
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.release import teardown
from tests import awshooks, motokit
from tests.motokit import MotoServer

moto = motokit.moto
SPEC = {
    "campaign": "nf-own",
    "region": "us-east-1",
    "fleets": [{"instance_type": "t3.micro", "count": 1, "role": "server"}],
}


fresh = motokit.fresh  # the module's moto server, reset for each test


def counts(root: Path) -> dict[str, int | None]:
    return teardown.remaining(aws.client("ec2", "us-east-1"), "nf-own", owner.installation(root))


@pytest.mark.slow
def test_every_resource_carries_installation_and_session(fresh: MotoServer, tmp_path: Path) -> None:
    prov = Provisioner(CloudSpec(**SPEC), tmp_path, session="s1")
    prov.acquire()
    ec2 = aws.client("ec2", "us-east-1")
    me = owner.installation(tmp_path)
    tagged = ec2.describe_tags(Filters=[{"Name": "key", "Values": [owner.TAG_INSTALLATION]}])
    kinds = {t["ResourceType"] for t in tagged["Tags"] if t["Value"] == me}
    expect = {"vpc", "subnet", "security-group", "instance", "key-pair", "internet-gateway"}
    assert expect | {"route-table"} <= kinds, kinds
    sessions = ec2.describe_tags(Filters=[{"Name": "key", "Values": [owner.TAG_SESSION]}])
    assert {t["Value"] for t in sessions["Tags"]} == {"s1"}
    prov.release()
    assert not any(counts(tmp_path).values())


@pytest.mark.slow
def test_destroy_leaves_another_installations_campaign_of_the_same_name(
    fresh: MotoServer, tmp_path: Path
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    Provisioner(CloudSpec(**SPEC), theirs).acquire()
    Provisioner(CloudSpec(**SPEC), mine).acquire()
    assert owner.installation(mine) != owner.installation(theirs)
    teardown.destroy(mine, "nf-own")
    assert not any(counts(mine).values())
    left = counts(theirs)
    assert left["instances"] == 1 and left["vpcs"] == 1 and left["key-pairs"] == 1, left
    teardown.destroy(theirs, "nf-own")
    assert not any(counts(theirs).values())


@pytest.mark.slow
def test_reap_takes_only_this_installations_expired_campaigns_unless_all_owners(
    fresh: MotoServer, tmp_path: Path
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=5)
    Provisioner(CloudSpec(**{**SPEC, "campaign": "nf-theirs"}), theirs, now=past).acquire()
    Provisioner(CloudSpec(**{**SPEC, "campaign": "nf-mine"}), mine, now=past).acquire()
    now = dt.datetime.now(dt.UTC)
    found = teardown.reap(mine, ["us-east-1"], now, delete=True, poll_s=0.05)
    assert [e.campaign for e in found] == ["nf-mine"]
    ec2 = aws.client("ec2", "us-east-1")
    assert teardown.live_instances(ec2, "nf-theirs", None)  # left alone
    assert not teardown.live_instances(ec2, "nf-mine", None)
    found = teardown.reap(mine, ["us-east-1"], now, delete=True, poll_s=0.05, all_owners=True)
    assert "nf-theirs" in [e.campaign for e in found]  # (nf-mine's terminated instance too)
    assert not teardown.live_instances(ec2, "nf-theirs", None)


@pytest.mark.slow
def test_destroy_never_deletes_a_key_pair_or_placement_group_by_name_alone(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 item 7: an untagged key pair named like the campaign's, made outside netfleet,
    and a forged ``placement-group`` journal record: destroy deletes neither."""
    ec2 = aws.client("ec2", "us-east-1")
    from netfleet.cloud.bootstrap import hostkeys

    key = hostkeys.generate("victim")
    ec2.import_key_pair(
        KeyName="netfleet-nf-own", PublicKeyMaterial=key.public_openssh.encode()
    )  # no tags: not netfleet's
    journal = Journal(tmp_path, "nf-own")
    journal.intent("placement-group", "us-east-1", "main")
    journal.created("placement-group", "us-east-1", "main", "netfleet-nf-own")
    with awshooks.hooked(monkeypatch) as calls:
        totals = teardown.destroy(tmp_path, "nf-own")
    assert not calls.ops("DeletePlacementGroup") and not calls.ops("DeleteKeyPair")
    assert totals.get("key-pairs", 0) == 0
    names = [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]]
    assert "netfleet-nf-own" in names
    ec2.delete_key_pair(KeyName="netfleet-nf-own")
    # a tagged key pair of another campaign of this installation is not this campaign's either
    tags = [{"Key": TAG_CAMPAIGN, "Value": "nf-other"}]
    ec2.import_key_pair(
        KeyName="netfleet-nf-own",
        PublicKeyMaterial=key.public_openssh.encode(),
        TagSpecifications=[{"ResourceType": "key-pair", "Tags": tags}],
    )
    teardown.destroy(tmp_path, "nf-own")
    assert "netfleet-nf-own" in [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]]
