"""DuckDB over S3: the httpfs extension loaded BY PATH from the ``duckdb_extension_httpfs`` wheel
(DuckDB cannot download extensions on an offline machine) and an S3 secret built from boto3's
standard credential chain and ``AWS_ENDPOINT_URL`` (path-style; no SSL for an ``http://``
endpoint, e.g. moto's server). Credentials never come from a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from netfleet import aws
from netfleet.errors import EnvironmentProblem


def extension_path() -> Path:
    try:
        import duckdb_extension_httpfs as wheel
    except ImportError as exc:
        raise EnvironmentProblem(
            "DuckDB's httpfs extension is not installed", hint="uv sync (duckdb-extension-httpfs)"
        ) from exc
    base = Path(wheel.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    path = base / "httpfs.duckdb_extension"
    if not path.is_file():
        raise EnvironmentProblem(
            f"no httpfs extension for DuckDB {duckdb.__version__} at {path}",
            hint="install duckdb-extension-httpfs of the same version as duckdb",
        )
    return path


def enable_s3(con: duckdb.DuckDBPyConnection) -> None:
    """Load httpfs into ``con`` and give it an S3 secret from boto3's credential chain."""
    import boto3  # heavy: only when S3 is used

    endpoint = aws.endpoint_url("s3")
    aws.check_endpoint("s3", endpoint)
    con.execute(f"LOAD '{extension_path().as_posix()}'")
    session = boto3.session.Session()
    creds = session.get_credentials()
    if creds is None:
        raise EnvironmentProblem(
            "no AWS credentials for S3", hint="use the standard chain: env, ~/.aws, instance role"
        )
    frozen = creds.get_frozen_credentials()
    opts: dict[str, Any] = {
        "TYPE": "s3",
        "KEY_ID": frozen.access_key,
        "SECRET": frozen.secret_key,
        "REGION": session.region_name or "us-east-1",
    }
    if frozen.token:
        opts["SESSION_TOKEN"] = frozen.token
    if endpoint:
        parts = urlsplit(endpoint)
        opts["ENDPOINT"] = parts.netloc
        opts["URL_STYLE"] = "path"
        opts["USE_SSL"] = parts.scheme == "https"
    body = ", ".join(
        f"{k} {str(v).lower() if isinstance(v, bool) else _quote(str(v))}" for k, v in opts.items()
    )
    con.execute(f"CREATE OR REPLACE SECRET netfleet_s3 ({body})")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
