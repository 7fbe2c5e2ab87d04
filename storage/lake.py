"""The lake topology's DuckDB session: extensions, object-store secret, `ATTACH 'ducklake:postgres:…'`.

Only `storage/db.py` decides *whether* the lake is used; this module knows *how* to reach it. One
in-memory DuckDB database per process attaches the lake once (ATTACH costs ~0.3 s: the catalog is read
from PostgreSQL) and hands out cursors, each a connection with its own transactions, so threads and
short units of work pay nothing for the attach. Every new transaction reads the catalog's newest
snapshot: no process ever sees a stale copy, and no file lock is involved.

Extensions load offline from the `duckdb-ext-*` packages (`SET extension_directory` to their folder);
without those packages DuckDB's normal `INSTALL` from its official repository is used.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from urllib.parse import urlparse

import duckdb

from chronicle.settings import Settings
from chronicle.storage.files import STORAGE_VERSION

log = logging.getLogger("chronicle.storage.lake")

LAKE = "chronicle"  # the lake's catalog name inside DuckDB sessions (ours and the analysts')
COORD = "chronicle_pg"  # the catalog database attached as plain PostgreSQL (claims, see storage/claims.py)
EXTENSIONS = ("ducklake", "postgres_scanner", "httpfs")
_CONFIG = {"storage_compatibility_version": STORAGE_VERSION}
CONFLICT_ATTEMPTS = 12
"""Times a unit of work (or a coordination statement) is re-run after losing to a concurrent commit."""


def backoff(attempt: int) -> None:
    """A jittered pause before re-running what lost a conflict (shared by the lake's writers and claims)."""
    time.sleep(min(2.0, 0.02 * 2**attempt) * (0.5 + random.random()))


def _lit(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL byte in a SQL literal")
    return "'" + value.replace("'", "''") + "'"


def extension_dir() -> Path | None:
    """The `duckdb_ext/extensions` folder of the installed `duckdb-ext-*` packages, if they are installed."""
    spec = importlib_util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "extensions"
        if any(folder.glob(f"v{duckdb.__version__}/*/ducklake.duckdb_extension")):
            return folder
    return None


def extension_sql() -> list[str]:
    """Statements that make the three extensions loadable (offline folder, else the official repository)."""
    folder = extension_dir()
    if folder is not None:
        return [f"SET extension_directory = {_lit(str(folder))}"]
    return [f"INSTALL {name}" for name in EXTENSIONS]


def load_extensions(conn: duckdb.DuckDBPyConnection) -> None:
    for sql in extension_sql():
        conn.execute(sql)
    for name in EXTENSIONS:
        conn.execute(f"LOAD {name}")


def data_dir(settings: Settings) -> str:
    """Where DuckLake writes its Parquet files: `<data_path>/ducklake/`."""
    return f"{settings.lake.data_root}/ducklake/"


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def conninfo(settings: Settings) -> str:
    assert settings.lake.catalog is not None
    return settings.lake.catalog.removeprefix("ducklake:postgres:")


def _endpoint(settings: Settings) -> tuple[str, bool] | None:
    """(host[:port], use_ssl) of an S3-compatible endpoint override; None for AWS itself."""
    if not settings.lake.aws_endpoint_url:
        return None
    url = urlparse(settings.lake.aws_endpoint_url if "://" in settings.lake.aws_endpoint_url
                   else f"https://{settings.lake.aws_endpoint_url}")
    return url.netloc, url.scheme == "https"


def secret_sql(settings: Settings) -> str | None:
    """A session-only S3 secret from the settings (AWS_* variables); None when no credentials are configured."""
    parts = ["TYPE s3"]
    if settings.lake.aws_access_key_id:
        parts.append(f"KEY_ID {_lit(settings.lake.aws_access_key_id)}")
    if settings.lake.aws_secret_access_key:
        parts.append(f"SECRET {_lit(settings.lake.aws_secret_access_key.get_secret_value())}")
    parts.append(f"REGION {_lit(settings.lake.aws_region or 'us-east-1')}")
    endpoint = _endpoint(settings)
    if endpoint:
        # S3-compatible servers (MinIO, moto, Ceph) are addressed by path, not by bucket sub-domain.
        parts += [f"ENDPOINT {_lit(endpoint[0])}", "URL_STYLE 'path'", f"USE_SSL {str(endpoint[1]).lower()}"]
    if len(parts) == 2 and not endpoint:
        return None
    return f"CREATE OR REPLACE TEMPORARY SECRET chronicle_s3 ({', '.join(parts)})"


def attach_sql(settings: Settings, *, writer: bool = True) -> str:
    """`ATTACH 'ducklake:postgres:…' AS chronicle (DATA_PATH …)`."""
    options = [f"DATA_PATH {_lit(data_dir(settings))}"]
    if writer and settings.lake.inline_rows:
        options.append(f"DATA_INLINING_ROW_LIMIT {int(settings.lake.inline_rows)}")
    return f"ATTACH IF NOT EXISTS {_lit(settings.lake.catalog or '')} AS {LAKE} ({', '.join(options)})"


def shell_sql(settings: Settings) -> str:
    """What an analyst's `duckdb` shell runs to read the live lake (`chronicle sql --print-attach`).

    No secret is printed: DuckDB's httpfs reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION from
    the shell's environment and libpq reads PGPASSWORD / ~/.pgpass, so the line is safe to paste or log.
    """
    stmts = extension_sql() + [f"LOAD {name}" for name in EXTENSIONS]
    endpoint = _endpoint(settings)
    if endpoint:
        stmts += [f"SET s3_endpoint = {_lit(endpoint[0])}", "SET s3_url_style = 'path'",
                  f"SET s3_use_ssl = {str(endpoint[1]).lower()}"]
    if settings.lake.aws_region:
        stmts.append(f"SET s3_region = {_lit(settings.lake.aws_region)}")
    stmts += [attach_sql(settings, writer=False), f"USE {LAKE}"]
    return "; ".join(stmts) + ";"


def lance_storage_options(settings: Settings) -> dict[str, str]:
    """LanceDB `storage_options` for an object-store URI: the same endpoint and credentials as DuckLake."""
    opts: dict[str, str] = {}
    if settings.lake.aws_endpoint_url:
        opts["aws_endpoint"] = settings.lake.aws_endpoint_url
        opts["allow_http"] = str(settings.lake.aws_endpoint_url.startswith("http://")).lower()
    if settings.lake.aws_access_key_id:
        opts["aws_access_key_id"] = settings.lake.aws_access_key_id
    if settings.lake.aws_secret_access_key:
        opts["aws_secret_access_key"] = settings.lake.aws_secret_access_key.get_secret_value()
    opts["aws_region"] = settings.lake.aws_region or "us-east-1"
    return opts


def _attach(db: duckdb.DuckDBPyConnection, settings: Settings, attempts: int = 20) -> None:
    """ATTACH the lake; on a fresh catalog, processes starting at once race to create DuckLake's metadata
    tables (PostgreSQL DDL is transactional: the loser sees "already exists" and finds them all on retry)."""
    for attempt in range(attempts):
        try:
            db.execute(attach_sql(settings))
            return
        except duckdb.Error as exc:
            if "already exists" not in str(exc) or attempt == attempts - 1:
                raise
            log.info("another process is creating the DuckLake catalog; attaching again")
            time.sleep(min(1.0, 0.02 * 2**attempt) * (0.5 + random.random()))


@dataclass
class LakeSession:
    """One process's DuckDB database with the lake (and, for claims, its catalog database) attached."""

    key: tuple[str, str, int]
    db: duckdb.DuckDBPyConnection
    migrated: bool = False

    def cursor(self) -> duckdb.DuckDBPyConnection:
        cur = self.db.cursor()
        cur.execute(f"USE {LAKE}")
        return cur


_sessions: dict[tuple[str, str, int], LakeSession] = {}
_sessions_lock = threading.Lock()


def session(settings: Settings) -> LakeSession:
    """The process's lake session for these settings (created, extensions loaded and lake attached once)."""
    key = (settings.lake.catalog or "", settings.lake.data_root, os.getpid())  # a forked child attaches anew
    with _sessions_lock:
        found = _sessions.get(key)
        if found is not None:
            return found
        root = settings.lake.data_root
        if not is_remote(root):
            Path(data_dir(settings)).mkdir(parents=True, exist_ok=True)
        db = duckdb.connect(":memory:", config=_CONFIG)
        try:
            db.execute("SET TimeZone = 'UTC'")
            db.execute("SET enable_progress_bar = false")
            load_extensions(db)
            secret = secret_sql(settings)
            if secret:
                db.execute(secret)
            # More patience than the default 10 attempts when several hosts commit at once; conflicts
            # that are not logical are re-committed by DuckLake itself without rewriting data files.
            db.execute("SET ducklake_max_retry_count = 50")
            _attach(db, settings)
            db.execute(f"ATTACH IF NOT EXISTS {_lit(conninfo(settings))} AS {COORD} (TYPE postgres)")
        except BaseException:
            db.close()
            raise
        _sessions[key] = found = LakeSession(key, db)
        log.info("attached DuckLake %s (data %s)", settings.lake.data_root, data_dir(settings))
        return found


def close_sessions() -> None:
    """Detach every lake session of this process (tests that drop their catalog database)."""
    with _sessions_lock:
        for s in _sessions.values():
            s.db.close()
        _sessions.clear()
