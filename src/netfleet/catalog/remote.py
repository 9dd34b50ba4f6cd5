"""A Parquet catalog on S3: ``s3://BUCKET/PREFIX`` with the local layout
(:mod:`netfleet.catalog.layout`) as object keys.

* **Writes** (boto3, :func:`netfleet.aws.client`): ``ingest`` writes each part to a local
  staging file first (fsynced), then PUTs it — one PutObject per part, so S3 shows a whole part
  or none — intervals, ends, latency and **runs last**: the runs part is the commit marker, as
  on disk. A crash (or a dead endpoint) in the middle leaves parts of a batch without its runs
  part: no reader lists them, and the next ingest deletes them and ingests those runs again.
* **The manifest** (:mod:`netfleet.catalog.manifest`: a row per envelope ingested, what decides
  "already in") is one object, ``manifest.parquet``, uploaded whole in one PUT after the batches
  (:meth:`S3Catalog.push_manifest`): S3 holds the last manifest or the one before, never part of
  one. Each ingest starts from it (:meth:`S3Catalog.pull_manifest`: the local copy in the
  staging directory replaced when it is not the catalog's). A crash before the upload leaves
  committed runs the manifest does not know: the next ingest reads those envelopes again and
  records them (their runs are in the catalog: not written twice).
* **One writer**: S3 has no lock; the lock file is local, under the same state directory as
  the S3 results root's journal (``STATE/s3/BUCKET/PREFIX/``). Run ingest for one S3 catalog
  from one machine.
* **Reads** go through DuckDB's httpfs (:mod:`netfleet.catalog.httpfs`): the committed parts
  are listed with boto3 and read with ``read_parquet('s3://…')``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netfleet import aws
from netfleet.catalog.layout import CATALOG_FORMAT, META, TABLES, format_error, part_name
from netfleet.catalog.manifest import (
    INDEX,
    MANIFEST,
    current_generation,
    manifest_files,
    manifest_path,
    read_manifest,
    write_manifest,
)
from netfleet.durable import atomic_write
from netfleet.errors import CatalogError


@dataclass(frozen=True)
class S3Catalog:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Catalog:
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not bucket:
            raise CatalogError(
                f"{url}: no bucket in the catalog URL", hint="write s3://BUCKET/PREFIX"
            )
        return cls(bucket, prefix.strip("/"))

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def state_dir(self) -> Path:
        from netfleet.store.s3 import state_home

        return state_home() / "s3" / self.bucket / (self.prefix or "_") / ".netfleet-catalog"

    def _client(self) -> Any:
        return aws.client("s3")

    def _fail(self, what: str, exc: Exception) -> CatalogError:
        return CatalogError(
            f"{self.url}: {what} failed ({type(exc).__name__}: {str(exc)[:200]})",
            hint="check AWS_ENDPOINT_URL, the credentials (standard AWS chain) and the bucket",
        )

    def keys(self, under: str) -> list[str]:
        """Object keys under ``PREFIX/under`` (relative to the prefix), sorted."""
        found: list[str] = []
        start = self.key(under)
        try:
            pages = (
                self._client()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=self.bucket, Prefix=start)
            )
            for page in pages:
                found += [o["Key"] for o in page.get("Contents", [])]
        except Exception as exc:
            raise self._fail(f"listing {start}", exc) from exc
        base = len(self.key(""))
        return sorted(k[base:] for k in found)

    def committed_batches(self) -> list[str]:
        return [
            k.removeprefix("runs/part-").removesuffix(".parquet")
            for k in self.keys("runs/part-")
            if k.endswith(".parquet")
        ]

    def committed_urls(self) -> dict[str, list[str]]:
        """Table → the ``s3://`` URLs of committed parts; a clear error when there are none."""
        self.check_format()
        batches = self.committed_batches()
        if not batches:
            raise CatalogError(f"no catalog at {self.url}: run netfleet ingest first")
        out: dict[str, list[str]] = {}
        for table in TABLES:
            present = set(self.keys(f"{table}/part-"))
            names = [f"{table}/{part_name(b)}" for b in batches]
            out[table] = [f"s3://{self.bucket}/{self.key(n)}" for n in names if n in present]
        return out

    def get(self, rel: str) -> bytes | None:
        try:
            body = self._client().get_object(Bucket=self.bucket, Key=self.key(rel))["Body"]
            data: bytes = body.read()
            return data
        except Exception as exc:
            if "NoSuchKey" in type(exc).__name__ or "NoSuchKey" in str(exc):
                return None
            raise self._fail(f"reading {rel}", exc) from exc

    def put(self, rel: str, data: bytes) -> None:
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        try:
            self._client().put_object(
                Bucket=self.bucket, Key=self.key(rel), Body=data, ContentMD5=md5
            )
        except Exception as exc:
            raise self._fail(f"upload of {rel}", exc) from exc

    def delete(self, rels: list[str]) -> None:
        for start in range(0, len(rels), 1000):
            chunk = [{"Key": self.key(r)} for r in rels[start : start + 1000]]
            try:
                self._client().delete_objects(Bucket=self.bucket, Delete={"Objects": chunk})
            except Exception as exc:
                raise self._fail("deleting uncommitted parts", exc) from exc

    def check_format(self) -> None:
        data = self.get(META)
        if data is None:
            return
        try:
            version = json.loads(data).get("catalog_format")
        except (ValueError, AttributeError) as exc:
            raise CatalogError(f"{self.url}/{META}: unreadable catalog metadata ({exc})") from exc
        if version != CATALOG_FORMAT:
            raise format_error(self.url, version)

    def write_format(self) -> None:
        if self.get(META) is None:
            self.put(META, (json.dumps({"catalog_format": CATALOG_FORMAT}) + "\n").encode())

    def sweep(self) -> None:
        """Delete the parts of batches that never committed (a crashed or cut ingest)."""
        committed = set(self.committed_batches())
        orphans = [
            k
            for table in TABLES
            if table != "runs"
            for k in self.keys(f"{table}/part-")
            if k.removeprefix(f"{table}/part-").removesuffix(".parquet") not in committed
        ]
        if orphans:
            self.delete(orphans)

    def ingested_ids(self) -> set[str]:
        import pyarrow.parquet as pq

        ids: set[str] = set()
        for batch in self.committed_batches():
            data = self.get(f"runs/{part_name(batch)}")
            if data is not None:
                table = pq.read_table(io.BytesIO(data), columns=["run_id"])
                ids.update(table.column("run_id").to_pylist())
        return ids

    def pull_manifest(self, local: Path) -> None:
        """The catalog's manifest as the local copy the load loop reads (``local``: the staging
        directory, the catalog's lock held): replaced when it is not the catalog's object,
        removed when the catalog has none (its stat index goes with it: made again)."""
        data = self.get(MANIFEST)
        files = manifest_files(local)
        if data is not None and len(files) == 1 and files[0].read_bytes() == data:
            return
        for path in [*files, local / INDEX]:
            path.unlink(missing_ok=True)
        if data is not None:
            atomic_write(manifest_path(local), data)

    def push_manifest(self, local: Path) -> None:
        """The local manifest as the catalog's object: written whole (its segments folded into
        the base), then uploaded in one PUT."""
        if len(manifest_files(local)) > 1:
            write_manifest(local, read_manifest(local), current_generation(local))
        self.put(MANIFEST, manifest_path(local).read_bytes())
