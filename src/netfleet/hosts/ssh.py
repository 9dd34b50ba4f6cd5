"""``ssh``: a machine reached over SSH (asyncssh), in any cloud or data centre.

- **Host keys are verified** against known_hosts; an unknown or changed key is refused with the
  key's fingerprint and the command that trusts it. There is no switch to skip the check.
- **No shell injection**: the remote login shell receives ``shlex.join`` of an argv, always::

      exec /bin/sh -c 'read -r NETFLEET_LAUNCH_TOKEN; export …; command -v "$1" … || exit 127;
                       printf "NETFLEET_PID %d\\n" "$$"; exec "$@" </dev/null' netfleet ARGV…

  The launcher reads the process's random launch token from its stdin (so it is never on a
  command line, where every user of the host could read it) into its environment, checks the
  command exists, prints its PID and ``exec``s it — so it keeps that PID: netfleet stops remote
  processes **by PID** (``kill -s SIG PID`` on the host), never by name, and the campaign
  journal records the PIDs of what it started (and a digest of their tokens).
- **Everything is time-bounded**: connecting and logging in (``connect_timeout``), starting a
  command, every ``run`` (its timeout), signals; keepalives declare a silent host lost after
  about ``KEEPALIVE_S × (KEEPALIVE_MAX + 1)`` seconds. A lost connection fails the run it
  belongs to with a clear reason (``HostError``).
- Connections are pooled per host (at most ``MAX_CHANNELS`` sessions each, under sshd's default
  ``MaxSessions 10``); a lost one is replaced on next use. ``~/.ssh/config`` is not read: the
  spec alone says how to connect, so a campaign runs the same from any machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import shlex
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncssh

from netfleet.errors import HostError, InputError
from netfleet.hosts.base import Host, Process, new_launch_token
from netfleet.hosts.provider import AttachProvider, HostRequest
from netfleet.spec.ssh import SshJump

PID_MARKER = b"NETFLEET_PID "
MISSING_MARKER = b"NETFLEET_MISSING"
#: seconds for a command to start (channel opened, PID reported)
START_TIMEOUT = 20.0
#: seconds for a ``kill`` sent to a remote PID
SIGNAL_TIMEOUT = 10.0
#: sessions per connection; sshd allows 10 by default (MaxSessions)
MAX_CHANNELS = 8
KEEPALIVE_S = 5.0
KEEPALIVE_MAX = 3
#: exit status reported for a process whose connection was lost (like OpenSSH's ssh)
LOST_STATUS = 255

LAUNCHER = (
    "IFS= read -r NETFLEET_LAUNCH_TOKEN || NETFLEET_LAUNCH_TOKEN=; export NETFLEET_LAUNCH_TOKEN; "
    'command -v "$1" >/dev/null 2>&1 || { printf "NETFLEET_MISSING\\n"; exit 127; }; '
    'printf "NETFLEET_PID %d\\n" "$$"; '
    'exec "$@" </dev/null'
)


def remote_command(argv: Sequence[str]) -> str:
    """The one string sent to the remote login shell for ``argv``: every element quoted."""
    args = list(argv)
    if not args:
        raise ValueError("an empty command cannot run")
    for arg in args:
        if "\0" in arg:
            raise ValueError(f"argument {arg!r} contains a NUL byte")
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"argument {arg!r} is not valid Unicode text") from None
    return shlex.join(["exec", "/bin/sh", "-c", LAUNCHER, "netfleet", *args])


class HostKeyRefused(HostError):
    """The server's host key is not the one known_hosts holds for it (unknown or changed)."""


class LoginRefused(HostError):
    """The server (its host key verified) did not accept the user and key."""


class _Client(asyncssh.SSHClient):
    """Remembers the host key a server offered (for the refusal message) and why it went away."""

    def __init__(self) -> None:
        self.offered: asyncssh.SSHKey | None = None
        self.lost: str | None = None

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        self.offered = key
        return False  # only known_hosts decides

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = _reason(exc) if exc else "connection closed"


