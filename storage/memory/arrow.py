"""Arrow and SQL helpers of the memory store: quoting, prefilters, whole-table reads, rows <-> Arrow."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from chronicle.storage.memory.schema import ROW_COLUMNS

from chronicle.memory.dedup import PlannedRow
from chronicle.memory.embedder import Embedder, embed_redacted
from chronicle.redaction.text import Redacted

IN_CHUNK = 500
"""ids/hashes per `IN (...)` filter: keeps the SQL small."""


def build_where(
    *, tags: list[str] | None = None, min_importance: float | None = None, target_file: str | None = None,
    subject: str | None = None, current_at: datetime | None = None,
) -> str | None:
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


def to_arrow(rows: list[PlannedRow], schema: pa.Schema) -> pa.Table:
    """Planned rows (typed, with vectors) as one Arrow table in the table's schema."""
    dim = schema.field("vector").type.list_size
    dicts = [asdict(p.row) for p in rows]
    arrays = {name: pa.array([d[name] for d in dicts], type=schema.field(name).type)
              for name in ROW_COLUMNS if name in schema.names}
    arrays["vector"] = vector_array(np.stack([p.vector for p in rows]), dim)
    return pa.table([arrays[name] for name in schema.names], schema=schema)


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
