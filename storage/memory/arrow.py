"""Arrow and SQL helpers of the memory store: quoting, prefilters, whole-table reads, rows <-> Arrow."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronicle.memory.dedup import PlannedRow
from chronicle.memory.embedder import Embedder, embed_redacted
from chronicle.redaction.text import Redacted
from chronicle.storage.memory.schema import PACKED, ROW_COLUMNS

IN_CHUNK = 500
"""ids/hashes per `IN (...)` filter: keeps the SQL small."""


def build_where(*, tags: list[str] | None = None, min_importance: float | None = None, target_file: str | None = None,
                subject: str | None = None, current_at: datetime | None = None) -> str | None:
    """SQL prefilter for LanceDB (`tags` = any of; values are quoted, never interpolated raw).

    `subject`: only memories about this subject (already normalised). `current_at`: only memories that were
    current at that instant — created before it and not superseded by then (an as-of search).
    """
    parts = []
    if subject is not None:
        parts.append(f"subject = {sql_str(subject)}")
    if current_at is not None:
        stamp = sql_str(current_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"))
        parts.append(f"created < TIMESTAMP {stamp} AND (superseded_at IS NULL OR superseded_at >= TIMESTAMP {stamp})")
    if tags:
        parts.append(f"array_has_any(tags, [{sql_list(tags)}])")
    if min_importance is not None:
        parts.append(f"importance >= {float(min_importance)!r}")
    if target_file:
        parts.append(f"target_file = {sql_str(target_file)}")
    return " AND ".join(parts) or None


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_list(values: Sequence[str]) -> str:
    return ", ".join(sql_str(v) for v in values)


def chunks(items: list[str], size: int = IN_CHUNK) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def all_rows(table: Any, columns: list[str], where: str | None = None) -> pa.Table:
    """Every matching row (no vector search, no default limit)."""
    n = table.count_rows(where) if where else table.count_rows()
    if n == 0:
        return table.search().select(columns).limit(1).to_arrow().slice(0, 0)
    query = table.search().select(columns)
    if where:
        query = query.where(where)
    return query.limit(n).to_arrow()


def vectors(result: pa.Table, column: str = "vector") -> np.ndarray:
    """A fixed-size-list column of a query result as a `(rows, dim)` float32 matrix (no Python floats)."""
    data = result.column(column).combine_chunks()
    dim = data.type.list_size
    return data.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32, copy=False)


def vector_array(matrix: np.ndarray, dim: int) -> pa.FixedSizeListArray:
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1), type=pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def with_vectors(rows: pa.Table, matrix: np.ndarray, schema: pa.Schema) -> pa.Table:
    """Stored rows (their `ROW_COLUMNS`) with these vectors, packed again, in `schema` (a reindex's rewrite)."""
    dim = schema.field("vector").type.list_size
    rows = rows.append_column("vector", vector_array(matrix, dim))
    if PACKED in schema.names:
        rows = rows.append_column(PACKED, packed_column(rows))
    return rows.select(schema.names).cast(schema)


def to_arrow(rows: list[PlannedRow], schema: pa.Schema) -> pa.Table:
    """Planned rows (typed, with vectors) as one Arrow table in the table's schema (with their packed copy)."""
    dim = schema.field("vector").type.list_size
    dicts = [asdict(p.row) for p in rows]
    arrays = {name: pa.array([d[name] for d in dicts], type=schema.field(name).type)
              for name in ROW_COLUMNS if name in schema.names}
    arrays["vector"] = vector_array(np.stack([p.vector for p in rows]), dim)
    if PACKED in schema.names:
        arrays[PACKED] = packed_column(pa.table(arrays))
    return pa.table([arrays[name] for name in schema.names], schema=schema)


# The packed copy of a row's display columns (schema 5, `PACKED`): what `take_rows` reads instead of 22 columns.
_TIMES = frozenset(("created", "updated", "superseded_at"))
PACK_SLICE = 8_192
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
# Timestamps come back with the tzinfo Arrow gives them (`zoneinfo.ZoneInfo("UTC")` today), so an unpacked row
# equals a row read from the columns, repr included.
_ARROW_EPOCH = pa.scalar(0, pa.timestamp("us", tz="UTC")).as_py()


def packed_column(rows: pa.Table) -> pa.Array:
    """`PACKED` of each row of `rows` (which has the `ROW_COLUMNS` it stores), packed from the Arrow values
    themselves — exactly what a read of those columns returns, nulls included (a column the table lacks: null)."""
    names = [c for c in ROW_COLUMNS if c in rows.column_names]
    # Slice by slice: the Python rows of a whole 1 M-row rewrite (reindex) would take gigabytes at once.
    batches = rows.select(names).to_batches(max_chunksize=PACK_SLICE)
    return pa.array([pack_row(r) for batch in batches for r in batch.to_pylist()], pa.string())


def pack_row(row: dict[str, Any]) -> str:
    """One row's display columns as compact JSON (timestamps as integer microseconds since the epoch)."""
    plain = {k: (None if v is None else (v - _EPOCH) // _US) if k in _TIMES else v for k, v in row.items()}
    return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))


def unpack_row(packed: str) -> dict[str, Any]:
    """`pack_row` reversed: the row as `table.to_arrow().to_pylist()` gives it."""
    row = json.loads(packed)
    for k in _TIMES & row.keys():
        if row[k] is not None:
            row[k] = _ARROW_EPOCH + timedelta(microseconds=row[k])
    return row


def current_rows_where(subjects: Sequence[str]) -> str:
    """Rows about any of `subjects` that no newer memory superseded (null: a row written before schema 3)."""
    return f"subject IN ({sql_list(subjects)}) AND (superseded_by IS NULL OR superseded_by = '')"


def row_keys(rows: pa.Table) -> pa.Array:
    """`id|content_hash`: a row needs re-embedding when either is new to the snapshot."""
    return pc.binary_join_element_wise(rows.column("id"), rows.column("content_hash"), "|")


def embed_rows(embedder: Embedder, rows: pa.Table, redacted: Callable[[str], Redacted]) -> dict[str, np.ndarray]:
    """Content vectors of stored rows, keyed like `row_keys` (reindex and dedup re-embed rows the same way).
    `redacted`: the store's gate — a row read back is a plain `str`, and the embedder takes only `Redacted`."""
    if rows.num_rows == 0:
        return {}
    texts = [redacted(t) for t in rows.column("content").to_pylist()]
    return dict(zip(row_keys(rows).to_pylist(), embed_redacted(embedder, texts), strict=True))
