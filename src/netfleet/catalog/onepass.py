"""One read per file (issue 26): hash, inflate and decode only what the eager tables need, in
one pass over the file's bytes, with no side effect (it runs in worker processes).

* The bytes are hashed (SHA-256: the manifest's ``file_id``), inflated by ISA-L when gzip (at
  most one byte past the raw-result limit, :mod:`netfleet.store.limits`, whose JSON value count
  is checked before anything is parsed).
* An iperf3 ``-J`` document is decoded by msgspec, selectively: every top-level key (``start``,
  ``end``, ``error``, the keys a script put beside iperf3's — ``instanceType``, ``region`` …)
  whole, but of ``intervals`` (the client's, and the server's in ``server_output_json``) only
  each entry's ``sum`` and ``sum_bidir_reverse``: the per-stream entries — nine tenths of a
  ``-P 10`` file — are skipped unparsed (they stay in the source file; the per-stream rows are
  built from it on demand). The sums are decoded into typed structs
  (:mod:`netfleet.catalog.typedsums`: faster, their columns read off them) when they are as
  iperf3 writes them, else as dicts (:func:`selective`), read by the engine's own row code.
* Everything else — ``--json-stream`` lines, iperf 2 text and CSV, an engine's own format, and
  any iperf3 document msgspec refuses (truncated, NaN, a lone surrogate, nesting too deep, a
  wrongly typed ``intervals``) — goes through the import's own reader
  (:func:`netfleet.store.imports.build_envelope`), so its reasons and checks are the same.
* The run's envelope is made by the import's builders (the same labels, inferred fields, shape
  and rate checks, interval flags) and turned into catalog rows (``runs``, ``ends``, interval
  sums); the per-stream rows are not made here. An iperf3 document's envelope is made as
  plain values and its rows without the engine registry (:mod:`netfleet.iperf3json`,
  :mod:`netfleet.catalog.runrow`): reading one loads neither the engines nor pydantic.

Whatever a file holds, the outcome is a :class:`Read`: its manifest row, and its rows or the
reason it is refused; a bad file never stops the others.
"""

from __future__ import annotations

# (every module a file's reading uses is imported here, once: an import in a function costs
# ≈ 1 µs a call, ≈ 14 a file)
import hashlib
import os
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, cast

import msgspec
from isal import igzip_lib, isal_zlib

from netfleet.catalog.runrow import (
    ColumnRows,
    RunRows,
    imported_run_row,
    imported_run_values,
    json_encoder,
)
from netfleet.catalog.sourcelist import Options, Read
from netfleet.catalog.typedsums import (
    DOCUMENT,
    INTERVALS,
    Deferred,
    columns,
    flags,
    plain_segments,
    plausible,
)
from netfleet.errors import StoreError
from netfleet.iperf3json import SUM_COLUMNS, end_row, end_values, sum_columns
from netfleet.store.import_base import (
    ImportProblem,
    imported_envelope,
    plain_envelope,
    read_checked,
    run_identity,
)
from netfleet.store.import_iperf3 import checked_shape, iperf3_fields
from netfleet.store.import_labels import labels_of
from netfleet.store.limits import BYTES_PER_VALUE, max_raw_bytes, too_large
from netfleet.values import as_bool, obj


class _Interval(msgspec.Struct):
    """An ``intervals`` entry as the eager tables read it: its sums, not its streams."""

    sum: dict[str, Any] | None = None
    sum_bidir_reverse: dict[str, Any] | None = None


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_INTERVALS = msgspec.json.Decoder(list[_Interval])
_ANY = msgspec.json.Decoder()


