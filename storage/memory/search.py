"""Hybrid search over the `memories` table: a dense leg and a full-text leg, fused by `chronicle.memory.search`.

Both legs return up to `pool` candidates (row addresses, importance, scores) under the same prefilter; the
re-scored candidates' vectors and rows (the packed copy of their display columns, schema 5) come in one positional
read. A search's reads go through LanceDB's async API on one loop thread (`storage/memory/aio.py`): the
full-text leg starts before the query is embedded, and each step is one hand-off instead of several per call.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from chronicle.memory.search import Candidate, QueryCost, Scored, ScoreRule, fuse, tokenize
from chronicle.storage.memory import aio
from chronicle.storage.memory.arrow import sql_list, unpack_row, vectors
from chronicle.storage.memory.indexes import ANN_REFINE_FACTOR
from chronicle.storage.memory.schema import PACKED, ROW_COLUMNS, SearchHit, StoredMemory

SearchMode = Literal["hybrid", "dense"]

_last = threading.local()


def last_cost(*, cpu: bool = False) -> QueryCost:
    """The cost breakdown of this thread's last `ranked` call (bench/search.py; ~2 us of clock reads per query):
    wall seconds, or with `cpu` the process's CPU seconds (all threads, LanceDB's workers included — what a
    busy machine does not inflate; the full-text leg's overlaps the encoder's or the dense leg's when it ran
    beside them)."""
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
store ranks 15) takes 60 dense and 30 full-text candidates. The smallest share that lost no hit@5 / hit@10 on the
distilled LoCoMo and MemoryBank stores (bench/memory_e2e.py `--fulltext-shares`); 0.25 lost some."""


def ranked(table: Any, embed_query: Any, query: str, where: str | None, limit: int, mode: SearchMode, *, ann: int,
           weights: Weights) -> tuple[list[Scored], dict[str, StoredMemory]]:
    """The best `limit` candidates scored, with their rows (rows deleted meanwhile are missing); `table` is the
    async handle (`aio.AsyncTwin`), `ann` the partitions to probe in its ANN index (0: it has none,
    `indexes.AnnProbes`).

    Per query: the full-text leg (started before the model embeds the query), the dense leg, one fusion on
    estimated cosines, a positional read of the vectors and packed rows of the top `RESCORE x limit` rows whose
    cosine is not exact yet, the final ranking, then (only for final rows that read did not bring) a positional
    read of the packed rows. Estimated, because neither leg reads a vector: the dense leg's distances come from
    the ANN index's codes once the table has one (exact below `ann_min_rows`, and then not read again),
    and a row only full text found is given the lowest cosine of the dense pool — an upper bound, since the
    dense leg would have returned it otherwise — so it is never ranked out before its exact cosine is known.
    With the ANN index the legs return row addresses and importance only (no `id`: a string column read row by
    row cost ~2 ms of a 100 k-row leg); every candidate that can make the cut is then read by address, and
    its id comes with its packed row. Reading vectors inside the legs (LanceDB's `refine_factor`, or the vector
    column in the full-text leg) cost ~3x the rest of the query at 100 k rows; a LanceDB take costs per column
    (~0.25 ms each at 1 M rows), hence one packed column for the 22 display ones (bench/search.py,
    docs/design/memory-search-scale.md). A compaction between the legs and that read moves rows: the query
    then runs once more on the new version.
    """
    for attempt in (1, 2):
        marks = [_now()]
        qvec, found, fulltext, waited = _legs(table, embed_query, query, where, mode, limit, ann=ann, marks=marks)
        estimated = found.keys(found.scored(found.cosine, weights)[: limit * RESCORE])
        marks.append(_now())
        # Exact cosines before the final cut, read only where missing: a dense candidate already has its exact one
        # when the leg searched without the ANN index; a full-text-only row (bounded) and the index's
        # estimates get theirs from their vectors — read with the rows' packed display columns in the same take
        # (one take less: with the ANN index every final row is among them).
        unsure = [k for k in estimated if ann or k not in found.dense]
        exact, read = aio.run(take_rescored(table, unsure, qvec))
        if len(exact) == len(unsure) or attempt == 2:
            break
    found.cosine.update(exact)
    found.ids.update((k, row["id"]) for k, row in read.items())
    marks.append(_now())
    keep = [k for k in estimated if k in found.ids]
    # Only the re-scored rows can make the cut, so only they are scored again — with the best full-text row,
    # whose BM25 normalises everyone's (`fuse`): the same ranking from ~40 candidates instead of ~150.
    best_text = [k for k, (_, rank) in found.bm25.items() if rank == 1]
    rescored = found.scored({k: found.cosine[k] for k in [*keep, *best_text]}, weights)
    kept = {found.ids[k] for k in keep}
    final = [s for s in rescored if s.id in kept][:limit]
    marks.append(_now())
    rows = _final_rows(table, final, {found.ids[k]: row for k, row in read.items()}, found.address_of())
    marks.append(_now())
    _costs(marks, fulltext, waited)
    return final, rows


