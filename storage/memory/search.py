"""Hybrid search over the `memories` table: a dense leg and a full-text leg, fused by `chronicle.memory.search`.

Both legs return up to `pool` candidates (ids, importance, scores) under the same prefilter; the re-scored
candidates' vectors and rows (the packed copy of their display columns, schema 5) come in one positional read.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from chronicle.storage.memory.arrow import sql_list, unpack_row, vectors
from chronicle.storage.memory.indexes import ANN_NPROBES, ANN_REFINE_FACTOR
from chronicle.storage.memory.schema import PACKED, ROW_COLUMNS, SearchHit, StoredMemory
from lancedb.query import MatchQuery

from chronicle.memory.search import Candidate, QueryCost, Scored, ScoreRule, fuse, tokenize

SearchMode = Literal["hybrid", "dense"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_last = threading.local()


def last_cost(*, cpu: bool = False) -> QueryCost:
    """The cost breakdown of this thread's last `ranked` call (bench/search.py; ~2 us of clock reads per query):
    wall seconds, or with `cpu` the process's CPU seconds (all threads, LanceDB's workers included — what a
    busy machine does not inflate; exact when full text ran in line, overlapping the encoder otherwise)."""
    return getattr(_last, "cpu" if cpu else "cost", None) or QueryCost()


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _costs(marks: list[tuple[float, float]], fulltext: tuple[float, float], waited: tuple[float, float]) -> None:
    """Both breakdowns of one query from its clock marks: start, encoder, dense, legs done, fused, vectors read,
    ranked, rows read."""
    for kind in (0, 1):
        t = [m[kind] for m in marks]
        cost = QueryCost(encoder=t[1] - t[0], dense=t[2] - t[1], fulltext=fulltext[kind], waited=waited[kind],
                         fusion=(t[4] - t[3]) + (t[6] - t[5]), fetch=(t[5] - t[4]) + (t[7] - t[6]), total=t[7] - t[0])
        setattr(_last, "cpu" if kind else "cost", cost)


def _search_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-fts")
        return _pool


def _core_to_spare() -> bool:
    """Whether the 1-minute load average leaves at least one core idle (reading /proc/loadavg costs ~10 us)."""
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    except OSError:  # no load average on this platform
        return True


@dataclass(frozen=True)
class Weights:
    semantic: float
    importance: float
    fulltext: float
    rule: ScoreRule = "scaled"


RESCORE = 2
"""The best `RESCORE x limit` candidates by estimated score get their exact cosine before the final cut."""
FULLTEXT_SHARE = 0.5
"""The full-text leg's pool as a share of the dense leg's (`max(4 x limit, 40)`): a default search (limit 10, the
store ranks 15) takes 60 dense and 30 full-text candidates (was 60). bench/memory_e2e.py `--fulltext-shares`
(hit@k of the same distilled stores under several shares, load 7-9): 0.5 kept every layout's hit@5 / hit@10
within one question of 1.0 (LoCoMo unscoped worst 0.736 / 0.831 both; MemoryBank scoped worst 0.850 / 0.980
both), 0.25 lost LoCoMo unscoped hit@10 (0.831 -> 0.818)."""


def ranked(
    table: Any, embed_query: Any, query: str, where: str | None, limit: int, mode: SearchMode, *, ann: bool,
    weights: Weights,
) -> tuple[list[Scored], dict[str, StoredMemory]]:
    """The best `limit` candidates scored, with their rows (rows deleted or moved meanwhile are missing).

    Per query: the full-text leg (on another thread, while the model embeds the query), the dense leg, one
    fusion on estimated cosines, a positional read of the vectors and packed rows of the top `RESCORE x limit`
    rows whose cosine is not exact yet, the final ranking, then (only for final rows that read did not bring)
    a positional read of the packed rows. Estimated, because neither leg reads a vector: the dense leg's
    distances come from the ANN index's 8-bit codes once the table has one (exact below `ann_min_rows`, and
    then not read again), and a row only full text found is given the lowest cosine of the dense pool — an
    upper bound, since the dense leg would have returned it otherwise — so it is never ranked out before its
    exact cosine is known. Reading vectors inside the legs (LanceDB's `refine_factor`, or the vector column in
    the full-text leg) cost ~3x the rest of the query at 100 k rows; a LanceDB take costs per column (~0.25 ms
    each at 1 M rows), hence one packed column for the 22 display ones (bench/search.py,
    docs/design/memory-search-scale.md).
    """
    marks = [_now()]
    pool = max(limit * 4, 40)  # dense candidates; importance can promote rows below the top `limit`
    qvec, dense, fts, fulltext, waited = _legs(table, embed_query, query, where, mode, pool, ann=ann, marks=marks)
    found = _Candidates.of(dense, fts, pool)
    estimated = found.scored(found.cosine, weights)[: limit * RESCORE]
    marks.append(_now())
    # Exact cosines before the final cut, read only where missing: a dense candidate already has its exact one
    # when the leg searched without the ANN index; a full-text-only row (bounded) and the index's 8-bit
    # estimates get theirs from their vectors — read with the rows' packed display columns in the same take
    # (one take less: with the ANN index every final row is among them).
    unsure = [s.id for s in estimated if ann or s.id not in found.dense]
    exact, packed = take_rescored(table, {found.row_ids[i]: i for i in unsure}, qvec)
    if len(exact) < len(unsure):  # a compaction between the legs and the take moved rows: look them up by id
        exact, packed = cosines_by_id(table, unsure, qvec), {}
    found.cosine.update(exact)
    marks.append(_now())
    keep = {s.id for s in estimated}
    # Only the re-scored rows can make the cut, so only they are scored again — with the best full-text row,
    # whose BM25 normalises everyone's (`fuse`): the same ranking from ~40 candidates instead of ~150.
    best_text = [i for i, (_, rank) in found.bm25.items() if rank == 1]
    rescored = found.scored({i: found.cosine[i] for i in [*keep, *best_text]}, weights)
    final = [s for s in rescored if s.id in keep][:limit]
    marks.append(_now())
    rows = _final_rows(table, final, packed, found.row_ids)
    marks.append(_now())
    _costs(marks, fulltext, waited)
    return final, rows


def _legs(
    table: Any, embed_query: Any, query: str, where: str | None, mode: SearchMode, pool: int, *, ann: bool,
    marks: list[tuple[float, float]],
) -> tuple[np.ndarray, pa.Table, pa.Table | None, tuple[float, float], tuple[float, float]]:
    """The query vector, the dense leg's and the full-text leg's candidates (None without terms or in dense mode),
    the full-text leg's own (wall, CPU) seconds and how long its thread was waited for; a clock mark after the
    encoder, the dense leg and both legs."""
    fts_pool = max(1, round(pool * FULLTEXT_SHARE))
    tokens = tokenize(query) if mode == "hybrid" else []
    # Full text needs no query vector: with a core to spare it runs on another thread while the model embeds
    # the query. On a saturated machine the hand-off only adds a wait for the scheduler (measured at load
    # average 11 on 2 cores, 100 k rows: p95 432 ms threaded vs 283 ms in line), so then it runs in line.
    fts_future = None
    if tokens and _core_to_spare():
        fts_future = _search_pool().submit(_timed_fts, table, tokens, where, fts_pool)
    qvec = embed_query(query)
    marks.append(_now())
    dense = dense_leg(table, qvec, where, pool, ann=ann)
    marks.append(_now())
    fts, fulltext, waited = None, (0.0, 0.0), (0.0, 0.0)
    if fts_future is not None:
        fts, fulltext = fts_future.result()
        waited = tuple(b - a for a, b in zip(marks[-1], _now(), strict=True))  # type: ignore[assignment]
    elif tokens:
        fts, fulltext = _timed_fts(table, tokens, where, fts_pool)
    marks.append(_now())
    return qvec, dense, fts, fulltext, waited


@dataclass
class _Candidates:
    """Both legs' candidates by id: cosine (estimated until re-scored), importance, row address, BM25 score and
    rank (full-text rows only), and which of them the dense leg found."""

    cosine: dict[str, float]
    importance: dict[str, Any]
    row_ids: dict[str, int]
    bm25: dict[str, tuple[float, int]]
    dense: set[str]

    @classmethod
    def of(cls, dense: pa.Table, fts: pa.Table | None, pool: int) -> _Candidates:
        dense_ids = dense.column("id").to_pylist()
        cosine = dict(zip(dense_ids, (1.0 - dense["_distance"].to_numpy()).tolist(), strict=True))
        importance = dict(zip(dense_ids, dense.column("importance").to_pylist(), strict=True))
        row_ids = dict(zip(dense_ids, dense.column("_rowid").to_pylist(), strict=True))
        bm25: dict[str, tuple[float, int]] = {}
        if fts is not None and fts.num_rows:
            bound = min(cosine.values()) if len(cosine) >= pool else 1.0
            columns = (fts.column(c).to_pylist() for c in ("id", "_score", "importance", "_rowid"))
            for rank, (row_id, score, imp, addr) in enumerate(zip(*columns, strict=True), start=1):
                bm25[row_id] = (float(score), rank)
                cosine.setdefault(row_id, bound)
                importance.setdefault(row_id, imp)
                row_ids.setdefault(row_id, addr)
        return cls(cosine, importance, row_ids, bm25, set(dense_ids))

    def scored(self, cosine: dict[str, float], weights: Weights) -> list[Scored]:
        """These candidates (with these cosines) fused and ranked."""
        bm25 = self.bm25
        candidates = [
            Candidate(
                id=i,
                cosine=float(c),
                importance=float(self.importance[i] or 0.0),
                bm25=bm25[i][0] if i in bm25 else None,
                fts_rank=bm25[i][1] if i in bm25 else None,
            )
            for i, c in cosine.items()
        ]
        return fuse(candidates, semantic_weight=weights.semantic, importance_weight=weights.importance,
                    fulltext_weight=weights.fulltext, rule=weights.rule)


def _final_rows(table: Any, final: list[Scored], packed: dict[str, Any], row_ids: dict[str, int]
                ) -> dict[str, StoredMemory]:
    """The final rows: unpacked from the re-scoring take, the others (exact dense rows below `ann_min_rows`, rows
    written before schema 5) read now — by row id, by id where the row ids went stale."""
    rows = {s.id: StoredMemory.from_row(packed[s.id]) for s in final if s.id in packed}
    rest = [s.id for s in final if s.id not in rows]
    if rest:
        rows.update(take_rows(table, [row_ids[i] for i in rest]))
        if missing := [i for i in rest if i not in rows]:
            rows.update(rows_by_id(table, missing))
    return rows


def hits(scored: list[Scored], rows: dict[str, StoredMemory]) -> list[SearchHit]:
    """Scored candidates with their rows, in rank order (rows deleted meanwhile are skipped)."""
    return [
        SearchHit(**vars(rows[s.id]), score=s.score, semantic=s.semantic, cosine=s.cosine, bm25=s.bm25,
                  fts_rank=s.fts_rank)
        for s in scored
        if s.id in rows
    ]


FLAT_FILTERED_ROWS = 2_000
"""A prefilter matching at most this many rows is searched exactly, without the ANN index (see `dense_query`).
Measured at 1 M rows (CPU per query): exact over one subject's 100 rows 8.5 ms vs 29.6 ms through the index;
exact over 17,500 rows 220 ms vs 48 ms — LanceDB reads the matching vectors row by row (~12 us each), so
beyond ~2,000 rows the index is cheaper, and that many matches fill the pool from the probed partitions."""
_COUNTS_KEPT = 1_024
_counts: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[int, str], int]] = weakref.WeakKeyDictionary()
_counts_lock = threading.Lock()


def matching_rows(table: Any, where: str) -> int:
    """Rows `where` matches, remembered per table version: counting a broad filter costs ~12-25 ms CPU at 1 M rows
    (a narrow one ~1 ms), and an agent repeats its filters — the same person, the same "not superseded"."""
    key = (table.version, where)
    with _counts_lock:
        cache = _counts.setdefault(table, OrderedDict())
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    n = table.count_rows(where)
    with _counts_lock:
        cache[key] = n
        while len(cache) > _COUNTS_KEPT:
            cache.popitem(last=False)
    return n


def dense_leg(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: bool) -> pa.Table:
    return dense_query(table, qvec, where, pool, ann=ann).to_arrow()


def dense_query(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: bool) -> Any:
    """The dense leg's LanceDB query (tests read its plan): up to `pool` nearest rows under the prefilter
    `where` — ids, importance, estimated cosine distance.

    With a filter the ANN index is a poor fit: it searches `ANN_NPROBES` partitions and masks out the rows the
    filter rejects, so a narrow filter — one person of 10,000, ~100 rows of a million, spread over every
    partition — found a few rows from the probed partitions and missed the rest. A filter the scalar indexes
    narrow to at most `FLAT_FILTERED_ROWS` rows is therefore searched exactly over just those rows (counting
    them is one more scalar-index lookup, remembered per table version); a broader one probes at least
    `ANN_NPROBES` partitions and more while it has found fewer than `pool` rows.
    """
    query = table.search(qvec, vector_column_name="vector").distance_type("cosine")
    query = query.select(["id", "importance", "_distance"]).with_row_id(True)
    if ann and where and matching_rows(table, where) <= FLAT_FILTERED_ROWS:
        query = query.bypass_vector_index()
    elif ann:  # no refine_factor: `ranked` re-scores its top candidates on their full vectors itself
        query = query.minimum_nprobes(ANN_NPROBES).maximum_nprobes(0 if where else ANN_NPROBES)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool)


def _timed_fts(table: Any, tokens: list[str], where: str | None, pool: int) -> tuple[pa.Table, tuple[float, float]]:
    start = _now()
    found = fts_leg(table, tokens, where, pool)
    end = _now()
    return found, (end[0] - start[0], end[1] - start[1])


def fts_leg(table: Any, tokens: list[str], where: str | None, pool: int) -> pa.Table:
    return fts_query(table, tokens, where, pool).to_arrow()


def fts_query(table: Any, tokens: list[str], where: str | None, pool: int) -> Any:
    """The full-text leg's LanceDB query (tests read its plan)."""
    query = table.search(MatchQuery(" ".join(tokens), "fts_text"), query_type="fts")
    query = query.select(["id", "importance", "_score"]).with_row_id(True)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool)