def inflate(data: bytes, limit: int | None = None) -> bytes:
    """The file's content, gunzipped (ISA-L) when it is gzip; refused when it breaks the
    raw-result limit (``limit``: it, else read from the environment), counted before it is
    parsed."""
    out = data
    limit = max_raw_bytes() if limit is None else limit
    if data[:2] == b"\x1f\x8b":
        out = _gunzip(data, limit + 1)
    if len(out) < max(1, limit // BYTES_PER_VALUE):  # too_large's own shortcut, its limit
        return out  # read once (the environment, not twice more per file)
    why = too_large(out)
    if why:
        raise ImportProblem(why)
    return out


def _gunzip(data: bytes, most: int) -> bytes:
    """Every gzip member of ``data`` inflated, at most ``most`` bytes (ISA-L's inflate: a
    fifth of the time of gzip.GzipFile's, which reads through a file object)."""
    # the stubs declare it an instance; it is the exception class isal raises
    damaged = cast("type[Exception]", igzip_lib.IsalError)
    parts: list[bytes] = []
    size = 0
    rest = data
    try:
        while rest and size < most:
            inflater = isal_zlib.decompressobj(wbits=31)
            chunk = inflater.decompress(rest, most - size)
            parts.append(chunk)
            size += len(chunk)
            if not inflater.eof:
                if size >= most:
                    break
                raise ImportProblem(
                    "truncated or damaged gzip (the file ends before the end-of-stream marker)"
                )
            rest = inflater.unused_data.lstrip(b"\x00")  # padding between members
            if rest and rest[:2] != b"\x1f\x8b":
                raise ImportProblem("truncated or damaged gzip (not a gzip member after one)")
    except damaged as exc:
        raise ImportProblem(f"truncated or damaged gzip ({exc})") from exc
    return b"".join(parts)


def selective(plain: bytes) -> dict[str, Any] | None:
    """An iperf3 ``-J`` document without its per-stream intervals, or None when msgspec does
    not read it as one (the import's own reader then says why, or reads another format)."""
    head = plain.lstrip()[:1]
    if head != b"{":
        return None
    try:
        top = _TOP.decode(plain)
        if "start" not in top:
            return None
        doc = {k: _part(k, raw) for k, raw in top.items()}
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    server = top.get("server_output_json")
    if server is not None:
        try:
            inner = _TOP.decode(server)
            doc["server_output_json"] = {k: _part(k, raw) for k, raw in inner.items()}
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
    return doc


def _part(key: str, raw: msgspec.Raw) -> Any:
    if key == "intervals":
        return [_sums(iv) for iv in _INTERVALS.decode(raw)]
    return _ANY.decode(raw)


def _sums(iv: _Interval) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if iv.sum is not None:
        out["sum"] = iv.sum
    if iv.sum_bidir_reverse is not None:
        out["sum_bidir_reverse"] = iv.sum_bidir_reverse
    return out


#: top-level keys of a file kept in the manifest's ``file_keys`` (a script's own, beside
#: iperf3's): text, numbers and booleans only, each at most this long
_KEY_TEXT = 200
_IPERF3_KEYS = frozenset({"start", "intervals", "end", "error", "server_output_json"})


def file_keys(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if not isinstance(v, str) else v[:_KEY_TEXT]
        for k, v in doc.items()
        if k not in _IPERF3_KEYS and isinstance(v, str | int | float | bool)
    }


def read_file(
    source: str,
    data: bytes,
    meta: dict[str, Any],
    opts: Options,
    mtime: float | None = None,
    sums: dict[str, list[Any]] | None = None,
    later: list[Deferred] | None = None,
    limit: int | None = None,
) -> Read:
    """One file's bytes (already read, within the byte limit) → its manifest row and rows.
    ``meta``: the manifest columns known before reading (size, mtime_ns, inode, etag …);
    ``mtime``: the file's modification time (a start time when the file has none); ``sums``:
    the columns an iperf3 document's interval sums are appended to (a task's, shared by its
    files: :func:`netfleet.catalog.readtasks.read_task`), else its own (``Read.sums``);
    ``later``: a task's files whose checks and sum columns it makes at once
    (:class:`~netfleet.catalog.typedsums.TaskSums`): a plain typed document's rows are made
    as if its checks find nothing, and it is appended there (with how to read it again);
    ``limit``: the raw-result limit, read from the environment once for a task's files (else
    here)."""
    digest = hashlib.sha256(data).hexdigest()
    row: dict[str, Any] = {
        **meta,
        "source": source,
        "file_id": digest,
        "size": len(data),
        "campaign": opts.campaign,
    }
    waiting = len(later) if later is not None else 0
    try:
        read = _read(source, data, digest, row, opts, mtime, sums, later, limit)
        if later is not None:
            for deferred in later[waiting:]:
                deferred.read = read
                deferred.redo = partial(read_file, source, data, meta, opts, mtime)
        return read
    except ImportProblem as exc:
        reason = str(exc)
    except StoreError as exc:
        reason = exc.message
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except Exception as exc:  # a shape no check foresaw: this file only, never the folder
        reason = f"cannot be imported ({type(exc).__name__}: {str(exc)[:200]})"
    if later is not None:
        del later[waiting:]
    return Read({**row, "state": "bad", "reason": reason})


def _read(
    source: str,
    data: bytes,
    digest: str,
    row: dict[str, Any],
    opts: Options,
    mtime: float | None,
    into: dict[str, list[Any]] | None,
    later: list[Deferred] | None = None,
    limit: int | None = None,
) -> Read:
    # the path as text: a local source is a normalised absolute path already (os.path.abspath:
    # what a Path of it gives as_posix() and str(), without making one: 2 µs a file)
    s3 = source.startswith("s3://")
    where = Path(source.removeprefix("s3:/")).as_posix() if s3 else source
    plain = inflate(data, limit)
    typed = typed_selective(plain, checked=later is None)
    deferred = None
    if typed is not None and later is not None:
        # (a text server's output: its rows are the engine's, its flags checked here)
        text = "server_output_text" in typed[0]
        segments = None if text else plain_segments(typed[1], typed[2])
        if segments is not None:
            deferred = Deferred(typed, segments)  # its checks: the task's (flags as none)
        elif not _plausible(typed):
            typed = None  # as typed_selective's own check: the dict path names the field
    doc = typed[0] if typed is not None else selective(plain)
    keys: dict[str, Any] = {}
    if doc is not None:
        keys = file_keys(doc)
        labels, found, epoch = labels_of(where, opts.labels, opts.pattern)
        provisional, fields = iperf3_fields(
            where,
            data,
            checked_shape(doc),
            labels=labels,
            found=found,
            epoch_label=epoch,
            side=opts.side,
            mtime=mtime,
            flags_of=None
            if typed is None
            else _no_flags
            if deferred is not None
            else partial(_typed_flags, typed),
            digest=digest,
            keep_bytes=False,  # by reference: the bytes stay at their source
        )
        envelope = _direct_envelope(provisional, opts.campaign, fields)
    else:  # another format: the import's own reader (it loads the engines and pydantic)
        from netfleet.store.imports import build_envelope

        envelope = _plain_envelope(
            build_envelope(
                Path(where),
                data,
                campaign=opts.campaign,
                labels=opts.labels,
                pattern=opts.pattern,
                side=opts.side,
                mtime=mtime,
                plain=plain,
            )
        )
    run_id = run_identity(digest, envelope["campaign"], envelope["labels"])
    envelope["run_id"] = envelope["run_key"] = run_id
    imported = envelope["notes"]["imported"]
    imported.pop("original", None)
    imported.pop("original_encoding", None)
    imported["from"] = source
    imported["by_reference"] = True
    sums = None
    result = envelope["result"]
    if doc is not None and "server_output_text" not in result:
        rows, sums = _iperf3_rows(envelope, source, typed, into, deferred)
        if deferred is not None and later is not None:
            later.append(deferred)
    else:
        from netfleet.catalog.rows import envelope_rows

        rows = envelope_rows(envelope, source=source)
        rows.intervals = [r for r in rows.intervals if r.get("kind") != "stream"]
    row.update(
        state="ok",
        run_id=run_id,
        labels=_sorted_json(envelope["labels"]),
        format=envelope["engine"]["name"],
        file_keys=_sorted_json(keys or imported.get("file_labels") or {}),
        pattern_labels=_plain_json(imported.get("pattern_labels") or []),
        inferred=_plain_json(imported.get("inferred") or []),
        flags=_plain_json(imported.get("flags") or []),
    )
    return Read(row, rows, sums)


#: ``json.dumps(value, sort_keys=True)`` and ``json.dumps(value)``, their encoders made once
#: (json.dumps makes one per call)
_sorted_json = json_encoder(sort_keys=True)
_plain_json = json_encoder()


#: a typed decode: the document without its intervals, the top-level intervals' sums, and
#: those of ``server_output_json`` (None when it has none)
Typed = tuple[dict[str, Any], list[Any], list[Any] | None]


def typed_selective(plain: bytes, checked: bool = True) -> Typed | None:
    """:func:`selective`, with the sums typed (:mod:`netfleet.catalog.typedsums`); None when
    the document is not one it reads exactly (then :func:`selective` and the dict path).
    ``checked=False``: the rates are left to the caller (:func:`_plausible`, or a task's
    :class:`~netfleet.catalog.typedsums.TaskSums`)."""
    if plain.lstrip()[:1] != b"{":
        return None
    found = _one_pass(plain, checked)
    if found is not None:
        return found
    try:
        top = _TOP.decode(plain)
        if "start" not in top:
            return None
        doc = {k: _ANY.decode(raw) for k, raw in top.items() if k not in _TYPED_KEYS}
        ivs = INTERVALS.decode(top["intervals"]) if "intervals" in top else []
        if "intervals" in top:
            doc["intervals"] = []
        server_ivs = None
        if "server_output_json" in top:
            inner = _typed_inner(top["server_output_json"])
            if inner is None:
                return None
            doc["server_output_json"], server_ivs = inner
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    typed = doc, ivs, server_ivs
    if checked and not _plausible(typed):
        return None  # the dict path's checks name the field at fault
    return typed


def _plausible(typed: Typed) -> bool:
    """Every rate of the typed sums one a link can carry (else the dict path's checks)."""
    _, ivs, server_ivs = typed
    return plausible(ivs) and (server_ivs is None or plausible(server_ivs))


def _no_flags(side: str) -> list[dict[str, Any]]:
    """A deferred file's flags while its task checks it: none (else it is read again)."""
    return []


_TYPED_KEYS = frozenset({"intervals", "server_output_json"})


def _one_pass(plain: bytes, checked: bool = True) -> Typed | None:
    """:func:`typed_selective` of a document with only iperf3's and the label keys at the top
    (:class:`~netfleet.catalog.typedsums.Document`), in one pass; None for any other."""
    try:
        parsed = DOCUMENT.decode(plain)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    doc = {
        k: v
        for k in parsed.__struct_fields__
        if (v := getattr(parsed, k)) is not msgspec.UNSET and k not in _TYPED_KEYS
    }
    if "start" not in doc:
        return None
    ivs: list[Any] = []
    if parsed.intervals is not msgspec.UNSET:
        ivs, doc["intervals"] = parsed.intervals, []
    server_ivs = None
    if parsed.server_output_json is not msgspec.UNSET:
        inner = _typed_inner(parsed.server_output_json)
        if inner is None:
            return None
        doc["server_output_json"], server_ivs = inner
    typed = doc, ivs, server_ivs
    if checked and not _plausible(typed):
        return None
    return typed


def _typed_inner(raw: msgspec.Raw) -> tuple[dict[str, Any], list[Any]] | None:
    """The server's JSON a client carries: its keys, its sums typed."""
    try:
        inner = _TOP.decode(raw)
        server = {k: _ANY.decode(v) for k, v in inner.items() if k != "intervals"}
        ivs = INTERVALS.decode(inner["intervals"]) if "intervals" in inner else []
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if "intervals" in inner:
        server["intervals"] = []
    return server, ivs


def _typed_flags(typed: Typed, side: str) -> list[dict[str, Any]]:
    """:func:`~netfleet.store.import_iperf3.check_intervals` over the typed sums."""
    _, ivs, server_ivs = typed
    found = flags(ivs, side)
    return found + (flags(server_ivs, "server") if server_ivs is not None else [])


def _direct_envelope(run_id: str, campaign: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The envelope of an iperf3 document's fields (:func:`iperf3_fields`) in its JSON form,
    without the model (validating and dumping it cost 0.013 ms a file, and loading pydantic):
    every field is JSON's values as the model keeps them, but the hosts' addresses, which the
    file gives — anything but text goes through the model, which refuses it as the import
    does."""
    if all(isinstance(fields[host]["address"], str) for host in ("client", "server")):
        return plain_envelope(run_id, campaign, **fields)
    return _plain_envelope(imported_envelope(run_id, campaign, **fields))


#: the envelope fields that are models: dumped; every other field is JSON's values already
_MODELS = ("client", "server", "engine", "state")


def _plain_envelope(env: Any) -> dict[str, Any]:
    """The envelope as the catalog's row makers read it (its JSON form), without walking the
    result and the notes again: they are JSON's values already (decoded from the file, made
    by the import's builder); only the small records are dumped."""
    out = {name: getattr(env, name) for name in type(env).model_fields}
    for name in _MODELS:
        value = out.get(name)
        if value is not None:
            out[name] = value.model_dump(mode="json")
    return out


def _iperf3_rows(
    envelope: dict[str, Any],
    source: str,
    typed: Typed | None = None,
    into: dict[str, list[Any]] | None = None,
    deferred: Deferred | None = None,
) -> tuple[Any, dict[str, list[Any]]]:
    """An iperf3 run's ``runs`` and ``ends`` rows (the catalog's own parser, over the result
    without its intervals) and its interval sums as columns (the same rows the parser gives),
    appended to ``into`` (else to columns of its own); a ``deferred`` file's sums are left to
    its task (where they go is noted on it)."""
    sums = _sum_columns(into)
    if typed is not None:
        return _typed_rows(envelope, source, typed, sums, deferred)
    from netfleet.catalog.rows import envelope_rows

    result = envelope["result"]
    server = result.get("server_output_json")
    bare = {k: v for k, v in result.items() if k != "intervals"}
    if isinstance(server, dict):
        bare["server_output_json"] = {k: v for k, v in server.items() if k != "intervals"}
    rows = envelope_rows({**envelope, "result": bare}, source=source)
    reverse = as_bool(obj(envelope.get("params")).get("reverse"))
    if reverse is None:
        reverse = bool(as_bool(obj(obj(result.get("start")).get("test_start")).get("reverse")))
    sum_columns(rows.run_id, "client", result, reverse, sums)
    if isinstance(server, dict):
        sum_columns(rows.run_id, "server", server, reverse, sums)
    return rows, sums


def _sum_columns(into: dict[str, list[Any]] | None) -> dict[str, list[Any]]:
    return into if into is not None else {name: [] for name in SUM_COLUMNS}


def read_local(
    path: str,
    follow_links: bool,
    opts: Options,
    known: dict[str, Any],
    sums: dict[str, list[Any]] | None = None,
    later: list[Deferred] | None = None,
    limit: int | None = None,
) -> Read:
    """Read one local file (a regular file only, never through a link unless asked, never
    more than the byte limit, ``limit`` when given) and :func:`read_file` it; a second stat
    after the read catches a file changed while it was read (it is read again on the next
    import)."""
    source = os.path.abspath(path)
    known = {**known, "checked_ns": time.time_ns()}  # before the read: racy files (register)
    try:
        listed = (known["inode"], known["size"], known["mtime_ns"])
        data, st = read_checked(path, follow_links, limit, None if None in listed else listed)
    except ImportProblem as exc:
        return Read({"source": source, "state": "bad", "reason": str(exc), **known})
    except OSError as exc:
        reason = f"unreadable ({exc.strerror or exc})"
        return Read({"source": source, "state": "bad", "reason": reason, **known})
    meta = {"mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "checked_ns": known["checked_ns"]}
    read = read_file(source, data, meta, opts, st.st_mtime, sums, later, limit)
    try:
        after = os.stat(path, follow_symlinks=follow_links)
        same = (after.st_size, after.st_mtime_ns, after.st_ino) == (
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
        )
    except OSError:
        same = False
    if not same:
        read.row.update(state="bad", reason="changed while it was read: import it again")
        read.rows = None
    return read


def _typed_rows(
    envelope: dict[str, Any],
    source: str,
    typed: Typed,
    sums: dict[str, list[Any]],
    deferred: Deferred | None = None,
) -> tuple[Any, dict[str, list[Any]]]:
    """:func:`_iperf3_rows` from typed sums: the ``runs`` row and the ``ends`` rows the
    catalog's iperf3 parser makes of a result whose intervals are empty lists
    (:func:`~netfleet.catalog.rows.envelope_rows` → ``result_rows``: an ``ends`` row for the
    client's document and one for the server's JSON it carries; a text server's output never
    comes here), made without the engine registry; the sums come from the structs, filed
    under the side the dict path files them (a server's own file: ``server``)."""
    _, ivs, server_ivs = typed
    result = envelope["result"]
    server_json = result.get("server_output_json")
    values = imported_run_values(envelope, source) if deferred is not None else None
    rows: RunRows | ColumnRows
    if values is not None:  # a task's: its rows as values in column order, for the task's
        ends = [end_values(values[0], "client", result)]
        if isinstance(server_json, Mapping):
            ends.append(end_values(values[0], "server", server_json))
        rows = ColumnRows(values, ends)
    else:
        run = imported_run_row(envelope, source)
        rows = RunRows(run, [], [end_row(run["run_id"], "client", result)])
        if isinstance(server_json, Mapping):
            rows.ends.append(end_row(run["run_id"], "server", server_json))
    reverse = as_bool(obj(envelope.get("params")).get("reverse"))
    if reverse is None:
        reverse = bool(as_bool(obj(obj(result.get("start")).get("test_start")).get("reverse")))
    if deferred is not None:  # the task files its sums: the sides as below
        deferred.subject, deferred.reverse = str(envelope.get("subject")), reverse
        sides = ("server", None) if deferred.subject == "server" else ("client", "server")
        deferred.segments = [  # one or two sides
            (part, total, side)
            for (part, total, _), side in zip(deferred.segments, sides, strict=False)
        ]
    elif envelope.get("subject") == "server":  # result = {start, server_output_json: the file}
        columns(rows.run_id, "server", ivs, reverse, sums)
    else:
        columns(rows.run_id, "client", ivs, reverse, sums)
        if server_ivs is not None:
            columns(rows.run_id, "server", server_ivs, reverse, sums)
    return rows, sums