def _legs(table: Any, embed_query: Any, query: str, where: str | None, mode: SearchMode, limit: int, *, ann: int,
          marks: list[tuple[float, float]]) -> tuple[np.ndarray, _Candidates, tuple[float, float], tuple[float, float]]:
    """The query vector, both legs' candidates, the full-text leg's own (wall, CPU) seconds and how long it was
    waited for after the dense leg; a clock mark after the encoder, the dense leg and both legs."""
    pool = max(limit * 4, 40)  # dense candidates; importance can promote rows below the top `limit`
    tokens = tokenize(query) if mode == "hybrid" else []
    # Without the ANN index the legs bring ids too: every final row's id is known without a read by address.
    columns = ["importance"] if ann else ["id", "importance"]
    # Full text needs no query vector: it runs (on LanceDB's threads, without the GIL) while the model embeds the
    # query. Always, also on a saturated machine: at load 8-16 on 2 cores, 150 fresh queries at 100 k rows, p95
    # 40 ms wall vs 50 ms started beside the dense leg, CPU alike (a Python thread, as before, lost there).
    fts = None
    if tokens:
        fts = aio.submit(_timed(fts_query(table, tokens, where, max(1, round(pool * FULLTEXT_SHARE)), columns)))
    # Nor does the filter's row count (which path the dense leg takes, `dense_query`): counted meanwhile and
    # remembered, the dense leg finds it. At 100 k rows the exact search of one subject's rows costs what the IVF_RQ
    # probe of every partition costs, so the count (~0.7 ms CPU) in the leg made a scoped search the slower one.
    counted = aio.submit(matching_rows(table, where)) if ann and where else None
    qvec = embed_query(query)
    marks.append(_now())
    if counted is not None:
        counted.result()
    dense, done = aio.run(_done(dense_query(table, qvec, where, pool, ann=ann, columns=columns)))
    fts_found, fulltext = fts.result() if fts is not None else (None, (0.0, 0.0))
    marks += [done, _now()]
    waited = (0.0, 0.0) if fts is None else tuple(b - a for a, b in zip(*marks[-2:], strict=True))
    return qvec, _Candidates.of(dense, fts_found, pool), fulltext, waited  # type: ignore[return-value]


async def _done(query: Any) -> tuple[pa.Table, tuple[float, float]]:
    """A leg's rows, and the clock when they were in."""
    found = await (await query).to_arrow()
    return found, _now()


async def _timed(query: Any) -> tuple[pa.Table, tuple[float, float]]:
    """A leg's rows, and its own (wall, CPU) seconds."""
    start = _now()
    found, end = await _done(query)
    return found, (end[0] - start[0], end[1] - start[1])


@dataclass
class _Candidates:
    """Both legs' candidates by row address: cosine (estimated until re-scored), importance, BM25 score and rank
    (full-text rows only), which of them the dense leg found, and the ids known so far."""

    cosine: dict[int, float]
    importance: dict[int, Any]
    bm25: dict[int, tuple[float, int]]
    dense: set[int]
    ids: dict[int, str]

    @classmethod
    def of(cls, dense: pa.Table, fts: pa.Table | None, pool: int) -> _Candidates:
        keys = dense.column("_rowid").to_pylist()
        cosine = dict(zip(keys, (1.0 - dense["_distance"].to_numpy()).tolist(), strict=True))
        importance = dict(zip(keys, dense.column("importance").to_pylist(), strict=True))
        ids = _ids(dense)
        bm25: dict[int, tuple[float, int]] = {}
        if fts is not None and fts.num_rows:
            bound = min(cosine.values()) if len(cosine) >= pool else 1.0
            columns = (fts.column(c).to_pylist() for c in ("_rowid", "_score", "importance"))
            for rank, (key, score, imp) in enumerate(zip(*columns, strict=True), start=1):
                bm25[key] = (float(score), rank)
                cosine.setdefault(key, bound)
                importance.setdefault(key, imp)
            ids.update(_ids(fts))
        return cls(cosine, importance, bm25, set(keys), ids)

    def name(self, key: int) -> str:
        """The candidate's id, or a stand-in (`@` + its address) until its row is read."""
        return self.ids.get(key) or f"@{key}"

    def keys(self, scored: list[Scored]) -> list[int]:
        """The addresses of these scored candidates."""
        by_name = {self.name(k): k for k in self.cosine}
        return [by_name[s.id] for s in scored]

    def address_of(self) -> dict[str, int]:
        return {i: k for k, i in self.ids.items()}

    def scored(self, cosine: dict[int, float], weights: Weights) -> list[Scored]:
        """These candidates (with these cosines) fused and ranked."""
        bm25 = self.bm25
        candidates = [Candidate(id=self.name(k), cosine=float(c), importance=float(self.importance[k] or 0.0),
                                bm25=bm25[k][0] if k in bm25 else None, fts_rank=bm25[k][1] if k in bm25 else None)
                      for k, c in cosine.items()]
        return fuse(candidates, semantic_weight=weights.semantic, importance_weight=weights.importance,
                    fulltext_weight=weights.fulltext, rule=weights.rule)


