"""SSH hosts without a network: the remote command line (parsed by real shells), tool checks
and installs (recorded), inventories and their import from Terraform/OpenTofu."""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import HostError, InputError, SpecError
from netfleet.hosts.base import CommandResult, Host
from netfleet.hosts.packages import install, install_commands
from netfleet.hosts.registry import build_host
from netfleet.hosts.ssh import SshHost, remote_command
from netfleet.runner.tools import ensure_tools, required_tools
from netfleet.spec import load_spec
from netfleet.spec.inventory import inventory_from_terraform, inventory_yaml, load_inventory

ARGS = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=30), max_size=6
)


@settings(max_examples=150, deadline=None)
@given(ARGS)
def test_a_login_shell_runs_exactly_the_argv(args: list[str]) -> None:
    """Whatever the strings, the remote shell (bash or dash here) passes them through intact."""
    command = remote_command(["printf", "%s\\0", *args])
    for shell in ("bash", "sh"):
        out = subprocess.run(
            [shell, "-c", command], input=b"token\n", capture_output=True, check=True
        ).stdout
        head, _, rest = out.partition(b"\n")
        assert head.startswith(b"NETFLEET_PID ")
        assert rest.split(b"\0")[:-1] == [a.encode() for a in args] or (not args and rest == b"\0")


def test_a_missing_command_is_reported_not_run() -> None:
    command = remote_command(["no-such-tool-x"])
    out = subprocess.run(["sh", "-c", command], input=b"token\n", capture_output=True)
    assert out.returncode == 127 and out.stdout == b"NETFLEET_MISSING\n"


def test_unrepresentable_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        remote_command(["echo", "a\0b"])
    with pytest.raises(ValueError, match="Unicode"):
        remote_command(["echo", "\ud800"])
    with pytest.raises(ValueError, match="empty"):
        remote_command([])


def test_sudo_only_for_root_commands_when_asked() -> None:
    host = SshHost(name="x", address="10.0.0.1", user="ubuntu", sudo=True)
    assert host.privileged(["apt-get", "update"]) == ["sudo", "-n", "--", "apt-get", "update"]
    assert SshHost(name="x", address="10.0.0.1", user="root", sudo=True).privileged(["a"]) == ["a"]
    assert SshHost(name="x", address="10.0.0.1", user="ubuntu").privileged(["a"]) == ["a"]
    wrapped = host.wrap(["iperf3", "-s"])
    assert wrapped[:4] == ["ssh", "-p", "22", "ubuntu@10.0.0.1"]


@dataclass
class FakeHost(Host):
    """A host that answers `command -v` from a set of installed tools and records commands."""

    installed: set[str] = field(default_factory=set)
    commands: list[list[str]] = field(default_factory=list)
    sudo: bool = True
    kind = "ssh"

    def wrap(self, argv: list[str]) -> list[str]:
        return argv

    def privileged(self, argv: list[str]) -> list[str]:
        return ["sudo", "-n", "--", *argv] if self.sudo else argv

    async def run(self, argv: list[str], timeout: float = 30) -> CommandResult:
        self.commands.append(argv)
        if argv[:2] == ["sh", "-c"]:
            missing = [t for t in argv[4:] if t not in self.installed]
            return CommandResult(argv, 0, "".join(t + "\n" for t in missing), "")
        if "install" in argv:
            self.installed |= {"iperf3", "ip", "ss", "tc"}
        return CommandResult(argv, 0, "", "")


def test_missing_tools_stop_preflight_with_the_fix_unless_install() -> None:
    host = FakeHost(name="h", address="10.0.0.1", installed={"apt-get", "ethtool"})
    need = {"h": ["ip", "ss", "tc", "ethtool", "iperf3"]}
    with pytest.raises(HostError) as info:
        asyncio.run(ensure_tools({"h": host}, need))
    assert "host h: ip, ss, tc, iperf3 missing (apt-get install iproute2 iperf3)" in str(info.value)
    assert "--install" in str(info.value)
    asyncio.run(ensure_tools({"h": host}, need, install_missing=True))
    installs = [c for c in host.commands if "apt-get" in c and "sh" not in c[:1]]
    assert installs[-1] == [
        "sudo",
        "-n",
        "--",
        "env",
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        "iproute2",
        "iperf3",
    ]


def test_install_uses_the_hosts_package_manager() -> None:
    host = FakeHost(name="h", address="10.0.0.1", installed={"apk"}, sudo=False)
    assert asyncio.run(install(host, ["iperf3", "tc"])) == ["iperf3", "iproute2"]
    assert host.commands[-1] == ["apk", "add", "--no-cache", "iperf3", "iproute2"]
    assert install_commands("dnf", ["iperf3", "iproute-tc"]) == [
        ["dnf", "install", "-y", "iperf3", "iproute-tc"]
    ]
    with pytest.raises(HostError, match="no known package manager"):
        asyncio.run(install(FakeHost(name="h", address="x"), ["iperf3"]))