@dataclass(eq=False)
class _Link:
    """One SSH connection (and its jump connection) with the sessions open on it."""

    conn: asyncssh.SSHClientConnection
    client: _Client
    tunnel: asyncssh.SSHClientConnection | None = None
    channels: int = 0

    @property
    def lost(self) -> str | None:
        return self.client.lost

    def close(self) -> None:
        self.conn.close()
        if self.tunnel is not None:
            self.tunnel.close()


@dataclass
class SshHost(Host):
    port: int = 22
    user: str | None = None
    key: str | None = None
    known_hosts: str | None = None
    ssh_address: str | None = None
    jump: SshJump | None = None
    sudo: bool = False
    connect_timeout: float = 15.0
    _links: list[_Link] = field(default_factory=list, init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    kind = "ssh"

    @property
    def target(self) -> str:
        """Where SSH connects (``ssh_address``, else ``address``)."""
        return self.ssh_address or self.address

    @property
    def login(self) -> str:
        return self.user or getpass.getuser()

    def wrap(self, argv: list[str]) -> list[str]:
        """The equivalent OpenSSH command line (for messages; netfleet uses asyncssh)."""
        j = self.jump
        jump = ["-J", f"{j.user or self.login}@{j.address}:{j.port}"] if j is not None else []
        return [
            "ssh",
            *jump,
            "-p",
            str(self.port),
            f"{self.login}@{self.target}",
            remote_command(argv),
        ]

    def privileged(self, argv: list[str]) -> list[str]:
        """``argv`` as root: through ``sudo -n`` when the host says ``sudo: true``."""
        if self.sudo and self.login != "root":
            return ["sudo", "-n", "--", *argv]
        return list(argv)

    # ----------------------------------------------------------------------------- connections
    async def check(self) -> None:
        """Connect and log in (host key verified); HostError says what is wrong and the fix."""
        self._release(await self._acquire())

    async def close(self) -> None:
        links, self._links = self._links, []
        for link in links:
            link.close()
        for link in links:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(link.conn.wait_closed(), 5)

    async def _acquire(self) -> _Link:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: connections of an old one are unusable
            self._links, self._lock, self._loop = [], asyncio.Lock(), loop
        assert self._lock is not None
        async with self._lock:
            self._links = [k for k in self._links if k.lost is None or k.channels]
            for link in self._links:
                if link.lost is None and link.channels < MAX_CHANNELS:
                    link.channels += 1
                    return link
            link = await self._connect()
            link.channels += 1
            self._links.append(link)
            return link

    def _release(self, link: _Link) -> None:
        link.channels -= 1
        if link.lost is not None and link.channels <= 0:
            link.close()

    async def _connect(self) -> _Link:
        tunnel = None
        if self.jump is not None:
            j = self.jump
            tunnel, _ = await self._open(
                j.address, j.port, j.user, j.key, j.known_hosts, None, f"jump host {j.address}"
            )
        try:
            conn, client = await self._open(
                self.target, self.port, self.user, self.key, self.known_hosts, tunnel, "it"
            )
        except BaseException:
            if tunnel is not None:
                tunnel.close()
            raise
        return _Link(conn, client, tunnel)

    async def _open(
        self,
        address: str,
        port: int,
        user: str | None,
        key: str | None,
        known_hosts: str | None,
        tunnel: asyncssh.SSHClientConnection | None,
        what: str,
    ) -> tuple[asyncssh.SSHClientConnection, _Client]:
        where = f"{address}:{port}"
        if key is not None and not os.path.isfile(key):
            raise HostError(
                f"host {self.name}: SSH key file {key} does not exist",
                hint="give the path of an existing private key (key: PATH) or use ssh-agent",
            )
        if key is not None:
            _check_key(self.name, key, what)
        if known_hosts is not None and not os.path.isfile(known_hosts):
            raise HostError(
                f"host {self.name}: known_hosts file {known_hosts} does not exist",
                hint=f"create it with the host's key: {_keyscan(address, port, None, known_hosts)}",
            )
        client = _Client()
        options: dict[str, Any] = {
            "port": port,
            "known_hosts": known_hosts or (),
            "config": None,
            "client_factory": lambda: client,
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": KEEPALIVE_S,
            "keepalive_count_max": KEEPALIVE_MAX,
        }
        if user:
            options["username"] = user
        if key:
            options["client_keys"] = [key]
        if tunnel is not None:
            options["tunnel"] = tunnel
        try:
            conn = await asyncssh.connect(address, **options)
        except asyncssh.HostKeyNotVerifiable:
            raise _host_key_error(
                self.name, what, address, port, known_hosts, client.offered, tunnel is not None
            ) from None
        except asyncssh.PermissionDenied:
            raise LoginRefused(
                f"host {self.name}: {where} refused the login as {user or getpass.getuser()!r}"
                + ("" if what == "it" else f" ({what})"),
                hint="check 'user' and 'key': the key's public half must be in that user's "
                "~/.ssh/authorized_keys (an encrypted key needs ssh-agent)",
            ) from None
        except TimeoutError:
            raise HostError(
                f"host {self.name}: no SSH answer from {where} within {self.connect_timeout:g} s"
                + ("" if what == "it" else f" ({what})"),
                hint="check that the machine is up, the address and port are right and a "
                "firewall or security group lets SSH in",
            ) from None
        except (OSError, asyncssh.Error) as exc:
            raise HostError(
                f"host {self.name}: cannot connect to {where}"
                + ("" if what == "it" else f" ({what})")
                + f": {_reason(exc)}",
                hint="check that the machine is up, sshd runs, and address/port are right",
            ) from None
        return conn, client

    # ------------------------------------------------------------------------------- processes
    async def start(self, argv: list[str]) -> Process:
        """Start ``argv`` on the host; returns once it runs and its remote PID is known."""
        command = remote_command(argv)
        token = new_launch_token()
        link = await self._acquire()
        try:
            chan = await asyncio.wait_for(
                link.conn.create_process(command, encoding=None), START_TIMEOUT
            )
            chan.stdin.write(f"{token}\n".encode())  # the launcher's first line, then EOF
            chan.stdin.write_eof()
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            self._release(link)
            raise HostError(
                f"host {self.name}: cannot start {argv[0]!r} over SSH: {_reason(exc)}",
                hint="check that the host is up and reachable",
            ) from None
        proc = SshProcess(self, link, chan, list(argv))
        proc.launch_token = token
        await proc.started()
        return proc

    async def signal(self, pid: int, sig: int) -> bool:
        """Send ``sig`` to remote ``pid`` (``kill -s NAME PID``). False if it could not be sent
        (connection down, no such process)."""
        name = signal.Signals(sig).name.removeprefix("SIG")
        try:
            link = await self._acquire()
        except HostError:
            return False
        try:
            res = await link.conn.run(
                shlex.join(["kill", "-s", name, str(pid)]), check=False, timeout=SIGNAL_TIMEOUT
            )
            return res.exit_status == 0
        except (OSError, asyncssh.Error, TimeoutError):
            return False
        finally:
            self._release(link)


class SshProcess(Process):
    """A remote process: output streamed over its SSH session, stopped by its remote PID."""

    def __init__(  # no asyncio subprocess behind it, so the base __init__ does not apply
        self,
        host: SshHost,
        link: _Link,
        chan: asyncssh.SSHClientProcess[bytes],
        argv: list[str],
    ) -> None:
        self.argv = argv
        self.stdout_chunks: list[bytes] = []
        self.stderr_chunks: list[bytes] = []
        self._line_listeners: list[Any] = []
        self._host = host
        self._link = link
        self._chan = chan
        self._pid: int | None = None
        self._missing = False
        self._ready = asyncio.Event()
        self.lost: str | None = None
        self._signals: set[asyncio.Future[bool]] = set()
        self._readers = [
            asyncio.ensure_future(self._pump_stdout()),
            asyncio.ensure_future(self._pump(chan.stderr, self.stderr_chunks)),
        ]
        self._done = asyncio.ensure_future(self._finish())

    async def started(self) -> None:
        """Wait until the launcher reported the PID; HostError if the command cannot run."""
        try:
            await asyncio.wait_for(self._ready.wait(), START_TIMEOUT)
        except TimeoutError:
            self._chan.close()
            raise HostError(
                f"host {self._host.name}: {self.argv[0]!r} did not start within "
                f"{START_TIMEOUT:g} s",
                hint="check the host's load and its login shell (it must run /bin/sh)",
            ) from None
        if self._missing:
            raise HostError(
                f"host {self._host.name}: cannot run {self.argv[0]!r}: not installed",
                hint=f"install it on host {self._host.name} (or: netfleet run --install)",
            )
        if self._pid is None:
            await asyncio.shield(self._done)
            raise HostError(
                f"host {self._host.name}: {self.argv[0]!r} did not start: "
                + (self.lost or (self.stderr.strip()[-300:] or "no output")),
                hint="the host's login shell must be a POSIX shell that can run /bin/sh",
            )

    async def _pump_stdout(self) -> None:
        stream = self._chan.stdout
        head = b""
        try:
            while self._pid is None and not self._missing:
                chunk = await stream.read(65536)
                if not chunk:
                    return
                head += chunk
                while b"\n" in head and self._pid is None and not self._missing:
                    line, head = head.split(b"\n", 1)
                    if line.startswith(PID_MARKER):
                        self._pid = int(line[len(PID_MARKER) :])
                    elif line == MISSING_MARKER:
                        self._missing = True
                    # anything else before the marker is login-shell chatter (rc files): dropped
            self._ready.set()
            if head:
                self.stdout_chunks.append(head)
            while chunk := await stream.read(65536):
                self.stdout_chunks.append(chunk)
        except (OSError, asyncssh.Error) as exc:
            self.lost = self.lost or _reason(exc)
        finally:
            self._ready.set()

    @staticmethod
    async def _pump(stream: Any, sink: list[bytes]) -> None:
        with contextlib.suppress(OSError, asyncssh.Error):
            while chunk := await stream.read(65536):
                sink.append(chunk)

    async def _finish(self) -> None:
        try:
            await asyncio.gather(*self._readers)
            with contextlib.suppress(OSError, asyncssh.Error):
                await self._chan.wait_closed()
        finally:
            if self._chan.returncode is None and self.lost is None:
                self.lost = self._link.lost or "the SSH session closed without an exit status"
            self._host._release(self._link)

    @property
    def pid(self) -> int:
        return self._pid or 0

    @property
    def returncode(self) -> int | None:
        rc = self._chan.returncode
        if rc is not None:
            return rc
        return LOST_STATUS if self.lost is not None else None

    @property
    def ended(self) -> bool:
        return self._chan.returncode is not None

    async def wait(self, timeout: float | None = None) -> int:
        """Wait for exit and all output. TimeoutError past ``timeout``; HostError when the
        connection was lost (the process may still run on the host)."""
        await asyncio.wait_for(asyncio.shield(self._done), timeout)
        if not self.ended:
            raise HostError(
                f"host {self._host.name}: lost the SSH connection while {self.argv[0]!r} ran "
                f"({self.lost}); its result is void",
                hint="check that the host is up and reachable; a process left running there is "
                "stopped by PID on exit or by netfleet run --resume",
            )
        return self._chan.returncode or 0

    def send(self, sig: int) -> None:
        if self.returncode is None and self._pid:
            task = asyncio.ensure_future(self._host.signal(self._pid, sig))
            self._signals.add(task)
            task.add_done_callback(self._signals.discard)

    async def stop(self, grace: float = 2.0, first: int = signal.SIGTERM) -> int:
        """Stop by remote PID: ``first``, then SIGKILL after ``grace`` s. Never raises: a process
        that cannot be confirmed stopped stays ``ended == False`` (a possible stray)."""
        if self.returncode is None and self._pid:
            for sig, wait_s in ((first, grace), (signal.SIGKILL, 10.0)):
                if not await self._host.signal(self._pid, sig):
                    break
                with contextlib.suppress(TimeoutError, HostError):
                    await self.wait(wait_s)
                if self.returncode is not None:
                    break
        if self.returncode is None:
            self._chan.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._done), 5)
        rc = self.returncode
        return LOST_STATUS if rc is None else rc