def take_rows(table: Any, row_ids: list[int]) -> dict[str, StoredMemory]:
    """Rows by their row ids from this version's legs: one positional read, no index lookup (~1.5 ms less than
    by id), of the one `PACKED` column — LanceDB's take costs per column (at 1 M rows, 20 rows of the 22
    display columns: 13.0 ms CPU, 6.9 ms for a single row; of the packed column: 2.2 ms). Rows written
    before schema 5 (packed null) are read from their columns. Empty when a concurrent compaction invalidated
    the row ids (or the table has no `PACKED` column: the caller then reads by id)."""
    if not row_ids:
        return {}
    try:
        data = table.take_row_ids(row_ids).select([PACKED]).with_row_id().to_arrow()
    except (OSError, ValueError, RuntimeError):
        return {}
    out, unpacked = {}, []
    for addr, packed in zip(data.column("_rowid").to_pylist(), data.column(PACKED).to_pylist(), strict=True):
        if packed:
            row = StoredMemory.from_row(unpack_row(packed))
            out[row.id] = row
        else:
            unpacked.append(addr)
    if unpacked:
        out.update(take_columns(table, unpacked))
    return out


def take_columns(table: Any, row_ids: list[int]) -> dict[str, StoredMemory]:
    """`take_rows` from the display columns themselves (rows written before schema 5)."""
    try:
        data = table.take_row_ids(row_ids).select(ROW_COLUMNS).to_arrow()
    except (OSError, ValueError, RuntimeError):
        return {}
    return {row["id"]: StoredMemory.from_row(row) for row in data.to_pylist()}


