"""Real OpenSSH servers inside lab namespaces: SSH hosts on one machine, for the tests and
benchmarks (test machinery: not in the product package).

Each sshd runs with its own config file, host key and authorized_keys in a directory of yours
(``UsePAM no``, public keys only), listens on the host's lab address, and is started and stopped
**by PID** (``-D``: it does not daemonize, so the PID we start is the listener). Its per-connection
children are found by their parent PID, so a test can make a host "die" under a live session.

A lab host is a fresh machine, not this one's root account: its sessions do not read the login
user's ``~/.bashrc`` (Debian's bash sources it for every command sshd runs; a ``pyenv init`` there
costs ~40 processes a command). sshd runs in the mount namespace ``ip netns exec`` makes for it
(a slave of the host's: nothing propagates back), with an empty file bound over that
``~/.bashrc``.

The controller reaches these servers from inside another lab namespace (a lab host of its own):
nothing is created in the root namespace. Needs root and ``openssh-server`` (``/usr/sbin/sshd``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from netfleet.durable import atomic_write
from netfleet.errors import LabError
from netfleet.lab.commands import require_root

SSHD = "/usr/sbin/sshd"
#: sshd's compiled-in privilege-separation directory (Debian creates it when the service runs)
PRIVSEP_DIR = Path("/run/sshd")
READY_TIMEOUT = 10.0


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public_text: str  #: "ssh-ed25519 AAAA…"


def make_key(path: Path) -> KeyPair:
    """A fresh ed25519 key pair: ``path`` (mode 0600) and ``path.pub``."""
    import asyncssh

    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(path))
    os.chmod(path, 0o600)
    key.write_public_key(str(path) + ".pub")
    public = key.export_public_key().decode().strip()
    return KeyPair(path, public)


def known_hosts_line(address: str, port: int, host_key: KeyPair) -> str:
    """The known_hosts line that trusts ``host_key`` for ``address:port``."""
    who = address if port == 22 else f"[{address}]:{port}"
    return f"{who} {host_key.public_text}\n"


@dataclass
class Sshd:
    """A running sshd in a namespace."""

    namespace: str
    address: str
    port: int
    config: Path
    log: Path
    host_key: KeyPair
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def known_hosts_line(self) -> str:
        return known_hosts_line(self.address, self.port, self.host_key)

    def session_pids(self) -> list[int]:
        """PIDs of this sshd's per-connection children (found by parent PID)."""
        return children(self.pid)

    def kill_sessions(self) -> list[int]:
        """SIGKILL every live session (by PID): connections drop as if the host died."""
        killed = []
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        return killed

    def stop(self) -> None:
        """Stop the listener and its sessions by PID (TERM, then KILL). Idempotent."""
        sessions = self.session_pids()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def children(ppid: int) -> list[int]:
    """PIDs whose parent is ``ppid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields follow the last ')'
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            found.append(int(entry.name))
    return found


def start_sshd(
    namespace: str,
    address: str,
    workdir: Path,
    host_key: KeyPair,
    authorized_keys: list[str],
    *,
    port: int = 22,
    extra: dict[str, str] | None = None,
) -> Sshd:
    """Start sshd in ``namespace`` listening on ``address:port``; its files go in ``workdir``.

    ``authorized_keys`` are public key lines allowed to log in (as any user, root included).
    ``extra`` adds sshd_config options. Returns once it listens; LabError (with its log) if not.
    """
    require_root()
    if not os.access(SSHD, os.X_OK):
        raise LabError(f"{SSHD} is not installed", hint="apt-get install openssh-server")
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)
    keys = workdir / "authorized_keys"
    # temp + rename: a link someone placed at the name is replaced, never written through
    atomic_write(keys, "".join(k.strip() + "\n" for k in authorized_keys).encode())
    options = {
        "Port": str(port),
        "ListenAddress": address,
        "HostKey": str(host_key.private),
        "PidFile": "none",
        "UsePAM": "no",
        "PasswordAuthentication": "no",
        "KbdInteractiveAuthentication": "no",
        "PubkeyAuthentication": "yes",
        "AuthorizedKeysFile": str(keys),
        "PermitRootLogin": "prohibit-password",
        "StrictModes": "no",
        "PrintMotd": "no",
        "MaxStartups": "50:30:100",
        "LogLevel": "INFO",
        **(extra or {}),
    }
    config = workdir / "sshd_config"
    atomic_write(config, "".join(f"{k} {v}\n" for k, v in options.items()).encode())
    log = workdir / "sshd.log"
    argv = ["ip", "netns", "exec", namespace, *_clean_login(workdir),
            SSHD, "-D", "-f", str(config), "-E", str(log)]  # fmt: skip
    # `ip netns exec` setns()es then execs (sh, which execs) sshd: the PID is the listener's.
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    sshd = Sshd(namespace, address, port, config, log, host_key, proc)
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _listening(namespace, address, port):
            return sshd
        time.sleep(0.05)
    sshd.stop()
    text = log.read_text(errors="replace").strip()[-500:] if log.exists() else ""
    raise LabError(
        f"sshd in {namespace} did not start listening on {address}:{port}: {text or 'no log'}",
        hint="check the config in " + str(config),
    )


def _clean_login(workdir: Path) -> list[str]:
    """The argv prefix that binds an empty file over root's ``~/.bashrc`` (the lab's login) in
    sshd's mount namespace (none when there is no such file), the paths given to ``sh`` as
    arguments."""
    rc = Path(pwd.getpwnam("root").pw_dir) / ".bashrc"
    if not rc.is_file() or rc.is_symlink():
        return []
    empty = workdir / "empty-bashrc"
    atomic_write(empty, b"")
    return ["sh", "-c", 'mount --bind -- "$1" "$2" && shift 2 && exec "$@"', "sh",
            str(empty), str(rc)]  # fmt: skip


def _listening(namespace: str, address: str, port: int) -> bool:
    res = subprocess.run(
        ["ip", "netns", "exec", namespace, "ss", "-Hltn", f"sport = :{port}"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return res.returncode == 0 and address in res.stdout