def _ids(found: pa.Table) -> dict[int, str]:
    """Address -> id of a leg's rows, when the leg read ids."""
    if "id" not in found.column_names:
        return {}
    return dict(zip(found.column("_rowid").to_pylist(), found.column("id").to_pylist(), strict=True))


def _final_rows(table: Any, final: list[Scored], packed: dict[str, Any], row_of: dict[str, int]
                ) -> dict[str, StoredMemory]:
    """The final rows: unpacked from the re-scoring take, the others (exact dense rows below `ann_min_rows`, rows
    written before schema 5) read now — by address, by id where the addresses went stale."""
    rows = {s.id: StoredMemory.from_row(packed[s.id]) for s in final if s.id in packed}
    rest = [s.id for s in final if s.id not in rows]
    if rest:
        rows.update(aio.run(take_rows(table, [row_of[i] for i in rest])))
        if missing := [i for i in rest if i not in rows]:
            rows.update(aio.run(rows_by_id(table, missing)))
    return rows


def hits(scored: list[Scored], rows: dict[str, StoredMemory]) -> list[SearchHit]:
    """Scored candidates with their rows, in rank order (rows deleted meanwhile are skipped)."""
    return [SearchHit(**vars(rows[s.id]), score=s.score, semantic=s.semantic, cosine=s.cosine, bm25=s.bm25,
                      fts_rank=s.fts_rank) for s in scored if s.id in rows]


FLAT_FILTERED_ROWS = 2_000
"""A prefilter matching at most this many rows is searched exactly, without the ANN index (see `dense_query`).
Measured at 1 M rows (CPU per query): exact over one subject's 100 rows 8.5 ms vs 29.6 ms through the index;
exact over 17,500 rows 220 ms vs 48 ms — LanceDB reads the matching vectors row by row (~12 us each), so
beyond ~2,000 rows the index is cheaper, and that many matches fill the pool from the probed partitions."""
_COUNTS_KEPT = 1_024
_counts: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[int, str], int]] = weakref.WeakKeyDictionary()
_counts_lock = threading.Lock()


async def matching_rows(table: Any, where: str) -> int:
    """Rows `where` matches, remembered per table version: counting a broad filter costs ~12-25 ms CPU at 1 M rows
    (a narrow one ~1 ms), and an agent repeats its filters — the same person, the same "not superseded"."""
    key = (await table.version(), where)
    with _counts_lock:
        cache = _counts.setdefault(table, OrderedDict())
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    n = await table.count_rows(where)
    with _counts_lock:
        cache[key] = n
        while len(cache) > _COUNTS_KEPT:
            cache.popitem(last=False)
    return n


async def dense_query(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: int,
                      columns: list[str]) -> Any:
    """The dense leg's LanceDB query (tests read its plan): up to `pool` nearest rows under the prefilter
    `where` — these columns, row address, estimated cosine distance.

    With a filter the ANN index is a poor fit: it searches `ann` partitions and masks out the rows the
    filter rejects, so a narrow filter — one person of 10,000, ~100 rows of a million, spread over every
    partition — found a few rows from the probed partitions and missed the rest. A filter the scalar indexes
    narrow to at most `FLAT_FILTERED_ROWS` rows is therefore searched exactly over just those rows (counting
    them is one more scalar-index lookup, remembered per table version); a broader one probes at least
    `ann` partitions and more while it has found fewer than `pool` rows.
    """
    query = table.vector_search(qvec).distance_type("cosine").select([*columns, "_distance"]).with_row_id()
    if ann and where and await matching_rows(table, where) <= FLAT_FILTERED_ROWS:
        query = query.bypass_vector_index()
    elif ann and where:  # no refine_factor: `ranked` re-scores its top candidates on their full vectors itself
        query = query.maximum_nprobes(0).minimum_nprobes(ann)  # 0: no maximum
    elif ann:
        query = query.nprobes(ann)
    if where:
        query = query.where(where)  # a prefilter
    return query.limit(pool)