def test_required_tools_per_host(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(
        "campaign: c\nhosts: {a: {kind: local}, b: {kind: local}}\n"
        "tests: [{name: t, client: a, server: b}]\n"
    )
    from netfleet.plan import expand

    need = required_tools(expand(load_spec(p)))
    assert need["a"] == ["ip", "ss", "tc", "ethtool", "iperf3"] == need["b"]


# ----------------------------------------------------------------------------------- inventory
def test_inventory_merges_into_a_spec_with_paths_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "hosts.yaml").write_text(
        "- name: big\n  address: 10.0.0.10\n  user: ubuntu\n  key: keys/bench\n"
        "  labels: {instance_type: c5.18xlarge}\n"
        "- {name: m5, address: m5.example.com, port: 2222}\n"
    )
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "campaign: c\ninventory: fleet/hosts.yaml\nhosts: {here: {kind: local}}\n"
        "tests: [{name: t, topology: {kind: star, center: big, hosts: all}}]\n"
    )
    loaded = load_spec(spec)
    assert list(loaded.hosts) == ["big", "m5", "here"]
    big = loaded.hosts["big"]
    assert big.kind == "ssh" and big.key == str(tmp_path / "fleet" / "keys" / "bench")
    host = build_host("m5", loaded.hosts["m5"])
    assert isinstance(host, SshHost) and host.port == 2222 and host.target == "m5.example.com"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{a: 1}", "a YAML list of hosts"),
        ("- {address: 10.0.0.1}", "give each host a name"),
        ("- {name: a, address: 10.0.0.1}\n- {name: a, address: 10.0.0.2}", "listed twice"),
        ("- {name: a, address: '-oProxyCommand=x'}", "neither an IP address nor a host name"),
        (
            "- {name: a, address: 10.0.0.1, key: '-----BEGIN OPENSSH PRIVATE KEY-----'}",
            "key material",
        ),
        ("- {name: a, address: 10.0.0.1, passwrd: x}", "unknown field"),
    ],
)
def test_bad_inventories_name_the_item_and_line(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "hosts.yaml"
    p.write_text(text + "\n")
    with pytest.raises(SpecError) as info:
        load_inventory(p)
    assert message in str(info.value)


def test_a_host_in_both_the_spec_and_the_inventory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text("- {name: a, address: 10.0.0.1}\n")
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "campaign: c\ninventory: hosts.yaml\nhosts: {a: {kind: local}, b: {kind: local}}\n"
        "tests: [{name: t, client: a, server: b}]\n"
    )
    with pytest.raises(SpecError, match="'a' is also in"):
        load_spec(spec)


TERRAFORM = {
    "netfleet_hosts": {
        "sensitive": False,
        "type": ["map", ["object", {}]],
        "value": {
            "big": {
                "private_ip": "10.0.1.10",
                "public_ip": "54.1.2.3",
                "user": "ubuntu",
                "instance_type": "c5.18xlarge",
                "labels": {"role": "server"},
            },
            "m5-1": {"address": "10.0.1.11", "user": "ec2-user", "sudo": True, "zone": None},
        },
    },
    "vpc_id": {"sensitive": False, "type": "string", "value": "vpc-1"},
}


def test_terraform_output_becomes_an_inventory(tmp_path: Path) -> None:
    entries = inventory_from_terraform(TERRAFORM)
    assert entries == [
        {
            "name": "big",
            "address": "10.0.1.10",
            "ssh_address": "54.1.2.3",
            "user": "ubuntu",
            "labels": {"instance_type": "c5.18xlarge", "role": "server"},
        },
        {"name": "m5-1", "address": "10.0.1.11", "user": "ec2-user", "sudo": True},
    ]
    listed = {"hosts": {"value": [{"name": "a", "address": "10.0.0.1"}]}}
    assert inventory_from_terraform(listed) == [{"name": "a", "address": "10.0.0.1"}]
    path = tmp_path / "hosts.yaml"
    path.write_text(inventory_yaml(entries, "tf.json"))
    assert sorted(load_inventory(path)) == ["big", "m5-1"]


@pytest.mark.parametrize(
    ("doc", "output", "message"),
    [
        ({"a": {"value": {}}, "b": {"value": {}}}, None, "which output lists the hosts"),
        (TERRAFORM, "nope", "no output 'nope'"),
        ({"h": {"value": {"x": {"address": "10.0.0.1", "db_password": "p"}}}}, None, "secret"),
        ({"h": {"value": {"x": {"address": "bad address"}}}}, None, "neither an IP"),
        ({"h": {"value": {"x": {"address": "10.0.0.1", "tags": {"a": 1}}}}}, None, "scalar"),
        ([1, 2], None, "not the JSON of `terraform output -json`"),
    ],
)
def test_terraform_problems_say_what_to_fix(doc: Any, output: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        inventory_from_terraform(doc, output)


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_inventory_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tf = tmp_path / "outputs.json"
    tf.write_text(json.dumps(TERRAFORM))
    assert cli("inventory", "import-terraform", str(tf)) == 0
    imported = capsys.readouterr().out
    assert [e["name"] for e in yaml.safe_load(imported)] == ["big", "m5-1"]
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(imported)
    assert cli("inventory", "show", str(hosts), "--format", "json") == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["name"], r["ssh_address"]) for r in rows] == [("big", "54.1.2.3"), ("m5-1", "")]
    assert cli("inventory", "import-terraform", str(tmp_path / "none.json")) == 2


def test_the_launch_token_reaches_the_environment_never_the_command_line() -> None:
    """Read from the launcher's stdin, exported to the command (issue 23 item 1)."""
    command = remote_command(["sh", "-c", 'printf "%s" "$NETFLEET_LAUNCH_TOKEN"'])
    assert "s3cr3t" not in command
    out = subprocess.run(["sh", "-c", command], input=b"s3cr3t\n", capture_output=True, check=True)
    assert out.stdout.split(b"\n", 1)[1] == b"s3cr3t"
