"""``backing: ssh`` instances realised as booted Debian 12 userlands (issue 24, item 9).

What a real instance boots, here, offline:

* **the image** — a Debian 12 (bookworm) root built once with debootstrap into a cache
  (:func:`ensure_image`, like :mod:`netfleet.lab.chroot`'s): minbase + openssh-server, sudo,
  iproute2, ethtool. The engines are *not* installed: their .debs and dependencies sit in a
  local apt repository inside the image (``/srv/netfleet-repo``, the only apt source), so the
  user-data's own ``apt-get update`` and ``apt-get install`` run for real, offline;
* **the instance** — an overlay of the image (each instance writes its own upper layer) in its
  own network namespace, on a bridge in 198.19.0.0/16 (RFC 2544 space: 198.18.0.0/15);
* **the boot** — the user-data RunInstances carried, applied with cloud-init's documented
  module behaviour for the modules netfleet uses (cloud-init itself needs systemd as PID 1):
  ``ssh_deletekeys``/``ssh_genkeytypes``/``ssh_keys`` (the pinned host key written to
  ``/etc/ssh/ssh_host_ed25519_key``), the default user ``admin`` with passwordless sudo and the
  key pair's public key in ``authorized_keys`` (cloud-init's ``users: default`` + IMDS
  ``public-keys``), ``bootcmd`` (each entry, failures logged), ``runcmd`` written as one
  ``#!/bin/sh`` script (a list entry shell-quoted, a string entry as it is) and run — then
  sshd is started, as the image's ssh.service would be.

:mod:`.userland_plugin` ties it to moto: RunInstances boots one userland per instance,
DescribeInstances reports its address, TerminateInstances shuts it down.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CACHE = Path(os.environ.get("NETFLEET_CACHE", "/var/cache/netfleet"))
SUITE = "bookworm"
IMAGE_INCLUDE = ("openssh-server", "sudo", "iproute2", "ethtool", "procps")


def engine_packages() -> list[str]:
    """What the user-data installs (every engine's tools, Debian's names): not in the image,
    kept as .debs in its local repository."""
    from netfleet.engines import tools
    from netfleet.hosts.packages import packages_for

    return packages_for(list(tools()), "apt-get")[0]


REPO = "/srv/netfleet-repo"
MIRROR = "http://deb.debian.org/debian"
MARKER = ".netfleet-userland.json"
DEFAULT_USER = "admin"
#: sshd processes this process started, by PID, with the namespace each was started for
_children: dict[int, tuple[str, subprocess.Popen[bytes]]] = {}


class UserlandError(RuntimeError):
    pass


def _wanted() -> dict[str, Any]:
    return {"suite": SUITE, "include": sorted(IMAGE_INCLUDE), "repo": sorted(engine_packages())}


def image_ready(root: Path) -> bool:
    try:
        return bool(json.loads((root / MARKER).read_text()) == _wanted())
    except (OSError, ValueError):
        return False


def _run(argv: list[str], timeout: float = 900, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kw)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-600:]
        raise UserlandError(f"{' '.join(argv[:6])}… failed (exit {proc.returncode}): {tail}")
    return proc


def ensure_image(cache: Path | None = None) -> Path:
    """The Debian 12 image (built once: debootstrap + the engines' local repository)."""
    base = cache or CACHE
    root = base / f"userland-{SUITE}"
    if image_ready(root):
        return root
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".userland-{SUITE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image_ready(root):
            return root
        build = base / f".userland-{SUITE}-build"
        for stale in (build, root):
            if stale.exists():
                _remove_tree(stale)
        _run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(IMAGE_INCLUDE)}", SUITE,
             str(build), MIRROR],
        )  # fmt: skip
        _build_repo(build)
        (build / MARKER).write_text(json.dumps(_wanted()) + "\n")
        os.replace(build, root)
    return root


def _mounts_under(path: Path) -> list[str]:
    base = str(path.resolve())
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        where = line.split()[1].replace("\\040", " ")
        if where == base or where.startswith(base + "/"):
            found.append(where)
    return sorted(found, key=len, reverse=True)


