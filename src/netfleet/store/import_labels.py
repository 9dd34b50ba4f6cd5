"""Labels a result file carries itself: top-level keys a benchmark script added beside iperf3's
document (seed 002 appends ``"instanceType": "t2.nano", "region": "us-east-1"`` to each
``-J`` output before uploading it), mapped to netfleet's label names.

A key the path pattern also gives must agree with the file: a ``c4.large`` path holding a
``t2.nano`` document is reported, never silently labelled one or the other. ``--label k=v``
for a key the pattern does not give is the user's word and wins over the file (whose value is
kept in the provenance notes, ``notes.imported.file_labels``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netfleet.store.import_base import ImportProblem

if TYPE_CHECKING:
    import re
    from pathlib import Path

#: top-level key in the file → netfleet label (only these: an unknown key is not guessed at)
KNOWN_KEYS = {
    "instanceType": "instance_type",
    "instance_type": "instance_type",
    "region": "region",
    "availabilityZone": "zone",
    "availability_zone": "zone",
    "zone": "zone",
    "cloud": "cloud",
    "provider": "cloud",
}


def file_labels(doc: dict[str, Any]) -> dict[str, str]:
    """The known top-level keys of ``doc`` with a text value, as labels."""
    out: dict[str, str] = {}
    if not doc.keys() & KNOWN_KEYS.keys():  # (most files: none of them, at once)
        return out
    for key, label in KNOWN_KEYS.items():
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            out.setdefault(label, value.strip())
    return out


def merge_file_labels(
    doc: dict[str, Any], labels: dict[str, Any], from_pattern: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """``labels`` (pattern + ``--label``) completed with the file's own; ``from_pattern``: the
    label names the path pattern gave. Returns the labels and what the file said (for the
    provenance notes). A pattern value that disagrees with the file is an :class:`ImportProblem`
    naming both and the fix."""
    own = file_labels(doc)
    merged = dict(labels)
    for label, value in own.items():
        if label not in merged:
            merged[label] = value
        elif label in from_pattern and str(merged[label]) != value:
            key = next(k for k, v in KNOWN_KEYS.items() if v == label and doc.get(k) == value)
            raise ImportProblem(
                f"the path pattern gives {label}={merged[label]!r} but the file's own "
                f"top-level {key!r} is {value!r}: rename the file, or pass "
                f"--label {label}=... to say which is right"
            )
    return merged, own


def labels_of(
    path: Path | str, labels: dict[str, str], pattern: re.Pattern[str] | None
) -> tuple[dict[str, Any], list[str], str | None]:
    """A file's labels: the path pattern's (``date`` dropped, ``epoch`` apart: a start time
    when the file has none) under the ``--label``s given; and the names the pattern found.
    ``path``: a Path, or its POSIX text (a normalised absolute path: import by reference's)."""
    found: dict[str, str] = {}
    if pattern is not None:
        m = pattern.search(path if isinstance(path, str) else path.as_posix())
        if m is None:
            raise ImportProblem(f"the path does not match --pattern {pattern.pattern!r}")
        found = {k: v for k, v in m.groupdict().items() if v is not None}
    all_labels: dict[str, Any] = {**found, **labels}
    all_labels.pop("date", None)
    epoch = all_labels.pop("epoch", None)
    return all_labels, sorted(found), epoch
