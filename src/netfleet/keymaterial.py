"""Is this text a secret? Private-key material and label names that hold secrets.

Used where a spec names a key *file* (``key:``) and where it sets labels — labels are copied
into every result file, which may sit in a shared directory. A value found here is refused and
never echoed. (A base module: standard library only.)
"""

from __future__ import annotations

import re

_KEY_MARKERS = re.compile(
    r"-----\s*begin\b|private[ _-]?key|putty-user-key-file|private-lines\s*:"
    r"|^\s*(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-\S+)\s+AAAA",
    re.IGNORECASE | re.MULTILINE,
)
#: a bare base64 block this long is a key body (an Ed25519 OpenSSH key is ≈ 400 characters, an
#: RSA key over 1,600); no sensible file path is only base64 characters and this long
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{160,}={0,2}")
_SECRET_NAME = re.compile(
    r"(?:^|[._-])(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[._-]?key|access[._-]?key"
    r"|private[._-]?key|credentials?|auth|cookie|session[._-]?key)(?:$|[._-])",
    re.IGNORECASE,
)


def looks_like_key_material(value: str) -> bool:
    """True for PEM/OpenSSH/PuTTY private keys in any case, or a bare base64 key body."""
    if _KEY_MARKERS.search(value):
        return True
    compact = re.sub(r"\s+", "", value)
    return bool(_BASE64_RUN.search(compact)) and "/" not in value.strip()[:1]


def looks_like_secret_name(name: str) -> bool:
    """True for label keys such as ``password``, ``api_key``, ``db.token``, ``AWS_SECRET``."""
    return bool(_SECRET_NAME.search(name))