def _remove_tree(path: Path) -> None:
    """Remove ``path`` — never through a mount (a killed build may have left /proc mounted)."""
    for where in _mounts_under(path):
        subprocess.run(["umount", "-l", where], capture_output=True, check=False)
    if _mounts_under(path):
        raise UserlandError(f"{path} still has mounts under it: not removed")
    shutil.rmtree(path)


def _build_repo(root: Path) -> None:
    """Download the engines with their dependencies (as the image would from its mirror), keep
    them in ``REPO`` with a Packages index, and make that the image's only apt source."""
    archives = root / "var/cache/apt/archives"
    _run(["chroot", str(root), "apt-get", "clean"])  # debootstrap's own .debs: not the repo's
    _run(["chroot", str(root), "apt-get", "update", "-q"])
    _run(["chroot", str(root), "apt-get", "install", "-y", "-q", "--download-only",
          "--no-install-recommends", *engine_packages()])  # fmt: skip
    repo = root / REPO.lstrip("/")
    repo.mkdir(parents=True)
    entries = []
    for deb in sorted(archives.glob("*.deb")):
        target = repo / deb.name
        shutil.move(str(deb), target)
        fields = _run(["dpkg-deb", "-f", str(target)]).stdout.rstrip("\n")
        data = target.read_bytes()
        entries.append(
            f"{fields}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
            f"MD5sum: {hashlib.md5(data, usedforsecurity=False).hexdigest()}\n"
            f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    (repo / "Packages").write_text("\n".join(entries))
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{REPO} ./\n")
    for extra in (root / "etc/apt/sources.list.d").glob("*"):
        extra.unlink()
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True)


# -- one instance --------------------------------------------------------------------------
@dataclass
class Instance:
    """A booted userland: where it lives and what to stop."""

    instance_id: str
    namespace: str
    address: str
    root: Path  #: the overlay's mount point
    work: Path  #: upper + work directories of the overlay
    sshd_pid: int | None = None

    def record(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "namespace": self.namespace,
            "address": self.address,
            "root": str(self.root),
            "work": str(self.work),
            "sshd_pid": self.sshd_pid,
        }


def netns_exec(ns: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def boot(
    image: Path,
    inst: Instance,
    user_data: str,
    authorized_key: str,
    bridge: str,
    prefix: int,
    gateway: str,
) -> str:
    """Bring ``inst`` up: overlay, namespace on ``bridge``, the user-data applied, sshd.
    Returns the runcmd script's output (cloud-init's log, for a failed boot)."""
    for d in ("upper", "work"):
        (inst.work / d).mkdir(parents=True, exist_ok=True)
    inst.root.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-t", "overlay", "overlay", "-o",
          f"lowerdir={image},upperdir={inst.work / 'upper'},workdir={inst.work / 'work'}",
          str(inst.root)])  # fmt: skip
    for fs, where in (("proc", "proc"), ("sysfs", "sys")):
        _run(["mount", "-t", fs, fs, str(inst.root / where)])
    _run(["mount", "--bind", "/dev", str(inst.root / "dev")])
    _run(["mount", "-t", "devpts", "devpts", str(inst.root / "dev/pts"), "-o", "newinstance"])
    _network(inst, bridge, prefix, gateway)
    return apply_user_data(inst, user_data, authorized_key)


def _network(inst: Instance, bridge: str, prefix: int, gateway: str) -> None:
    host_end = "nv" + inst.namespace[-10:]
    _run(["ip", "netns", "add", inst.namespace])
    _run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0",
          "netns", inst.namespace])  # fmt: skip
    _run(["ip", "link", "set", host_end, "master", bridge, "up"])
    ns = inst.namespace
    _run(netns_exec(ns, ["ip", "addr", "add", f"{inst.address}/{prefix}", "dev", "eth0"]))
    _run(netns_exec(ns, ["ip", "link", "set", "eth0", "up"]))
    _run(netns_exec(ns, ["ip", "link", "set", "lo", "up"]))
    _run(netns_exec(ns, ["ip", "route", "add", "default", "via", gateway]))


def runcmd_script(entries: list[Any]) -> str:
    """cloud-init's runcmd → one shell script: a list is a quoted command, a string a line."""
    lines = ["#!/bin/sh"]
    for e in entries:
        lines.append(e if isinstance(e, str) else shlex.join(str(a) for a in e))
    return "\n".join(lines) + "\n"


