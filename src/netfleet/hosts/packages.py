"""Which tools a host lacks, and installing them with its package manager — only when asked.

Tools are looked up with the shell's ``command -v`` in one command per host. Installing runs the
host's own package manager (apt-get, dnf, yum or apk) as root: directly when netfleet logs in as
root, through ``sudo -n`` for an SSH host with ``sudo: true``.
"""

from __future__ import annotations

from netfleet.engines import packages as engine_packages
from netfleet.errors import HostError
from netfleet.hosts.base import Host

MANAGERS = ("apt-get", "dnf", "yum", "apk")

_IPROUTE = {"apt-get": "iproute2", "dnf": "iproute", "yum": "iproute", "apk": "iproute2"}
#: tool → package providing it, per package manager: the system tools netfleet uses; each
#: engine declares its own (``packages`` in its module, asked of the registry when needed)
PACKAGES: dict[str, dict[str, str]] = {
    "ip": _IPROUTE,
    "ss": _IPROUTE,
    "tc": {**_IPROUTE, "dnf": "iproute-tc"},
    "ethtool": {"apt-get": "ethtool", "dnf": "ethtool", "yum": "ethtool", "apk": "ethtool"},
}


def package_table() -> dict[str, dict[str, str]]:
    """Tool → package per package manager: :data:`PACKAGES` and every registered engine's."""
    return {**PACKAGES, **engine_packages()}


_MISSING = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 || printf "%s\\n" "$t"; done'
INSTALL_TIMEOUT = 900.0


async def missing_tools(host: Host, tools: list[str]) -> list[str]:
    """The tools of ``tools`` that ``host`` does not have on its PATH."""
    if not tools:
        return []
    res = await host.run(["sh", "-c", _MISSING, "sh", *tools], timeout=30)
    if res.returncode != 0:
        raise HostError(
            f"host {host.name}: cannot look for tools ({res.stderr.strip()[-200:]})",
            hint="the host needs a POSIX sh",
        )
    return [t for t in res.stdout.split() if t in tools]


async def package_manager(host: Host) -> str | None:
    """The first of apt-get, dnf, yum, apk the host has, or None."""
    found = await missing_tools(host, list(MANAGERS))
    return next((m for m in MANAGERS if m not in found), None)


def packages_for(tools: list[str], manager: str) -> tuple[list[str], list[str]]:
    """(packages to install, tools no package is known for) with ``manager``."""
    packages: list[str] = []
    unknown = []
    table = package_table()
    for tool in tools:
        package = table.get(tool, {}).get(manager)
        if package is None:
            unknown.append(tool)
        elif package not in packages:
            packages.append(package)
    return packages, unknown


def install_commands(manager: str, packages: list[str]) -> list[list[str]]:
    """The commands (argv lists, to run as root) that install ``packages``."""
    if manager == "apt-get":
        env = ["env", "DEBIAN_FRONTEND=noninteractive"]
        return [
            [*env, "apt-get", "update", "-q"],
            [*env, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
        ]
    if manager == "apk":
        return [["apk", "add", "--no-cache", *packages]]
    return [[manager, "install", "-y", *packages]]


def install_hint(tools: list[str]) -> str:
    """How to install ``tools`` by hand on Debian (the message of a missing-tool error)."""
    packages, _ = packages_for(tools, "apt-get")
    return "apt-get install " + " ".join(packages or tools)


async def install(host: Host, tools: list[str]) -> list[str]:
    """Install the packages providing ``tools`` on ``host`` as root (``sudo -n`` for an SSH host
    with ``sudo: true``). Returns the packages installed; HostError if it fails."""
    manager = await package_manager(host)
    if manager is None:
        raise HostError(
            f"host {host.name}: no known package manager (apt-get, dnf, yum, apk) to install "
            + ", ".join(tools),
            hint="install them by hand",
        )
    packages, unknown = packages_for(tools, manager)
    if unknown:
        raise HostError(
            f"host {host.name}: netfleet does not know which {manager} package provides "
            + ", ".join(unknown),
            hint="install them by hand",
        )
    privileged = getattr(host, "privileged", None)
    for argv in install_commands(manager, packages):
        full = privileged(argv) if callable(privileged) else argv
        res = await host.run(full, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0:
            raise HostError(
                f"host {host.name}: `{' '.join(full)}` failed (exit {res.returncode}): "
                + (res.stderr.strip() or res.stdout.strip())[-400:],
                hint="installing needs root: log in as root, or set 'sudo: true' on an SSH host "
                "whose user has passwordless sudo; or install by hand",
            )
    return packages
