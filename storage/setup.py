"""`chronicle setup`'s storage part: create what is missing, idempotently, on either topology."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from chronicle.settings import Settings, mask_conninfo
from chronicle.storage import claims, lake
from chronicle.storage.db import connect
from chronicle.storage.migrations import migration_files
from chronicle.weeks import utc_now

MARKER = ".chronicle-lake"


def ensure_storage(settings: Settings) -> list[str]:
    """Embedded: the DuckDB file with its schema. Lake: the data prefix (a marker object proves the bucket
    is writable with these credentials), the catalog's DuckLake metadata and migrations, the claims table."""
    done: list[str] = []
    started = utc_now()
    if settings.lake.enabled:
        root = settings.lake.data_root
        with connect(settings) as conn:  # attaches (DuckLake creates its metadata tables) and migrates
            version, fresh = _schema(conn, started)
            marker = f"{lake.data_dir(settings)}{MARKER}.json"
            # A pattern, so that glob lists the store (a literal path is returned as it is, found or not).
            exists = bool(conn.execute("SELECT count(*) FROM glob(?)", [marker[:-1] + "*"]).fetchall()[0][0])
            if not exists:
                stamp = datetime.now(UTC).isoformat()
                conn.execute(f"COPY (SELECT 'chronicle' AS created_by, '{stamp}' AS created_at) "
                             f"TO '{marker.replace(chr(39), chr(39) * 2)}' (FORMAT json)")
        done.append(f"data path {root}: {'created' if not exists else 'already there'} "
                    f"({lake.data_dir(settings)})")
        done.append(f"DuckLake catalog {mask_conninfo(lake.conninfo(settings))}: "
                    f"{'migrated' if fresh else 'already'} at schema migration {version} of {migration_files()[-1][0]}")
        claims.holder(settings, "chronicle:setup")  # creates the claims table in PostgreSQL if missing
        done.append(f"claims table {claims.TABLE} in the catalog database: already there or created")
    else:
        existed = settings.db_path.exists()
        with connect(settings) as conn:
            version, fresh = _schema(conn, started)
        state = "already up to date" if existed and not fresh else "migrated" if existed else "created"
        done.append(f"DuckDB file {settings.db_path}: {state} at schema migration {version}")
    return done


def _schema(conn: duckdb.DuckDBPyConnection, started: datetime) -> tuple[int, bool]:
    """(latest migration, whether this setup applied any): `connect` migrates on open."""
    version, last = conn.execute("SELECT max(version), max(applied_at) FROM schema_migrations").fetchall()[0]
    return version, last is not None and last >= started