#: a private key file is a few KB; anything larger is not one (and is not read whole)
MAX_KEY_BYTES = 64 * 1024


def _check_key(host: str, path: str, what: str) -> None:
    """InputError naming the file and the spec field when ``path`` holds no private key asyncssh
    can use (no traceback, nothing of its content echoed)."""
    field_name = f"hosts.{host}.key" if what == "it" else f"hosts.{host}.jump.key"
    hint = (
        f"{field_name} must be the path of an unencrypted OpenSSH, PEM or PKCS#8 private key "
        "(for an encrypted key, leave 'key' out and load it into ssh-agent)"
    )
    try:
        if os.path.getsize(path) > MAX_KEY_BYTES:
            raise InputError(
                f"host {host}: the SSH key file {path} ({field_name}) is larger than "
                f"{MAX_KEY_BYTES:,} bytes: not a private key",
                hint=hint,
            )
        asyncssh.read_private_key(path)
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError, ValueError) as exc:
        reason = str(getattr(exc, "reason", "") or exc)[:200] or "unreadable"
        raise InputError(
            f"host {host}: the SSH key file {path} ({field_name}) is not a usable private key: "
            f"{reason}",
            hint=hint,
        ) from None
    except OSError as exc:
        raise HostError(
            f"host {host}: cannot read the SSH key file {path} ({field_name}): {exc.strerror}",
            hint="check that netfleet may read it",
        ) from None


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
    if isinstance(exc, OSError) and exc.errno and str(text).startswith("Connect call failed"):
        return os.strerror(exc.errno).lower()  # asyncio's text hides the cause: "refused"…
    return str(text or type(exc).__name__)


