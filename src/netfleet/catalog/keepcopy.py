"""``--keep-copy`` (issue 26): each file read kept as it is — a hardlink on the same file
system, else a reflink where the file system can, else a copy; S3 to S3 a server-side copy —
named by its SHA-256."""

from __future__ import annotations

import os
from pathlib import Path

from netfleet.catalog.layout import TEMP_PREFIX
from netfleet.catalog.sourcelist import Found, s3_client, s3_split
from netfleet.durable import atomic_write


def keep(item: Found, digest: str, dest: str) -> str:
    """Keep the file as it is under ``dest``, named by its SHA-256 (and its name's suffix)."""
    name = digest + "".join(Path(item.source).suffixes[-2:])
    if dest.startswith("s3://"):
        bucket, prefix = s3_split(dest)
        key = f"{prefix.rstrip('/')}/{name}" if prefix else name
        client = s3_client()
        if item.source.startswith("s3://"):  # server-side: the bytes never come here
            src_bucket, src_key = s3_split(item.source)
            client.copy_object(
                Bucket=bucket, Key=key, CopySource={"Bucket": src_bucket, "Key": src_key}
            )
        else:
            client.put_object(Bucket=bucket, Key=key, Body=Path(item.path).read_bytes())
        return f"s3://{bucket}/{key}"
    folder = Path(dest)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if target.exists():
        return str(target.resolve())
    if item.source.startswith("s3://"):
        bucket, key = s3_split(item.source)
        data = s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
        atomic_write(target, data, prefix=TEMP_PREFIX)
        return str(target.resolve())
    try:
        os.link(item.path, target, follow_symlinks=False)
    except OSError:
        _copy(Path(item.path), target)
    return str(target.resolve())


def _copy(src: Path, target: Path) -> None:
    """A reflink when the file system can (one ioctl, no bytes moved), else a plain copy."""
    import fcntl
    import shutil

    tmp = target.with_name(TEMP_PREFIX + target.name)
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), 0x40049409, fin.fileno())  # FICLONE
        except OSError:
            shutil.copyfileobj(fin, fout)
        fout.flush()
        os.fsync(fout.fileno())
    os.replace(tmp, target)