def rows_by_id(table: Any, ids: list[str]) -> dict[str, StoredMemory]:
    """`take_rows` by id (slower: an index lookup), for when row ids went stale."""
    data = table.search().where(f"id IN ({sql_list(ids)})").select(ROW_COLUMNS).limit(len(ids)).to_arrow()
    return {row["id"]: StoredMemory.from_row(row) for row in data.to_pylist()}


def take_rescored(
    table: Any, ids_at: dict[int, str], qvec: np.ndarray
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Exact cosine with `qvec` of the rows at these row ids (keys; values: their ids), and their packed rows
    (unpacked; none for a row written before schema 5), in one take of the vector and `PACKED` columns; a
    row id now holding another row (a compaction moved them) is left out, so the answer comes back short.
    The take returns rows in row-id order, matched by their `_rowid`, which costs nothing (the `id` column was
    a third of a 40-row vector read: 1.8 vs 2.9 ms CPU)."""
    if not ids_at:
        return {}, {}
    try:
        data = table.take_row_ids(list(ids_at)).select(["vector", PACKED]).with_row_id().to_arrow()
    except (OSError, ValueError, RuntimeError):
        return {}, {}
    cos = (vectors(data) @ qvec).tolist() if data.num_rows else []
    exact: dict[str, float] = {}
    rows: dict[str, dict[str, Any]] = {}
    for addr, c, text in zip(data.column("_rowid").to_pylist(), cos, data.column(PACKED).to_pylist(), strict=True):
        if (i := ids_at.get(addr)) is None:
            continue
        if text:
            row = unpack_row(text)
            if row["id"] != i:
                continue
            rows[i] = row
        exact[i] = c
    return exact, rows


def cosines_by_id(table: Any, ids: list[str], qvec: np.ndarray) -> dict[str, float]:
    """`take_rescored`'s cosines by id (an index lookup)."""
    data = table.search().where(f"id IN ({sql_list(ids)})").select(["id", "vector"]).limit(len(ids)).to_arrow()
    cos = (vectors(data) @ qvec).tolist() if data.num_rows else []
    return dict(zip(data.column("id").to_pylist(), cos, strict=True))


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