async def fts_query(table: Any, tokens: list[str], where: str | None, pool: int, columns: list[str]) -> Any:
    """The full-text leg's LanceDB query (tests read its plan)."""
    from lancedb.query import MatchQuery

    query = table.query().nearest_to_text(MatchQuery(" ".join(tokens), "fts_text"))
    query = query.select([*columns, "_score"]).with_row_id()
    if where:
        query = query.where(where)  # a prefilter
    return query.limit(pool)


_STALE = (OSError, ValueError, RuntimeError)
"""What a take raises when a concurrent compaction invalidated its row addresses."""


async def take_rows(table: Any, row_ids: list[int]) -> dict[str, StoredMemory]:
    """Rows by their addresses from this version's legs: one positional read, no index lookup (~1.5 ms less than
    by id), of the one `PACKED` column — LanceDB's take costs per column (at 1 M rows, 20 rows of the 22
    display columns: 13.0 ms CPU, 6.9 ms for a single row; of the packed column: 2.2 ms). Rows written
    before schema 5 (packed null) are read from their columns. Empty when a concurrent compaction invalidated
    the addresses (or the table has no `PACKED` column: the caller then reads by id)."""
    if not row_ids:
        return {}
    try:
        data = await table.take_row_ids(row_ids).select([PACKED]).with_row_id().to_arrow()
    except _STALE:
        return {}
    packed = dict(zip(data.column("_rowid").to_pylist(), data.column(PACKED).to_pylist(), strict=True))
    rows = {k: unpack_row(text) for k, text in packed.items() if text}
    rows.update(await take_columns(table, [k for k, text in packed.items() if not text]))
    return {row["id"]: StoredMemory.from_row(row) for row in rows.values()}


async def take_columns(table: Any, row_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Rows by address from the display columns themselves (rows written before schema 5), by address."""
    if not row_ids:
        return {}
    try:
        data = await table.take_row_ids(row_ids).select(ROW_COLUMNS).with_row_id().to_arrow()
    except _STALE:
        return {}
    return dict(zip(data.column("_rowid").to_pylist(), data.select(ROW_COLUMNS).to_pylist(), strict=True))


async def rows_by_id(table: Any, ids: list[str]) -> dict[str, StoredMemory]:
    """`take_rows` by id (slower: an index lookup), for when addresses went stale."""
    query = table.query().where(f"id IN ({sql_list(ids)})").select(ROW_COLUMNS).limit(len(ids))
    return {row["id"]: StoredMemory.from_row(row) for row in (await query.to_arrow()).to_pylist()}


async def take_rescored(table: Any, row_ids: list[int],
                        qvec: np.ndarray) -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
    """Exact cosine with `qvec` of the rows at these addresses and their rows (unpacked from `PACKED`, or read
    from their columns for a row written before schema 5), by address, in one take of the vector and `PACKED`
    columns; an address a compaction invalidated is left out, so the answer comes back short. The take returns
    rows in address order, matched by their `_rowid`, which costs nothing (the `id` column was a third of a
    40-row vector read: 1.8 vs 2.9 ms CPU)."""
    if not row_ids:
        return {}, {}
    try:
        data = await table.take_row_ids(row_ids).select(["vector", PACKED]).with_row_id().to_arrow()
    except _STALE:
        return {}, {}
    keys = data.column("_rowid").to_pylist()
    exact = dict(zip(keys, (vectors(data) @ qvec).tolist() if data.num_rows else [], strict=True))
    packed = dict(zip(keys, data.column(PACKED).to_pylist(), strict=True))
    rows = {k: unpack_row(text) for k, text in packed.items() if text}
    rows.update(await take_columns(table, [k for k, text in packed.items() if not text]))
    return {k: c for k, c in exact.items() if k in rows}, rows


def nearest(table: Any, matrix: np.ndarray, k: int, *, ann: int) -> list[list[tuple[str, float]]]:
    """Per query vector, up to `k` (id, cosine) of the closest rows, best first (one multi-vector query)."""
    out: list[list[tuple[str, float]]] = [[] for _ in range(len(matrix))]
    if len(matrix) == 0 or table.count_rows() == 0:
        return out
    for start in range(0, len(matrix), 256):  # one multi-vector query per 256 items
        part = matrix[start : start + 256]
        query = table.search(part, vector_column_name="vector").distance_type("cosine")
        query = query.select(["id", "_distance"])
        if ann:
            query = query.nprobes(ann).refine_factor(ANN_REFINE_FACTOR)
        result = query.limit(k).to_arrow()
        qidx = result.column("query_index").to_pylist() if len(part) > 1 else [0] * result.num_rows
        ids, distances = result.column("id").to_pylist(), result.column("_distance").to_pylist()
        for q, row_id, dist in zip(qidx, ids, distances, strict=True):
            out[start + q].append((row_id, 1.0 - float(dist)))
    for found in out:
        found.sort(key=lambda x: -x[1])
    return out
