"""Hybrid search over the `memories` table: a dense leg and a full-text leg, fused by `chronicle.memory.search`.

Both legs return up to `pool` candidates (ids, importance, scores) under the same prefilter; full rows are
fetched for the final `limit` only (taking every column of ~80 candidates cost more than one extra read).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from lancedb.query import MatchQuery

from chronicle.memory.search import Candidate, Scored, fuse, tokenize
from storage.memory_arrow import vectors
from storage.memory_indexes import ANN_NPROBES, ANN_REFINE_FACTOR
from storage.memory_schema import ROW_COLUMNS, SearchHit, StoredMemory

SearchMode = Literal["hybrid", "dense"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _search_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-fts")
        return _pool


@dataclass(frozen=True)
class Weights:
    semantic: float
    importance: float
    fulltext: float


def ranked(
    table: Any, embed_query: Any, query: str, where: str | None, limit: int, mode: SearchMode, *, ann: bool,
    weights: Weights,
) -> tuple[list[Scored], dict[str, int]]:
    """The best `limit` candidates scored, and their row addresses (for `take_rows`)."""
    pool = max(limit * 4, 40)  # candidates per leg; importance can promote rows below the top `limit`
    tokens = tokenize(query) if mode == "hybrid" else []
    # Full text needs no query vector: run it on another thread while the model embeds the query
    # (LanceDB releases the GIL), which hides most of its cost.
    fts_future = _search_pool().submit(fts_leg, table, tokens, where, pool) if tokens else None
    qvec = embed_query(query)
    dense = dense_leg(table, qvec, where, pool, ann=ann)
    fts = fts_future.result() if fts_future is not None else None

    dense_ids = dense.column("id").to_pylist()
    cosine = dict(zip(dense_ids, (1.0 - dense["_distance"].to_numpy()).tolist(), strict=True))
    importance = dict(zip(dense_ids, dense.column("importance").to_pylist(), strict=True))
    row_ids = dict(zip(dense_ids, dense.column("_rowid").to_pylist(), strict=True))
    bm25: dict[str, tuple[float, int]] = {}
    if fts is not None and fts.num_rows:
        fts_cos = (vectors(fts) @ qvec).tolist()  # exact cosine for rows only full text found
        columns = (fts.column(c).to_pylist() for c in ("id", "_score", "importance", "_rowid"))
        for rank, (row_id, score, imp, addr, cos) in enumerate(zip(*columns, fts_cos, strict=True), start=1):
            bm25[row_id] = (float(score), rank)
            cosine.setdefault(row_id, cos)
            importance.setdefault(row_id, imp)
            row_ids.setdefault(row_id, addr)
    candidates = [
        Candidate(
            id=i,
            cosine=float(cos),
            importance=float(importance[i] or 0.0),
            bm25=bm25[i][0] if i in bm25 else None,
            fts_rank=bm25[i][1] if i in bm25 else None,
        )
        for i, cos in cosine.items()
    ]
    scored = fuse(
        candidates,
        semantic_weight=weights.semantic,
        importance_weight=weights.importance,
        fulltext_weight=weights.fulltext,
    )[:limit]
    return scored, {s.id: row_ids[s.id] for s in scored}


def hits(scored: list[Scored], rows: dict[str, StoredMemory]) -> list[SearchHit]:
    """Scored candidates with their rows, in rank order (rows deleted meanwhile are skipped)."""
    return [
        SearchHit(**vars(rows[s.id]), score=s.score, semantic=s.semantic, cosine=s.cosine, bm25=s.bm25,
                  fts_rank=s.fts_rank)
        for s in scored
        if s.id in rows
    ]


def dense_leg(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: bool) -> pa.Table:
    query = table.search(qvec, vector_column_name="vector").distance_type("cosine")
    query = query.select(["id", "importance", "_distance"]).with_row_id(True)
    if ann:
        query = query.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE_FACTOR)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool).to_arrow()


def fts_leg(table: Any, tokens: list[str], where: str | None, pool: int) -> pa.Table:
    query = table.search(MatchQuery(" ".join(tokens), "fts_text"), query_type="fts")
    query = query.select(["id", "importance", "vector", "_score"]).with_row_id(True)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool).to_arrow()


def take_rows(table: Any, row_ids: list[int]) -> dict[str, StoredMemory]:
    """Rows by their row ids from this version's legs: positional, no index lookup (~1.5 ms less than by id)."""
    if not row_ids:
        return {}
    try:
        data = table.take_row_ids(row_ids).select(ROW_COLUMNS).to_arrow()
    except (OSError, ValueError, RuntimeError):  # row ids invalidated by a concurrent compaction
        return {}
    return {row["id"]: StoredMemory.from_row(row) for row in data.to_pylist()}


def nearest(table: Any, matrix: np.ndarray, k: int, *, ann: bool) -> list[list[tuple[str, float]]]:
    """Per query vector, up to `k` (id, cosine) of the closest rows, best first (one multi-vector query)."""
    out: list[list[tuple[str, float]]] = [[] for _ in range(len(matrix))]
    if len(matrix) == 0 or table.count_rows() == 0:
        return out
    for start in range(0, len(matrix), 256):  # one multi-vector query per 256 items
        part = matrix[start : start + 256]
        query = table.search(part, vector_column_name="vector").distance_type("cosine")
        query = query.select(["id", "_distance"])
        if ann:
            query = query.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE_FACTOR)
        result = query.limit(k).to_arrow()
        qidx = result.column("query_index").to_pylist() if len(part) > 1 else [0] * result.num_rows
        for q, row_id, dist in zip(
            qidx, result.column("id").to_pylist(), result.column("_distance").to_pylist(), strict=True
        ):
            out[start + q].append((row_id, 1.0 - float(dist)))
    for found in out:
        found.sort(key=lambda x: -x[1])
    return out
