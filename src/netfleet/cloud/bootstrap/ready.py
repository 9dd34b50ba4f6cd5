"""Readiness of an instance for ``backing: ssh``: running is not enough.

After RunInstances netfleet waits until the instance is ``running`` (:class:`~netfleet.cloud.
provision.Provisioner`), then, over SSH with the campaign's key and **only** the host key netfleet
generated for that instance and pinned in the campaign's known_hosts, until

1. sshd answers — connection refused or timed out: not yet, try again;
2. it presents the pinned host key — any other key is refused at once, never trusted (the
   user-data was not applied, or the address is another machine's);
3. it accepts the campaign's key — refused: not yet (cloud-init installs it);
4. cloud-init has finished: the marker file the user-data's last command writes
   (:data:`netfleet.cloud.bootstrap.userdata.READY_MARKER`, after the packages) exists — or
   a user-data command failed (:data:`~netfleet.cloud.bootstrap.userdata.FAILED_MARKER`
   exists): then the wait ends at once with an error naming the command and its exit status.

Attempts back off (``first_delay`` doubling up to ``max_delay``) within ``timeout_s``; past it,
:class:`~netfleet.errors.EnvironmentProblem` names the instance, its address and what it was
still waiting for.
"""

from __future__ import annotations

import asyncio
import shlex
import time

from netfleet import text
from netfleet.cloud.bootstrap.userdata import FAILED_MARKER, READY_MARKER
from netfleet.errors import EnvironmentProblem, HostError
from netfleet.hosts.ssh import HostKeyRefused, LoginRefused, SshHost

#: boot, cloud-init and the engines' packages on a fresh instance
READY_TIMEOUT_S = 900.0
#: the check's exit status when the user-data failed (its failing command on stdout)
FAILED_STATUS = 97


async def wait_ready(
    host: SshHost,
    instance_id: str,
    *,
    marker: str = READY_MARKER,
    failed_marker: str = FAILED_MARKER,
    timeout_s: float = READY_TIMEOUT_S,
    first_delay: float = 1.0,
    max_delay: float = 15.0,
) -> list[str]:
    """Wait until ``host`` is ready (see above). Returns what it waited for, in order, without
    repeats (the last entry is ``ready``)."""
    who = f"instance {instance_id} ({host.name}) at {host.target}"
    deadline = time.monotonic() + timeout_s
    delay = first_delay
    seen: list[str] = []

    def note(what: str) -> None:
        if not seen or seen[-1] != what:
            seen.append(what)

    failed, ready = shlex.quote(failed_marker), shlex.quote(marker)
    check = (
        f"if [ -e {failed} ]; then head -c 2000 {failed}; exit {FAILED_STATUS}; fi; test -e {ready}"
    )
    while True:
        try:
            res = await host.run(["sh", "-c", check], timeout=max(5.0, host.connect_timeout))
        except HostKeyRefused as exc:
            raise HostError(
                f"{who} presents an SSH host key other than the one netfleet generated and "
                f"pinned for it: not trusted, refusing to connect ({exc.message})",
                hint="the user-data was not applied (an AMI without cloud-init?) or the address "
                "belongs to another machine; destroy the campaign and launch again",
            ) from None
        except LoginRefused:
            note("sshd to accept the campaign's key (login refused)")
        except HostError as exc:
            note(f"sshd to answer ({_short(exc.message)})")
        else:
            if res.returncode == 0:
                note("ready")
                return seen
            if res.returncode == FAILED_STATUS:
                raise EnvironmentProblem(
                    f"{who}: its user-data failed: {text.line(res.stdout.strip())[:500]}",
                    hint="the instance will not become ready: look at its console output "
                    f"(aws ec2 get-console-output --instance-id {instance_id}) or "
                    "/var/log/cloud-init-output.log; an install that failed is often the "
                    "image's repositories being unreachable (no route to the internet)",
                )
            note(f"cloud-init to finish ({marker} not there yet)")
        left = deadline - time.monotonic()
        if left <= 0:
            raise EnvironmentProblem(
                f"{who} is not ready after {timeout_s:g} s: still waiting for {seen[-1]}",
                hint="look at the instance's console output (aws ec2 get-console-output "
                f"--instance-id {instance_id}); check the security group lets the controller "
                "in on port 22 and the subnet routes to an internet gateway",
            )
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, max_delay)


def _short(message: str) -> str:
    """The cause in a HostError's message (after the host's name)."""
    return message.split(": ", 1)[-1][:160]