def _keyscan(address: str, port: int, algorithm: str | None, known_hosts: str | None) -> str:
    argv = ["ssh-keyscan", "-p", str(port), *(["-t", algorithm] if algorithm else []), address]
    return f"{shlex.join(argv)} >> {shlex.quote(known_hosts or '~/.ssh/known_hosts')}"


def _host_key_error(
    host: str,
    what: str,
    address: str,
    port: int,
    known_hosts: str | None,
    offered: asyncssh.SSHKey | None,
    via_jump: bool,
) -> HostKeyRefused:
    path = known_hosts or "~/.ssh/known_hosts"
    algorithm = offered.get_algorithm() if offered is not None else None
    fingerprint = (
        f"{algorithm} key {offered.get_fingerprint('sha256')}" if offered is not None else "a key"
    )
    who = f"{address}:{port}" + ("" if what == "it" else f" ({what})")
    scan = _keyscan(address, port, algorithm, known_hosts)
    if via_jump:
        scan = f"on the jump host: {scan} (copy the line into {path})"
    if _known_keys(address, port, known_hosts):
        entry = address if port == 22 else f"[{address}]:{port}"
        return HostKeyRefused(
            f"host {host}: the SSH host key of {who} has CHANGED: it offers {fingerprint}, but "
            f"{path} holds another key for it — possibly a man-in-the-middle; refusing to connect",
            hint=f"only if the machine was rebuilt: check {fingerprint} out of band, then "
            f"ssh-keygen -R {shlex.quote(entry)} -f {shlex.quote(os.path.expanduser(path))} "
            f"&& {scan}",
        )
    return HostKeyRefused(
        f"host {host}: unknown SSH host key for {who}: it offers {fingerprint}, which is not in "
        f"{path}; refusing to connect",
        hint=f"check {fingerprint} out of band (on the machine: ssh-keygen -lf "
        f"/etc/ssh/ssh_host_*_key.pub, or the cloud console's boot log), then trust it: {scan}",
    )


def _known_keys(address: str, port: int, known_hosts: str | None) -> list[Any]:
    path = os.path.expanduser(known_hosts or "~/.ssh/known_hosts")
    try:
        found = asyncssh.read_known_hosts(path).match(address, address, port)
    except (OSError, ValueError, asyncssh.Error):
        return []
    return list(found[0])


class SshProvider(AttachProvider):
    """Attach: acquire builds the host (it connects on first use), release closes the SSH
    connections (``SshHost.close``)."""

    name = "ssh"

    def build(self, request: HostRequest) -> Host:
        spec = request.spec
        fields = spec.model_dump(exclude={"kind", "labels", "jump"})
        return SshHost(name=request.name, labels=dict(spec.labels), jump=spec.jump, **fields)