def apply_user_data(inst: Instance, user_data: str, authorized_key: str) -> str:
    if not user_data.startswith("#cloud-config"):
        raise UserlandError(f"{inst.instance_id}: user-data is not #cloud-config")
    doc = yaml.safe_load(user_data) or {}
    root = inst.root
    ssh = root / "etc/ssh"
    if doc.get("ssh_deletekeys"):
        for old in ssh.glob("ssh_host_*key*"):
            old.unlink()
    for name, text in (doc.get("ssh_keys") or {}).items():
        kind, _, part = name.rpartition("_")  # ed25519_private / ed25519_public
        path = ssh / (f"ssh_host_{kind}_key" + (".pub" if part == "public" else ""))
        path.write_text(text if text.endswith("\n") else text + "\n")
        path.chmod(0o600 if part == "private" else 0o644)
    home = f"/home/{DEFAULT_USER}"
    chroot = ["chroot", str(root)]
    _run([*chroot, "useradd", "-m", "-s", "/bin/bash", "-d", home, DEFAULT_USER])
    (root / "etc/sudoers.d/90-cloud-init-users").write_text(
        f"{DEFAULT_USER} ALL=(ALL) NOPASSWD:ALL\n"
    )
    dot_ssh = root / home.lstrip("/") / ".ssh"
    dot_ssh.mkdir(mode=0o700)
    (dot_ssh / "authorized_keys").write_text(authorized_key.strip() + "\n")
    _run([*chroot, "chown", "-R", f"{DEFAULT_USER}:{DEFAULT_USER}", f"{home}/.ssh"])
    log = []
    ns = inst.namespace
    for cmd in doc.get("bootcmd") or []:  # each on its own; a failure is logged (cloud-init)
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        proc = subprocess.run(netns_exec(ns, [*chroot, *argv]), capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
        log.append(f"bootcmd {argv[0]}: exit {proc.returncode}")
    scripts = root / "var/lib/cloud/instance/scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / "runcmd").write_text(runcmd_script(doc.get("runcmd") or []))
    proc = subprocess.run(
        netns_exec(ns, [*chroot, "sh", "/var/lib/cloud/instance/scripts/runcmd"]),
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    log.append(f"runcmd: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    (root / "run/sshd").mkdir(parents=True, exist_ok=True)
    # a namespace is no login session of the kernel's: pam_loginuid cannot write
    # /proc/self/loginuid there and would refuse every login (the usual container change)
    pam = root / "etc/pam.d/sshd"
    if pam.exists():
        pam.write_text(pam.read_text().replace("session    required     pam_loginuid.so", "#"))
    with open(inst.work / "sshd.log", "wb") as log_file:  # the child keeps its own copy
        sshd = subprocess.Popen(
            netns_exec(ns, [*chroot, "/usr/sbin/sshd", "-D", "-e"]),
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            start_new_session=True,
        )
    _children[sshd.pid] = (ns, sshd)  # reaped by shut_down (this process started it)
    inst.sshd_pid = sshd.pid
    return "\n".join(log)


def shut_down(record: dict[str, Any]) -> None:
    """Stop what :func:`boot` started (by PID), unmount, delete the namespace. Idempotent."""
    import signal

    ns = str(record["namespace"])
    # what this process started for the namespace is stopped through its Popen, whatever
    # `ip netns pids` sees: a just-started `ip netns exec` may not have entered the namespace
    # yet (and would then run on in a deleted one), a record written before the boot names none
    ours = [pid for pid, (child_ns, _) in _children.items() if child_ns == ns]
    for pid in ours:
        _children[pid][1].kill()  # Popen.kill signals nothing once the child was reaped
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                          check=False).stdout.split()  # fmt: skip
    found = {int(str(pid)) for pid in [record.get("sshd_pid"), *pids] if str(pid or "").isdigit()}
    for pid in found - {0} - set(ours):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in ours:  # reaped: a Popen never waited for holds a zombie
        _children.pop(pid)[1].wait(timeout=10)
    root = Path(record["root"])
    for sub in ("dev/pts", "dev", "sys", "proc", ""):
        target = root / sub if sub else root
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    for path in (root, Path(record["work"])):
        if path.exists() and not _mounts_under(path):
            shutil.rmtree(path, ignore_errors=True)
