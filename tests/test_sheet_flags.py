"""The cheat sheet's interval flags packed in one column (issue 26: memory at 100,000 files)
read back as the booleans they were, NULL included."""

from __future__ import annotations

import itertools

import duckdb

from netfleet.catalog.cheatsheet import _FLAGS, _KEPT, _packed, _true


def test_packed_flags_read_back_as_the_booleans_and_kept_as_before() -> None:
    con = duckdb.connect(":memory:")
    values = (True, False, None)
    rows = list(itertools.product(values, repeat=4))
    con.execute("CREATE TABLE t (a BOOLEAN, b BOOLEAN, c BOOLEAN, d BOOLEAN, bps DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [[*r, 1.0] for r in rows])
    con.execute("INSERT INTO t VALUES (false, false, false, false, NULL)")
    got = con.execute(
        f"SELECT a, b, c, d, bps IS NOT NULL, {', '.join(_true(f) for f in _FLAGS)},"
        f" coalesce({_KEPT}, false) FROM (SELECT *, {_packed('a', 'b', 'c', 'd')} AS flags FROM t)"
    ).fetchall()
    assert len(got) == len(rows) + 1
    for a, b, c, d, has_rate, *flags, kept in got:
        assert flags == [v is True for v in (a, b, c, d)]
        # as the sheet's condition on the booleans: NOT omitted AND NOT stub AND NOT impossible
        assert kept == (a is False and b is False and c is False and has_rate)
