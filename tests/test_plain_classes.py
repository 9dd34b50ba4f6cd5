"""The value classes on the no-op's path are plain classes (issue 26: defining a dataclass costs
half a millisecond, and ``dataclasses`` loads ``inspect``), and each behaves as the dataclass
it was: the same fields in the same order with the same defaults, the same ``repr``, ``==``,
hashing, read-only when it was frozen, and a copy or a pickle equal to it. The reference is
the dataclass itself, made here from the fields the class declares. The listing's ``Found``
(a tuple) behaves as the ``NamedTuple`` it was."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from netfleet.catalog.cheatsheet import CheatSheetData
from netfleet.catalog.manifest import INDEX_COLUMNS, Index
from netfleet.catalog.pending import Pending
from netfleet.catalog.register import RegisterReport
from netfleet.catalog.sourcelist import Found, Options, Read
from netfleet.tabular import Tabular

#: each class: its fields as the dataclass declared them (name, default; ``...``: none;
#: a ``list``/``dict`` factory), whether it was frozen, and the values of one instance
_SHEET = dict(
    group_keys=["instance_type"], rows=[["c5.large", 2, 20, 1.0]], side="sender",
    rate="goodput", unit_label="Gbit/s", filters="", runs=2, omitted=0, stubs=1,
    without_intervals=0, not_tcp=0, bidir=0,
)  # fmt: skip
CASES: list[tuple[type, list[tuple[str, Any]], bool, dict[str, Any]]] = [
    (
        Tabular,
        [("columns", ...), ("rows", ...), ("title", None), ("notes", list), ("decimals", 3)],
        False,
        {"columns": ["a", "b"], "rows": [[1, 2.5]], "title": "t"},
    ),
    (
        Index,
        [("generation", 0), ("next_row", 0), ("columns", dict), ("size", None), ("files", None)],
        False,
        {"generation": 3, "next_row": 7, "size": 7, "files": [["manifest.parquet", 1, 2]]},
    ),
    (
        RegisterReport,
        [("catalog_dir", ...)]
        + [(n, list) for n in ("registered",)]
        + [("unchanged", 0)]
        + [(n, list) for n in ("changed", "touched", "missing", "bad", "flagged")]
        + [(n, list) for n in ("duplicates", "already", "recovered", "retired")]
        + [("generation", 0), ("seconds", 0.0), ("batches", 0), ("rows", dict)],
        False,
        {"catalog_dir": Path("/cat"), "unchanged": 10, "bad": [("f.json", "truncated")]},
    ),
    (
        CheatSheetData,
        [(n, ...) for n in _SHEET]
        + [("impossible", 0), ("scaled", list), ("from_sender", 0), ("types", list)],
        True,
        {**_SHEET, "scaled": [(("c5.large",), "0.1", None)]},
    ),
    (
        Options,
        [
            ("campaign", ...),
            ("labels", ...),
            ("pattern", ...),
            ("side", "auto"),
            ("follow_links", False),
            ("entry", "register"),
        ],
        True,
        {"campaign": "imported", "labels": {"k": "v"}, "pattern": re.compile("x")},
    ),
    (
        Read,
        [("row", ...), ("rows", None)],
        False,
        {"row": {"source": "/a.json", "state": "ok"}, "rows": {"runs": [{"run_id": "r"}]}},
    ),
    (Pending, [("root", ...), ("count", ...)], True, {"root": "/raw", "count": 2}),
]


def _reference(cls: type, fields: list[tuple[str, Any]], frozen: bool) -> type:
    """The dataclass ``cls`` was: same name, fields, defaults (``columns`` of an Index: one
    empty list per index column, as its factory made)."""
    spec: list[Any] = []
    for name, default in fields:
        if default is ...:
            spec.append((name, Any))
        elif default is dict and cls is Index:
            factory = lambda: {n: [] for n in INDEX_COLUMNS}  # noqa: E731
            spec.append((name, Any, dataclasses.field(default_factory=factory)))
        elif default in (list, dict):
            spec.append((name, Any, dataclasses.field(default_factory=default)))
        else:
            spec.append((name, Any, dataclasses.field(default=default)))
    made = dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen)
    made.__qualname__ = cls.__qualname__
    return made


@pytest.mark.parametrize(
    ("cls", "fields", "frozen", "values"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_each_class_behaves_as_its_dataclass(
    cls: type, fields: list[tuple[str, Any]], frozen: bool, values: dict[str, Any]
) -> None:
    ref = _reference(cls, fields, frozen)
    required = {n: values[n] for n, d in fields if d is ...}
    for kwargs in (required, values):
        ours, theirs = cls(**kwargs), ref(**kwargs)
        assert repr(ours) == repr(theirs)
        assert [getattr(ours, n) for n, _ in fields] == [getattr(theirs, n) for n, _ in fields]
        # positional, in the fields' order
        ordered = [kwargs.get(n, getattr(theirs, n)) for n, _ in fields]
        assert repr(cls(*ordered)) == repr(theirs)
        assert ours == cls(**copy.deepcopy(kwargs)) and ours != theirs
        assert pickle.loads(pickle.dumps(ours)) == ours == copy.copy(ours)
        assert not hasattr(ours, "__dict__")  # slots: no field can be misspelt
    one, other = cls(**values), cls(**required)
    assert (one == other) == (ref(**values) == ref(**required))
    # a mutable default is made per instance, never shared
    for name, default in fields:
        if default in (list, dict):
            assert getattr(cls(**required), name) is not getattr(cls(**required), name)
    if frozen:
        with pytest.raises(AttributeError):
            setattr(one, fields[0][0], None)
        with pytest.raises(AttributeError):
            delattr(one, fields[0][0])
        try:
            expected: Any = hash(ref(**values))
        except TypeError as exc:  # a list field: unhashable, as the dataclass
            with pytest.raises(TypeError, match=str(exc).split(":")[0]):
                hash(one)
        else:
            assert hash(one) == expected
    else:
        setattr(one, fields[-1][0], None)
        assert getattr(one, fields[-1][0]) is None
        with pytest.raises(TypeError):
            hash(one)


class _FoundWas(NamedTuple):
    """What :class:`Found` was."""

    source: str
    path: str
    size: int | None
    mtime_ns: int | None = None
    inode: int | None = None
    etag: str | None = None


@pytest.mark.parametrize(
    "args", [("/a.json", "/a.json", None), ("/a", "/a", 3, 4, 5), ("s3://b/k", "s3://b/k", 9)]
)
def test_found_behaves_as_the_named_tuple_it_was(args: tuple[Any, ...]) -> None:
    ours, theirs = Found(*args), _FoundWas(*args)
    assert tuple(ours) == tuple(theirs) and ours == theirs and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs).replace("_FoundWas", "Found")
    for name in _FoundWas._fields:
        assert getattr(ours, name) == getattr(theirs, name)
    source, _, size, *_ = ours  # unpacked as the no-op's loop does
    assert (source, size) == (theirs.source, theirs.size)
    assert Found(*args, etag="e").etag == "e" == _FoundWas(*args, etag="e").etag
    back = pickle.loads(pickle.dumps(ours))
    assert type(back) is Found and back == ours
    made = tuple.__new__(Found, tuple(theirs))  # as the listing makes them
    assert type(made) is Found and made.inode == theirs.inode
    assert not hasattr(ours, "__dict__")
