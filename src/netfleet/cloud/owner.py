"""Whose resources these are: the installation's identity, tagged on everything netfleet creates
and checked before everything it deletes.

A campaign's name is the user's choice, so two people (or two machines) in one account can run
campaigns of the same name. netfleet therefore tags each resource with the campaign
(``netfleet:campaign``), the installation that created it (``netfleet:installation``: a random
id kept in the state directory, ``<state>/installation-id``), the session (``netfleet:session``)
and the owner label of the spec (``netfleet:owner``). Teardown, destroy and reap select by
campaign *and* installation; only ``netfleet cloud reap --all-owners`` reaps other
installations' expired campaigns.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from netfleet.errors import EnvironmentProblem

TAG_CAMPAIGN = "netfleet:campaign"
TAG_OWNER = "netfleet:owner"
TAG_INSTALLATION = "netfleet:installation"
TAG_EXPIRES = "netfleet:expires-at"
TAG_TOKEN = "netfleet:token"  # noqa: S105 - a tag key, not a secret
TAG_SESSION = "netfleet:session"
FILE = "installation-id"
ID_RE = re.compile(r"^[0-9a-f]{16}$")


def installation(state_root: Path) -> str:
    """This state directory's installation id (made on first use, 0600, never a link)."""
    path = state_root / FILE
    state_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return _create(path)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot read {path}: {exc.strerror}",
            hint="it must be a regular file netfleet wrote; remove it only if no campaign of "
            "this state directory has resources left (they carry its id)",
        ) from None
    try:
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not ID_RE.match(text):
        raise EnvironmentProblem(
            f"{path} does not hold an installation id (16 hex digits)",
            hint="restore it; resources tagged with the old id are reaped with "
            "`netfleet cloud reap --all-owners`",
        )
    return text


def _create(path: Path) -> str:
    new = secrets.token_hex(8)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return installation(path.parent)
    try:
        os.write(fd, (new + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return new


def ours(tags: dict[str, str], campaign: str, installation_id: str | None) -> bool:
    """Tags (as a dict) of the campaign and, unless None, of the installation."""
    if tags.get(TAG_CAMPAIGN) != campaign:
        return False
    return installation_id is None or tags.get(TAG_INSTALLATION) == installation_id
