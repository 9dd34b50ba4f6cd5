"""Generate the hostile-input corpus of issue 10: malformed campaign specs and lab files.

    python scripts/hostile_corpus.py OUT_DIR

writes ``OUT_DIR/campaign/NAME.yaml`` and ``OUT_DIR/lab/NAME.yaml``. Every file is invalid on
purpose; ``tests/test_hostile_specs.py`` runs each through ``netfleet plan``, ``run --dry-run``
(campaigns) and ``lab up`` (lab files) and expects exit 2, the file (and line) named with a fix,
no traceback, in under 2 s and 1 GB. The cases are those of the hostile probe plus variations.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

CAMPAIGN = """\
campaign: hostile
hosts:
  a: {kind: local, address: 127.0.0.1}
  b: {kind: local, address: 127.0.0.2}
tests:
  - name: t
    engine: iperf3
    client: a
    server: b
    params: {duration: 1}
"""

LAB = """\
name: hostile
subnet: 198.18.0.0/24
hosts:
  server:
    out: {rate: 1gbit}
  client:
    out: {rate: 300mbit}
"""


def _alias_bomb(levels: int, fan: int, under: str) -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + f"\n{under}: *a{levels - 1}\n"


def yaml_cases() -> Iterator[tuple[str, str]]:
    """Loader-level hostility: valid for neither kind of file."""
    yield "alias-bomb-9x9", "name: x\n" + _alias_bomb(9, 9, "labels")
    yield "alias-bomb-20x2", "name: x\n" + _alias_bomb(20, 2, "labels")
    yield "alias-bomb-flow", "name: x\n" + _alias_bomb(6, 30, "hosts")
    yield "alias-many", "x: &x 1\nlabels: [" + ", ".join(["*x"] * 1500) + "]\n"
    yield "alias-self", "labels: &a [1, *a]\n"
    yield "alias-self-map", "labels: &a {b: *a}\n"
    yield "alias-undefined", "labels: *nope\n"
    for depth in (65, 200, 1000, 5000):
        yield f"deep-flow-{depth}", "labels: " + "[" * depth + "]" * depth + "\n"
        yield f"deep-map-{depth}", "labels: " + "{a: " * depth + "1" + "}" * depth + "\n"
    block = "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n"
    yield "deep-block-300", block
    yield "tag-custom", "name: x\ndescription: !custom x\n"
    yield "tag-python-name", "name: x\ndescription: !!python/name:os.system\n"
    yield "tag-python-apply", "name: x\ndescription: !!python/object/apply:os.system [id]\n"
    yield "tag-python-object", "name: x\nlabels: !!python/object:builtins.dict {}\n"
    yield "tag-binary", "name: x\ndescription: !!binary aGVsbG8=\n"
    yield "tag-set", "name: x\nlabels: !!set {a, b}\n"
    yield "tag-omap", "name: x\nlabels: !!omap [a: 1]\n"
    yield "tag-on-key", "name: x\nlabels: {!custom k: 1}\n"
    yield "tag-local-uri", "name: x\ndescription: !<tag:evil.example,2024:x> y\n"
    yield "key-complex-seq", "name: x\nlabels: {? [a, b] : c}\n"
    yield "key-complex-map", "name: x\nlabels: {? {a: 1} : c}\n"
    yield "key-duplicate", "name: x\nname: y\n"
    yield "merge-non-mapping", "name: x\nlabels: {<<: [1, 2]}\n"
    yield "merge-scalar", "name: x\nlabels: {<<: 3}\n"
    yield "syntax-tab-indent", "name: x\nhosts:\n\ta: 1\n"
    yield "syntax-unclosed-flow", "name: x\nlabels: {a: [1, 2\n"
    yield "syntax-unclosed-quote", 'name: "x\nlabels: {}\n'
    yield "syntax-bad-indent", "name: x\n  hosts: 1\n bad: 2\n"
    yield "syntax-two-documents", "name: x\n---\nname: y\n"
    yield "syntax-directive", "%YAML 9.9\n---\nname: x\n"
    yield "syntax-nul-byte", "name: x\x00y\n"
    yield "not-utf8", "name: \udcff\udcfe\n"  # bytes 0xff 0xfe (surrogateescape)
    yield "syntax-control-chars", "name: \x1b]0;PWNED\x07\x1b[31mred\n"
    yield "top-list", "- name: x\n"
    yield "top-scalar", "just a string\n"
    yield "top-number", "42\n"
    yield "empty", ""
    yield "only-comment", "# nothing here\n"
    yield "big-2mb", "name: x\n" + ("# padding\n" * 210_000)
    yield "long-line", "name: x\ndescription: " + "a" * 1_100_000 + "\n"
    yield "markup-key", "'[/]': 1\n"
    yield "markup-bold-key", "'[bold]x[/bold]': 1\n"


def campaign_cases() -> Iterator[tuple[str, str]]:
    base = CAMPAIGN

    def sub(old: str, new: str) -> str:
        assert old in base, old
        return base.replace(old, new, 1)

    def params(text: str) -> str:
        return sub("params: {duration: 1}", f"params: {{duration: 1, {text}}}")

    yield "no-campaign", sub("campaign: hostile\n", "")
    yield "campaign-dotdot", sub("campaign: hostile", "campaign: ../../../etc")
    yield "campaign-slash", sub("campaign: hostile", "campaign: a/b")
    yield "campaign-markup", sub("campaign: hostile", "campaign: '[/]'")
    yield "campaign-escape", sub("campaign: hostile", 'campaign: "\\e]0;PWNED\\a"')
    yield "campaign-number", sub("campaign: hostile", "campaign: [1]")
    yield (
        "hosts-empty",
        sub(
            "  a: {kind: local, address: 127.0.0.1}\n  b: {kind: local, address: 127.0.0.2}\n",
            "  {}\n",
        ),
    )
    yield "host-kind-unknown", sub("a: {kind: local", "a: {kind: teleport")
    yield "host-address-bad", sub("address: 127.0.0.1", "address: not-an-ip")
    yield "host-local-not-loopback", sub("address: 127.0.0.1", "address: 8.8.8.8")
    yield "host-name-markup", sub("  a: {kind", "  '[/]': {kind")
    yield "host-name-escape", sub("  a: {kind", '  "\\e[31mred": {kind')
    yield "host-name-space", sub("  a: {kind", "  'a b': {kind")
    yield "tests-empty", base.split("tests:")[0] + "tests: []\n"
    yield "tests-not-list", base.split("tests:")[0] + "tests: {t: 1}\n"
    yield "engine-unknown", sub("engine: iperf3", "engine: nuttcp")
    yield "engine-markup", sub("engine: iperf3", "engine: '[/]'")
    yield "duplicate-test", base + "  - {name: t, engine: iperf3, client: a, server: b}\n"
    yield "client-unknown", sub("client: a", "client: zz")
    yield "server-unknown", sub("server: b", "server: zz")
    yield "server-markup", sub("server: b", "server: '[/]'")
    yield "server-bold-markup", sub("server: b", "server: '[bold]x[/bold]'")
    yield "server-escape", sub("server: b", 'server: "\\e]0;PWNED\\a\\e[31mred"')
    yield "no-server", sub("    server: b\n", "")
    yield "matrix-unknown-host", sub("    server: b\n", "    matrix: {server: [b, zz]}\n")
    yield "matrix-unknown-key", sub("    server: b\n", "    server: b\n    matrix: {nope: [1]}\n")
    yield "matrix-empty", sub("    server: b\n", "    server: b\n    matrix: {duration: []}\n")
    yield "matrix-repeat", sub("    server: b\n", "    server: b\n    matrix: {duration: [1, 1]}\n")
    yield "matrix-not-list", sub("    server: b\n", "    server: b\n    matrix: {duration: 5}\n")
    big = ", ".join(str(i) for i in range(1, 101))
    yield (
        "matrix-1m",
        sub(
            "    server: b\n",
            f"    server: b\n    matrix: {{duration: [{big}], parallel: [{big}], omit: [{big}]}}\n",
        ),
    )
    yield (
        "matrix-bad-combo",
        sub("    server: b\n", "    server: b\n    matrix: {duration: [1, -5]}\n"),
    )
    yield "repeats-zero", base + "repeats: 0\n"
    yield "repeats-negative", base + "repeats: -1\n"
    yield "repeats-huge", base + "repeats: 100000000000\n"
    yield "repeats-text", base + "repeats: many\n"
    yield "concurrency-zero", base + "concurrency: 0\n"
    yield "cooldown-negative", base + "cooldown: -1\n"
    yield "cooldown-nan", base + "cooldown: .nan\n"
    yield "order-bogus", base + "order: random\n"
    yield "seed-text", base + "seed: abc\n"
    yield "unknown-field", base + "colour: blue\n"
    yield "on-at-top", base + "on: [failed]\n"
    yield "retry-on-bogus", base + "retry: {on: [sometimes]}\n"
    yield "retry-max-zero", base + "retry: {on: [failed], max_attempts: 0}\n"
    yield "retry-yes-key", base + "retry: {yes: 1}\n"
    yield "overlap-unknown", base + "allow_host_overlap: [zz]\n"
    yield "budget-garbage", base + "bandwidth_budget: lots\n"
    yield "budget-without-bitrate", base + "bandwidth_budget: 1gbit\n"
    yield "bitrate-zero", params("bitrate: 0")
    yield "bitrate-number", params("bitrate: 100")
    yield "bitrate-garbage", params("bitrate: fast")
    yield "bitrate-negative", params("bitrate: -5mbit")
    yield "bitrate-absurd", params("bitrate: 99999999999999tbit")
    yield "bitrate-ambiguous-mbps", params("bitrate: 300mbps")
    yield "bitrate-bytes-explicit-huge", params("bitrate: 9999999999GB/s")
    yield "duration-negative", params("duration: -1").replace("duration: 1, ", "")
    yield "duration-text", sub("duration: 1", "duration: long")
    yield "duration-huge", sub("duration: 1", "duration: 1e300")
    yield "parallel-zero", params("parallel: 0")
    yield "congestion-bad", params("congestion: '[a-z]; rm -rf /'")
    yield "congestion-markup", params("congestion: '[/]'")
    yield "params-unknown", params("turbo: true")
    yield "params-list", sub("params: {duration: 1}", "params: [1, 2]")
    yield "labels-password", base + "labels: {password: hunter2}\n"
    yield "labels-api-key", base + "labels: {api_key: abc}\n"
    yield "labels-token", base + "labels: {github.token: abc}\n"
    yield "labels-secret-upper", base + "labels: {AWS_SECRET: abc}\n"
    yield "labels-int-bool-keys", base + "labels: {1: x, true: y}\n"
    yield "labels-bad-key", base + "labels: {'a b': 1}\n"
    yield "labels-markup-key", base + "labels: {'[/]': 1}\n"
    yield "labels-list-value", base + "labels: {team: [a, b]}\n"
    yield "labels-map-value", base + "labels: {team: {a: b}}\n"
    yield "labels-pem-value", base + 'labels: {note: "-----begin rsa private key-----\\nMIIE"}\n'
    yield "labels-merge-bad-key", base + "labels: {<<: {'a b': 1}, c: 2}\n"
    yield "inventory-missing", base + "inventory: /nonexistent/inventory.yaml\n"
    yield "inventory-directory", base + "inventory: .\n"
    key_pem = "-----begin openssh private key-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----end"
    ssh = '  c: {kind: ssh, address: 198.18.0.9, key: "%s"}\n'
    with_c = base.replace("tests:", "%stests:")
    yield "ssh-key-pem-lower", with_c % (ssh % key_pem)
    yield "ssh-key-pem-upper", with_c % (ssh % key_pem.upper())
    yield "ssh-key-putty", with_c % (ssh % "PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none")
    yield "ssh-key-base64", with_c % (ssh % ("QUFB" * 100))
    yield "ssh-key-pubkey", with_c % (ssh % "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI")
    yield "ssh-port-zero", with_c % "  c: {kind: ssh, address: 198.18.0.9, port: 0}\n"
    yield "ssh-port-huge", with_c % "  c: {kind: ssh, address: 198.18.0.9, port: 70000}\n"
    yield "ssh-user-injection", with_c % "  c: {kind: ssh, address: 198.18.0.9, user: 'a;id'}\n"
    yield "ssh-address-injection", with_c % "  c: {kind: ssh, address: '$(id)'}\n"
    yield "ssh-no-address", with_c % "  c: {kind: ssh}\n"
    yield (
        "netns-both",
        with_c % "  c: {kind: netns, lab: x, host: y, namespace: z, address: 198.18.0.1}\n",
    )
    yield "netns-half", with_c % "  c: {kind: netns, lab: x}\n"
    yield (
        "topology-bogus",
        sub("    client: a\n    server: b\n", "    topology: {kind: ring, hosts: [a, b]}\n"),
    )
    yield (
        "topology-and-client",
        sub("    server: b\n", "    server: b\n    topology: {kind: mesh, hosts: [a, b]}\n"),
    )
    yield (
        "topology-unknown-host",
        sub("    client: a\n    server: b\n", "    topology: {kind: mesh, hosts: [a, zz]}\n"),
    )
    yield (
        "topology-one-host",
        sub("    client: a\n    server: b\n", "    topology: {kind: mesh, hosts: [a]}\n"),
    )
    yield (
        "topology-star-no-center",
        sub("    client: a\n    server: b\n", "    topology: {kind: star, hosts: [a, b]}\n"),
    )


def lab_cases() -> Iterator[tuple[str, str]]:
    base = LAB

    def sub(old: str, new: str) -> str:
        assert old in base, old
        return base.replace(old, new, 1)

    yield "no-name", sub("name: hostile\n", "")
    yield "name-markup", sub("name: hostile", "name: '[/]'")
    yield "name-escape", sub("name: hostile", 'name: "\\e]0;PWNED\\a"')
    yield "name-dotdot", sub("name: hostile", "name: ../../etc")
    yield "name-long", sub("name: hostile", "name: " + "a" * 300)
    yield "subnet-garbage", sub("198.18.0.0/24", "lots")
    yield "subnet-public", sub("198.18.0.0/24", "8.8.8.0/24")
    yield "subnet-host-bits", sub("198.18.0.0/24", "198.18.0.5/24")
    yield "mtu-zero", base + "mtu: 0\n"
    yield "mtu-huge", base + "mtu: 1000000\n"
    yield "hosts-empty", base.split("hosts:")[0] + "hosts: {}\n"
    yield "hosts-list", base.split("hosts:")[0] + "hosts: [a, b]\n"
    yield "rate-zero", sub("rate: 1gbit", "rate: 0")
    yield "rate-garbage", sub("rate: 1gbit", "rate: fast")
    yield "rate-negative", sub("rate: 1gbit", "rate: -1gbit")
    yield "rate-missing", sub("out: {rate: 1gbit}", "out: {}")
    yield "shaper-unknown", sub("out: {rate: 1gbit}", "out: {rate: 1gbit, jitter: 5ms}")
    yield "host-unknown-field", sub("  client:\n", "  client:\n    colour: blue\n")
    yield "host-address-outside", sub("  client:\n", "  client:\n    address: 10.0.0.1\n")
    yield "host-name-markup", sub("  client:", "  '[/]':")
    yield "host-labels-password", sub("  client:\n", "  client:\n    labels: {password: x}\n")
    yield "scale-zero", base + "scale: {rate: 0}\n"
    yield "unknown-field", base + "colour: blue\n"
    yield "gateway-bogus", base + "gateway: {mtu: -1}\n"


def corpus() -> Iterator[tuple[str, str, str]]:
    """(kind, name, text) for every case; kind is "campaign" or "lab"."""
    for name, text in yaml_cases():
        yield "campaign", f"yaml-{name}", text
        yield "lab", f"yaml-{name}", text
    for name, text in campaign_cases():
        yield "campaign", name, text
    for name, text in lab_cases():
        yield "lab", name, text


def write(out: Path) -> list[Path]:
    paths = []
    for kind, name, text in corpus():
        path = out / kind / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        paths.append(path)
    return paths


if __name__ == "__main__":
    written = write(Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus"))
    print(f"{len(written)} malformed files written")
