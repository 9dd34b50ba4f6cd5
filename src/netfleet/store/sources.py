"""What an import is asked, checked without loading its readers: the files it names (files,
folders walked recursively, quoted globs — listed, none opened), its ``--label``,
``--pattern`` and ``--campaign`` (a no-op import by reference lists, stats and compares only;
the label checks load the spec's rules when called)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from operator import attrgetter
from pathlib import Path

from netfleet.errors import InputError, named
from netfleet.plain import Frozen

PRESETS = {"seed002": "d={date}/{instance_type}-{epoch}.json.gz"}
#: the campaign an import files its runs under unless told (a valid name: tests check it)
DEFAULT_CAMPAIGN = "imported"
SIDES = ("auto", "client", "server")
SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".csv", ".csv.gz", ".txt", ".txt.gz")


class Options(Frozen):
    """What every file of one import or load shares — into a results root
    (:func:`netfleet.store.imports.import_files`) or into a catalog
    (:mod:`netfleet.catalog.register`) — sent to the worker processes with their files
    (read-only: :mod:`netfleet.plain`)."""

    __slots__ = ("campaign", "labels", "pattern", "side", "follow_links", "entry")  # noqa: RUF023

    campaign: str
    labels: dict[str, str]
    pattern: re.Pattern[str] | None
    side: str
    follow_links: bool
    #: how the files come into a catalog: ``register`` (foreign files, by reference) or
    #: ``ingest`` (netfleet envelopes of a results root: ``netfleet.catalog.manifest.INGESTED``)
    entry: str

    def __init__(
        self,
        campaign: str,
        labels: dict[str, str],
        pattern: re.Pattern[str] | None,
        side: str = "auto",
        follow_links: bool = False,
        entry: str = "register",
    ) -> None:
        self._set(campaign, labels, pattern, side, follow_links, entry)


def expand_sources(sources: Iterable[str], follow_links: bool = False) -> Iterator[Path]:
    """Files named, found under folders, or matched by globs; a source matching nothing is an
    input error. Links and special files (FIFOs, devices) found are listed too — :func:`prepare`
    refuses them with the reason — and a linked folder is walked only with ``follow_links``."""
    for src in sources:
        yield from (
            Path(p)
            for p in source_files(
                named(
                    "a source",
                    src,
                    hint="name a file, folder or glob (an empty one is the working directory)",
                ),
                follow_links,
            )
        )


def source_files(src: str, follow_links: bool = False) -> list[str]:
    """:func:`expand_sources` of one source, as path strings in the same order (10,000 Path
    objects and their comparisons cost a no-op import a tenth of a second)."""
    if os.path.isdir(src):
        found = _walk(src, follow_links)
    elif os.path.lexists(src):
        found = [src]
    else:  # a glob (``glob`` loaded here: its import and patterns were 0.6 ms of a no-op)
        import glob as globmod

        found = sorted((p for p in globmod.glob(src, recursive=True) if not _is_dir(p)), key=_parts)
    if not found:
        raise InputError(
            f"{src}: no such file, folder or matching glob",
            hint="pass iperf3 JSON or iperf 2 output (.json .csv .txt, .gz), folders or globs",
        )
    return found


def _parts(path: str) -> list[str]:
    """Path order (component by component), on strings."""
    return [p for p in path.split("/") if p and p != "."]


def _is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _walk(top: str, follow_links: bool) -> list[str]:
    """The importable names under ``top``, and the links to folders not followed, in path
    order (component by component: each folder's entries sorted by name, a folder's files at
    its place among them — what sorting the whole list by :func:`_parts` gives, without the
    sort). A linked folder is walked only with ``follow_links``, and never twice on one
    branch (a link to a folder above it). One list filled by recursion (nested generators
    were a third of listing 10,000 files)."""
    found: list[str] = []
    _walk_in(top, follow_links, set(), found)
    return found


def _walk_in(
    folder: str, follow_links: bool, above: set[tuple[int, int]], found: list[str]
) -> None:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=_name)
        st = os.stat(folder)
    except OSError:
        return  # as os.walk: a folder that cannot be listed is skipped
    here = (st.st_dev, st.st_ino)
    if here in above:
        return
    above = above | {here}
    add = found.append
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=follow_links)
        except OSError:
            is_dir = False
        if is_dir:
            _walk_in(entry.path, follow_links, above, found)
        elif entry.name.endswith(SUFFIXES) or _linked_dir(entry, follow_links):
            add(entry.path)


def _linked_dir(entry: os.DirEntry[str], follow_links: bool) -> bool:
    """A link to a folder, not followed (listed: refused when read). Asked only of a name
    without an importable suffix (10,000 files' ``is_symlink``: 0.4 ms of a no-op)."""
    try:
        return not follow_links and entry.is_symlink() and entry.is_dir()
    except OSError:
        return False


_name = attrgetter("name")


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """``d={date}/{instance_type}-{epoch}.json.gz`` → a regex matched against the end of the
    path; each ``{name}`` matches within one path segment, without ``-`` greed across names."""
    pattern = PRESETS.get(pattern, pattern)
    out, pos = [], 0
    for m in re.finditer(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", pattern):
        out.append(re.escape(pattern[pos : m.start()]))
        out.append(f"(?P<{m.group(1)}>[^/]+?)")
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    try:
        regex = re.compile("(?:^|/)" + "".join(out) + "$")
    except re.error as exc:
        raise InputError(
            f"--pattern {pattern!r}: {exc}", hint="use {name} placeholders, each name once"
        ) from exc
    if pattern in PRESETS.values():
        return regex  # a preset's names are valid label keys (tests check them)
    from netfleet.spec.common import check_labels

    try:  # its names become label keys
        check_labels(dict.fromkeys(regex.groupindex, ""))
    except ValueError as exc:
        raise InputError(f"--pattern: {exc}") from None
    return regex


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``--label k=v`` options, checked as a spec's labels are (no secret-looking key, no key
    material, the same key pattern): labels are copied into every envelope. (The checks load
    the spec's modules — pydantic, the engines: none when there is nothing to check.)"""
    out = split_labels(items)
    if not out:
        return out
    from netfleet.spec.common import check_labels

    try:
        check_labels(out)
    except ValueError as exc:
        raise InputError(f"--label: {exc}") from None
    return out


def check_campaign(campaign: str) -> str:
    """``--campaign``, checked as a spec's ``campaign:`` is (it names a directory, an S3 key)."""
    if campaign == DEFAULT_CAMPAIGN:
        return campaign
    from netfleet.spec.common import NAME

    if not re.match(NAME, campaign):
        raise InputError(
            f"--campaign {campaign[:64]!r}: not a campaign name",
            hint="1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return campaign


def split_labels(items: Iterable[str]) -> dict[str, str]:
    """``--label k=v`` options as a dict, their syntax checked (:func:`parse_labels` checks the
    keys and values too)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise InputError(
                f"--label {key[:64]!r}: expected key=value", hint="e.g. --label cloud=aws"
            )
        out[key] = value
    return out


def default_workers() -> int:
    """Worker processes for ``netfleet import``: one per CPU, at most 4."""
    return min(os.cpu_count() or 1, 4)


def check_keep_copy(dest: str) -> None:
    """``--keep-copy DEST``: a local folder must exist (it is made) and be writable before any
    file is read, so that a bad destination is one clear error, not a failure half-way through
    (an ``s3://`` prefix is checked by its first write)."""
    if named("--keep-copy", dest).startswith("s3://"):
        return
    folder = Path(dest)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise NotADirectoryError(0, "not a writable folder")
    except OSError as exc:
        raise InputError(
            f"--keep-copy {dest}: cannot keep files there ({exc.strerror or exc})",
            hint="name a writable folder, ideally on the sources' file system (each kept file "
            "is then a hardlink), or an s3:// prefix",
        ) from None
