"""The vector memory: a LanceDB table `memories` with dedup-on-write upserts and hybrid search.

Writes are serialised across processes by `<lance folder>/memories.lock` (local folders) or a claim in the
catalog database (object stores, any host; see storage/lance.py) and each `upsert` lands as ONE
`merge_insert` commit, so a killed run never leaves half a batch visible. Embedding happens before the
lock is taken, as with DuckDB's write windows.

Typical use (the distillation flow)::

    store = MemoryStore(settings)                       # embedder = get_embedder(settings)
    events = store.upsert(memories, created=run_started, flow_run_id=str(run_id))
    hits = store.search("用户的作息习惯", tags=["偏好"], min_importance=0.5, limit=5)

Changing `EMBEDDING_MODEL` makes the next `MemoryStore(...)` raise `EmbeddingModelMismatch`; then
`MemoryStore(settings, allow_model_mismatch=True).reindex()` re-embeds everything with the new model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import FTS, Bitmap, BTree, IvfSq, LabelList
from lancedb.query import MatchQuery

from chronicle.memory.embedder import Embedder, get_embedder
from chronicle.memory.model import Memory
from chronicle.memory.search import Candidate, fts_text, fuse, tokenize
from chronicle.settings import Settings
from storage.lance import WriteLock, open_lance
from storage.memory_schema import (
    META_DIM,
    META_MODEL,
    ROW_COLUMNS,
    TABLE,
    MemoryEvent,
    SearchHit,
    StoredMemory,
    memory_schema,
    utc,
)

log = logging.getLogger("chronicle.storage.memory")

SearchMode = Literal["hybrid", "dense"]
_SCALAR_INDEXES: tuple[tuple[str, Any], ...] = (
    ("id", BTree),
    ("content_hash", BTree),
    ("importance", BTree),
    ("target_file", Bitmap),
    ("tags", LabelList),
    ("merged_hashes", LabelList),
)
_IN_CHUNK = 500  # ids/hashes per `IN (...)` filter: keeps the SQL small
# ANN query knobs (only used once the IVF_SQ index exists): partitions probed, and how many times
# `limit` candidates are re-ranked on the full float32 vectors (restores exact order among them).
ANN_NPROBES = 20
ANN_REFINE_FACTOR = 2
# Write-side housekeeping thresholds (see `MemoryStore._after_write`).
OPTIMIZE_UNINDEXED_ROWS = 1_000
OPTIMIZE_SMALL_FRAGMENTS = 16


class EmbeddingModelMismatch(RuntimeError):
    """The table's vectors were made by another embedding model (or dimension) than the configured one."""


def embedding_text(memory: Memory | StoredMemory) -> str:
    """What gets embedded for a memory (reindex must use the same rule)."""
    return memory.content


@dataclass
class _Pending:
    """A row to write in this upsert (new, or an existing row being merged into)."""

    row: dict[str, Any]
    vector: np.ndarray
    is_new: bool


class MemoryStore:
    """Typed, synchronous access to the `memories` table. Cheap to construct once the embedder is warm."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        allow_model_mismatch: bool = False,
    ) -> None:
        self.settings = settings
        self.embedder = embedder if embedder is not None else get_embedder(settings)
        # Folder or object store, and the lock writers take: storage/lance.py (both topologies).
        handle = open_lance(settings, TABLE)
        self.uri, self._db = handle.uri, handle.db
        self._lock: WriteLock | None = handle.lock
        self._thread_lock = threading.RLock()
        self._ann_cache: tuple[int, bool] | None = None
        self._table: Any = self._open()
        self._mismatch: str | None = None
        if self._table is not None:
            self._mismatch = self._check_model(self._table)
            if self._mismatch and not allow_model_mismatch:
                raise EmbeddingModelMismatch(self._mismatch)

    # --- metadata ---------------------------------------------------------------------------
    def recorded_model(self) -> tuple[str, int] | None:
        """`(model name, dimension)` the stored vectors were made with; None before the first write."""
        if self._table is None:
            return None
        meta = self._table.schema.metadata or {}
        return meta.get(META_MODEL.encode(), b"").decode(), int(meta.get(META_DIM.encode(), b"0"))

    def _check_model(self, table: Any) -> str | None:
        meta = table.schema.metadata or {}
        model = meta.get(META_MODEL.encode(), b"").decode()
        dim = int(meta.get(META_DIM.encode(), b"0"))
        # Compare names first: a remote embedder only learns its dimension by calling the endpoint.
        if model == self.embedder.model_name and dim == self.embedder.dim:
            return None
        return (
            f"the memory table at {self.uri} holds {dim}-d vectors from embedding model {model!r}, but the "
            f"configured model is {self.embedder.model_name!r}; run `chronicle memory reindex` to re-embed "
            f"all memories with the new model (or set EMBEDDING_MODEL back to {model!r})"
        )

    def _open(self) -> Any:
        try:
            return self._db.open_table(TABLE)
        except ValueError:  # "Table 'memories' was not found"
            return None

    def _readable(self) -> Any:
        """The table for reads, None if nothing was ever written; refuses vectors of another model."""
        if self._table is None:
            self._table = self._open()
            if self._table is not None:
                self._mismatch = self._check_model(self._table)
        if self._mismatch:
            raise EmbeddingModelMismatch(self._mismatch)
        return self._table

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._thread_lock:
            if self._lock is None:
                yield
                return
            with self._lock.acquire(timeout=self.settings.db_lock_timeout_s):
                yield

    def _writable(self) -> Any:
        """The table for writes (created on first use, recorded with the current model); call under `_writing`."""
        table = self._readable()
        if table is None:
            schema = memory_schema(self.embedder.model_name, self.embedder.dim)
            table = self._db.create_table(TABLE, schema=schema, exist_ok=True)
            self._table = table
            self._mismatch = self._check_model(table)  # another process may have won the race
            if self._mismatch:
                raise EmbeddingModelMismatch(self._mismatch)
        return table

    # --- writes -----------------------------------------------------------------------------
    def upsert(
        self, memories: Sequence[Memory], *, created: datetime, flow_run_id: str | None = None
    ) -> list[MemoryEvent]:
        """Add, merge or skip each memory (one event per input, input order) in one atomic commit.

        Exact duplicate (same `content_hash` stored, merged earlier, or earlier in this batch) -> NOOP.
        Near duplicate (cosine >= `dedup_threshold` to a stored row or an earlier item of the batch) ->
        UPDATE that row: tags/key_info/sources/source_entry_ids merged, max importance, summary replaced
        only by a more important memory, `updated` set. Otherwise ADD with id `memory.memory_id(created)`.
        """
        if not memories:
            return []
        hashes = [m.content_hash for m in memories]
        first_at: dict[str, int] = {}
        for i, h in enumerate(hashes):
            first_at.setdefault(h, i)
        first = sorted(first_at.values())  # one embedding per distinct content
        # Skip the embedding cost for what is stored already (a rerun of the same notes is then cheap).
        known = self._known_hashes(set(hashes))
        vectors = self._embed_items(memories, [i for i in first if hashes[i] not in known], {})

        now = datetime.now(UTC)
        with self._writing():
            table = self._writable()
            known = self._known_hashes(set(hashes))  # again: another writer may have committed meanwhile
            need = [i for i in first if hashes[i] not in known]
            vectors = self._embed_items(memories, need, vectors)  # only rows deleted meanwhile: rare
            nearest = dict(zip(need, self._nearest_stored(table, [vectors[i] for i in need]), strict=True))
            events: list[MemoryEvent] = []
            pending: dict[str, _Pending] = {}
            batch_hashes: dict[str, str] = {}  # hash -> row id, for in-batch exact duplicates
            for i, memory in enumerate(memories):
                h = hashes[i]
                if h in known or h in batch_hashes:
                    row_id = known.get(h) or batch_hashes[h]
                    why = "exact duplicate of a stored memory" if h in known else "exact duplicate within the batch"
                    events.append(MemoryEvent("NOOP", row_id, h, memory.target_file, 1.0, why))
                    continue
                vector = vectors[i]
                stored_id, stored_sim = nearest[i]
                batch_id, batch_sim = _nearest_pending(pending, vector)
                # An in-batch match wins ties: it may already carry this batch's merges of a stored row.
                use_batch = batch_id is not None and batch_sim >= stored_sim
                match_id, sim = (batch_id, batch_sim) if use_batch else (stored_id, stored_sim)
                if match_id is not None and sim >= self.settings.dedup_threshold:
                    target = pending.get(match_id)
                    if target is None:
                        target = self._load_pending(table, match_id)
                        pending[match_id] = target
                    _merge(target.row, memory, h, now, flow_run_id)
                    batch_hashes[h] = match_id
                    where = "an earlier memory of this batch" if use_batch and target.is_new else "a stored memory"
                    events.append(
                        MemoryEvent("UPDATE", match_id, h, memory.target_file, sim, f"near-duplicate of {where}")
                    )
                    continue
                row_id = memory.memory_id(created)
                pending[row_id] = _Pending(_new_row(memory, row_id, h, created, flow_run_id), vector, True)
                batch_hashes[h] = row_id
                events.append(
                    MemoryEvent(
                        "ADD", row_id, h, memory.target_file, sim if match_id is not None else None, "new memory"
                    )
                )
            if pending:
                data = _to_arrow(list(pending.values()), table.schema)
                table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
                self._after_write(table)
        return events

    def delete(self, ids: Sequence[str]) -> int:
        """Remove rows by id; returns how many existed."""
        table = self._readable()
        if table is None or not ids:
            return 0
        with self._writing():
            removed = 0
            for chunk in _chunks(list(ids), _IN_CHUNK):
                where = f"id IN ({_sql_list(chunk)})"
                removed += table.count_rows(where)
                table.delete(where)
            self._after_write(table)
            return removed

    def reindex(self, new_embedder: Embedder | None = None) -> int:
        """Re-embed every row with `new_embedder` (default: the configured one) and swap atomically.

        The new vectors and the new model name/dimension land in one overwrite commit of `memories`, so
        readers see either the old table or the new one. Returns the number of rows re-embedded.
        """
        embedder = new_embedder or self.embedder
        table = self._table if self._table is not None else self._open()
        if table is None:
            self.embedder, self._mismatch = embedder, None
            return 0
        # Embed outside the write lock; rows that appear or change meanwhile are caught up under it.
        snapshot = _all_rows(table, ["id", "content", "content_hash"])
        done = _embed_rows(embedder, snapshot)
        with self._writing():
            rows = _all_rows(table, ROW_COLUMNS)
            missing = rows.filter(pc.invert(pc.is_in(_row_keys(rows), value_set=pa.array(list(done), pa.string()))))
            done.update(_embed_rows(embedder, missing))
            schema = memory_schema(embedder.model_name, embedder.dim)
            keys = _row_keys(rows).to_pylist()
            matrix = np.stack([done[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)
            data = rows.append_column("vector", _vector_array(matrix, embedder.dim)).select(schema.names).cast(schema)
            self._table = self._db.create_table(TABLE, data, schema=schema, mode="overwrite")
            self.embedder, self._mismatch = embedder, None
            self.ensure_indexes()
        return len(keys)

    # --- reads ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        tags: list[str] | None = None,
        min_importance: float | None = None,
        target_file: str | None = None,
        limit: int = 10,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """Best memories for `query`, scored per `chronicle.memory.search.fuse`, filters applied before ranking.

        `tags` matches rows having ANY of the tags. `mode="dense"` skips full text (semantic = cosine).
        """
        table = self._readable()
        if table is None or limit <= 0 or not query.strip():
            return []
        where = build_where(tags=tags, min_importance=min_importance, target_file=target_file)
        pool = max(limit * 4, 40)  # candidates per leg; importance can promote rows below the top `limit`
        tokens = tokenize(query) if mode == "hybrid" else []
        # Full text needs no query vector: run it on another thread while the model embeds the query
        # (LanceDB releases the GIL), which hides most of its cost.
        fts_future = _search_pool().submit(_fts_leg, table, tokens, where, pool) if tokens else None
        qvec = self.embedder.embed([query])[0]
        legs = [_dense_leg(table, qvec, where, pool, ann=self._has_ann(table))]
        if fts_future is not None:
            legs.append(fts_future.result())

        # Legs return ids, importance and scores only; full rows are fetched for the final `limit` (taking
        # every column of ~80 candidates cost more than one extra indexed `id IN (...)` read).
        dense, fts = legs[0], legs[1] if len(legs) > 1 else None
        dense_ids = dense.column("id").to_pylist()
        cosine = dict(zip(dense_ids, (1.0 - dense["_distance"].to_numpy()).tolist(), strict=True))
        importance = dict(zip(dense_ids, dense.column("importance").to_pylist(), strict=True))
        row_ids = dict(zip(dense_ids, dense.column("_rowid").to_pylist(), strict=True))
        bm25: dict[str, tuple[float, int]] = {}
        if fts is not None and fts.num_rows:
            fts_ids = fts.column("id").to_pylist()
            fts_cos = (_vectors(fts) @ qvec).tolist()  # exact cosine for rows only full text found
            for rank, (row_id, score, cos, imp, addr) in enumerate(
                zip(
                    fts_ids,
                    fts["_score"].to_pylist(),
                    fts_cos,
                    fts["importance"].to_pylist(),
                    fts["_rowid"].to_pylist(),
                    strict=True,
                ),
                start=1,
            ):
                bm25[row_id] = (float(score), rank)
                cosine.setdefault(row_id, cos)
                importance.setdefault(row_id, imp)
                row_ids.setdefault(row_id, addr)
        if not cosine:
            return []
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
            semantic_weight=self.settings.search_semantic_weight,
            importance_weight=self.settings.search_importance_weight,
            fulltext_weight=self.settings.search_fulltext_weight,
        )[:limit]
        rows = _take_rows(table, [row_ids[s.id] for s in scored])
        missing = [s.id for s in scored if s.id not in rows]
        if missing:  # a compaction between the legs and the take moved rows: look them up by id instead
            rows.update((m.id, m) for m in self.get(missing))
        return [
            SearchHit(
                **vars(rows[s.id]),
                score=s.score,
                semantic=s.semantic,
                cosine=s.cosine,
                bm25=s.bm25,
                fts_rank=s.fts_rank,
            )
            for s in scored
            if s.id in rows  # deleted between the legs and the fetch
        ]

    def list(
        self, limit: int = 50, offset: int = 0, tags: list[str] | None = None, target_file: str | None = None
    ) -> list[StoredMemory]:
        """Memories newest first (`created` desc, then id), optionally filtered."""
        table = self._readable()
        if table is None:
            return []
        where = build_where(tags=tags, target_file=target_file)
        data = _all_rows(table, ROW_COLUMNS, where)
        data = data.sort_by([("created", "descending"), ("id", "ascending")]).slice(offset, limit)
        return [StoredMemory.from_row(r) for r in data.to_pylist()]

    def get(self, ids: Sequence[str]) -> list[StoredMemory]:
        """The rows with these ids, in the given order (unknown ids are skipped)."""
        table = self._readable()
        if table is None or not ids:
            return []
        found: dict[str, StoredMemory] = {}
        for chunk in _chunks(list(dict.fromkeys(ids)), _IN_CHUNK):
            # ids are unique, so `limit(len(chunk))` is exact and saves a count query (search calls this).
            query = table.search().where(f"id IN ({_sql_list(chunk)})").select(ROW_COLUMNS).limit(len(chunk))
            for row in query.to_arrow().to_pylist():
                found[row["id"]] = StoredMemory.from_row(row)
        return [found[i] for i in ids if i in found]

    def tags(self) -> dict[str, int]:
        """Tag -> number of memories carrying it, most used first."""
        table = self._readable()
        if table is None:
            return {}
        flat = pc.list_flatten(_all_rows(table, ["tags"]).column("tags"))
        if len(flat) == 0:
            return {}
        counts = pc.value_counts(flat).to_pylist()
        return {c["values"]: c["counts"] for c in sorted(counts, key=lambda c: (-c["counts"], c["values"]))}

    def count(self) -> int:
        table = self._readable()
        return 0 if table is None else int(table.count_rows())

    # --- indexes ----------------------------------------------------------------------------
    def ensure_indexes(self) -> list[str]:
        """Create missing indexes; returns the names of those created.

        Scalar indexes make the `where` prefilters and the dedup lookups cheap; the FTS index is what
        full text searches; the ANN index only pays off on big tables (below `ann_min_rows` an exact scan
        is fast and exact), so it is created once the table reaches that size.
        """
        table = self._table
        if table is None:
            return []
        rows = table.count_rows()
        if rows == 0:
            return []
        have = {tuple(ix.columns) for ix in table.list_indices()}
        created = []
        for column, config in _SCALAR_INDEXES:
            if (column,) not in have:
                table.create_index(column, config=config(), replace=True)
                created.append(column)
        if ("fts_text",) not in have:
            # Text is pre-tokenised (jieba for Chinese), so split on whitespace only; stemming and English
            # stop words still apply to English tokens.
            table.create_index("fts_text", config=FTS(base_tokenizer="whitespace", with_position=False))
            created.append("fts_text")
        if ("vector",) not in have and rows >= self.settings.ann_min_rows:
            # IVF partitions of 8-bit scalar-quantised vectors, re-ranked on the full vectors (refine_factor).
            # Measured at 100 k x 384 (bench/search.py, random unit vectors = the hardest case for ANN):
            # IVF_SQ 3 s to build, ~6 ms/query, recall@10 1.00 with refine; IVF_HNSW_SQ 77 s, 0.38;
            # IVF_PQ 39 s, 0.36. Exact search was ~120 ms per query at that size.
            table.create_index("vector", config=IvfSq(distance_type="cosine"))
            created.append("vector")
        if created:
            log.info("memory table: created indexes %s", ", ".join(created))
        return created

    def optimize(self) -> None:
        """Compact small fragments and fold all new rows into the existing indexes now (incremental)."""
        if self._table is not None:
            with self._writing():
                self._table.optimize()

    def _after_write(self, table: Any) -> None:
        """Create missing indexes; fold new rows into them once enough have piled up.

        `optimize()` rewrites index segments and compacts fragments (~0.3 s even for a handful of rows),
        which dominated small upserts. Rows not yet in an index are still found — LanceDB scans them
        flat alongside the index — so folding them in is only a matter of speed, done in bulk.
        """
        if self.ensure_indexes():
            return
        unindexed = max((ix.num_unindexed_rows or 0 for ix in table.list_indices()), default=0)
        small_fragments = table.stats()["fragment_stats"]["num_small_fragments"]
        if unindexed >= OPTIMIZE_UNINDEXED_ROWS or small_fragments >= OPTIMIZE_SMALL_FRAGMENTS:
            table.optimize()

    def _has_ann(self, table: Any) -> bool:
        """Whether the vector column has an ANN index (cached per table version: listing indexes costs more)."""
        version = table.version
        if self._ann_cache is None or self._ann_cache[0] != version:
            self._ann_cache = (version, any(tuple(ix.columns) == ("vector",) for ix in table.list_indices()))
        return self._ann_cache[1]

    # --- upsert helpers ---------------------------------------------------------------------
    def _known_hashes(self, hashes: set[str]) -> dict[str, str]:
        """content hash -> id of the row holding (or having absorbed) that content."""
        table = self._readable()
        if table is None or not hashes:
            return {}
        out: dict[str, str] = {}
        for chunk in _chunks(sorted(hashes), _IN_CHUNK):
            where = f"array_has_any(merged_hashes, [{_sql_list(chunk)}])"
            for row in _all_rows(table, ["id", "merged_hashes"], where).to_pylist():
                for h in row["merged_hashes"] or []:
                    if h in hashes:
                        out.setdefault(h, row["id"])
        return out

    def _nearest_stored(self, table: Any, vectors: list[np.ndarray]) -> list[tuple[str | None, float]]:
        """(id, cosine) of the closest stored row per vector; (None, -1) on an empty table."""
        if not vectors:
            return []
        if table.count_rows() == 0:
            return [(None, -1.0)] * len(vectors)
        out: list[tuple[str | None, float]] = [(None, -1.0)] * len(vectors)
        for start in range(0, len(vectors), 256):  # one multi-vector query per 256 items
            matrix = np.stack(vectors[start : start + 256])
            query = table.search(matrix, vector_column_name="vector").distance_type("cosine")
            query = query.select(["id", "_distance"])
            if self._has_ann(table):
                query = query.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE_FACTOR)
            result = query.limit(1).to_arrow()
            qidx = result.column("query_index").to_pylist() if len(matrix) > 1 else [0] * result.num_rows
            for q, row_id, dist in zip(
                qidx, result.column("id").to_pylist(), result.column("_distance").to_pylist(), strict=True
            ):
                out[start + q] = (row_id, 1.0 - float(dist))
        return out

    def _embed_items(
        self, memories: Sequence[Memory], indexes: list[int], have: dict[int, np.ndarray]
    ) -> dict[int, np.ndarray]:
        """`have` plus vectors for the `indexes` not in it yet."""
        todo = [i for i in indexes if i not in have]
        if not todo:
            return have
        fresh = self.embedder.embed([embedding_text(memories[i]) for i in todo])
        return have | dict(zip(todo, fresh, strict=True))

    def _load_pending(self, table: Any, row_id: str) -> _Pending:
        data = _all_rows(table, [*ROW_COLUMNS, "vector"], f"id = {_sql_str(row_id)}").to_pylist()[0]
        vector = np.asarray(data.pop("vector"), dtype=np.float32)
        return _Pending(data, vector, False)


# --- search legs ------------------------------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _search_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-fts")
        return _pool


def _dense_leg(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: bool) -> pa.Table:
    query = table.search(qvec, vector_column_name="vector").distance_type("cosine")
    query = query.select(["id", "importance", "_distance"]).with_row_id(True)
    if ann:
        query = query.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE_FACTOR)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool).to_arrow()


def _fts_leg(table: Any, tokens: list[str], where: str | None, pool: int) -> pa.Table:
    query = table.search(MatchQuery(" ".join(tokens), "fts_text"), query_type="fts")
    query = query.select(["id", "importance", "vector", "_score"]).with_row_id(True)
    if where:
        query = query.where(where, prefilter=True)
    return query.limit(pool).to_arrow()


def _take_rows(table: Any, row_ids: list[int]) -> dict[str, StoredMemory]:
    """Rows by their row ids from this version's legs: positional, no index lookup (~1.5 ms less than by id)."""
    if not row_ids:
        return {}
    try:
        data = table.take_row_ids(row_ids).select(ROW_COLUMNS).to_arrow()
    except (OSError, ValueError, RuntimeError):  # row ids invalidated by a concurrent compaction
        return {}
    return {row["id"]: StoredMemory.from_row(row) for row in data.to_pylist()}


# --- pure helpers -----------------------------------------------------------------------------
def build_where(
    *, tags: list[str] | None = None, min_importance: float | None = None, target_file: str | None = None
) -> str | None:
    """SQL prefilter for LanceDB (`tags` = any of; values are quoted, never interpolated raw)."""
    parts = []
    if tags:
        parts.append(f"array_has_any(tags, [{_sql_list(tags)}])")
    if min_importance is not None:
        parts.append(f"importance >= {float(min_importance)!r}")
    if target_file:
        parts.append(f"target_file = {_sql_str(target_file)}")
    return " AND ".join(parts) or None


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join(_sql_str(v) for v in values)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _all_rows(table: Any, columns: list[str], where: str | None = None) -> pa.Table:
    """Every matching row (no vector search, no default limit)."""
    n = table.count_rows(where) if where else table.count_rows()
    if n == 0:
        return table.search().select(columns).limit(1).to_arrow().slice(0, 0)
    query = table.search().select(columns)
    if where:
        query = query.where(where)
    return query.limit(n).to_arrow()


def _nearest_pending(pending: dict[str, _Pending], vector: np.ndarray) -> tuple[str | None, float]:
    if not pending:
        return None, -1.0
    ids = list(pending)
    sims = np.stack([pending[i].vector for i in ids]) @ vector
    best = int(np.argmax(sims))
    return ids[best], float(sims[best])


def _vectors(result: pa.Table) -> np.ndarray:
    """The `vector` column of a query result as a `(rows, dim)` float32 matrix (no Python floats)."""
    column = result.column("vector").combine_chunks()
    dim = column.type.list_size
    return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32, copy=False)


def _union(existing: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys([*existing, *new]))


def _split_sources(source: str) -> list[str]:
    return [s.strip() for s in source.split(",") if s.strip()]


def _new_row(memory: Memory, row_id: str, h: str, created: datetime, flow_run_id: str | None) -> dict[str, Any]:
    return {
        "id": row_id,
        "content": memory.content,
        "summary": memory.summary,
        "target_file": memory.target_file,
        "action": memory.action,
        "tags": list(memory.tags),
        "importance": float(memory.importance),
        "key_info": list(memory.key_info),
        "source": memory.source,
        "created": utc(created),
        "updated": None,
        "content_hash": h,
        "merged_hashes": [h],
        "language": memory.language,
        "source_entry_ids": list(memory.source_entry_ids),
        "fts_text": _row_fts_text(memory.content, memory.summary, memory.key_info, memory.tags),
        "flow_run_id": flow_run_id,
    }


def _merge(row: dict[str, Any], memory: Memory, h: str, now: datetime, flow_run_id: str | None) -> None:
    """Fold a near-duplicate into `row` (the stored content and vector stay as they are)."""
    if float(memory.importance) > float(row["importance"] or 0.0):
        row["summary"] = memory.summary  # the more important phrasing wins
        row["importance"] = float(memory.importance)
    row["tags"] = _union(row["tags"] or [], memory.tags)
    row["key_info"] = _union(row["key_info"] or [], memory.key_info)
    row["source_entry_ids"] = _union(row["source_entry_ids"] or [], memory.source_entry_ids)
    row["merged_hashes"] = _union(row["merged_hashes"] or [], [h])
    row["source"] = ", ".join(_union(_split_sources(row["source"] or ""), _split_sources(memory.source)))
    row["fts_text"] = _row_fts_text(row["content"], row["summary"], row["key_info"], row["tags"])
    row["updated"] = now
    if flow_run_id is not None:
        row["flow_run_id"] = flow_run_id


def _row_fts_text(content: str, summary: str, key_info: list[str], tags: list[str]) -> str:
    return fts_text(content, summary, *key_info, *tags)


def _vector_array(matrix: np.ndarray, dim: int) -> pa.FixedSizeListArray:
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1), type=pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def _to_arrow(pending: list[_Pending], schema: pa.Schema) -> pa.Table:
    dim = schema.field("vector").type.list_size
    columns = {name: [p.row[name] for p in pending] for name in ROW_COLUMNS}
    arrays = {name: pa.array(values, type=schema.field(name).type) for name, values in columns.items()}
    arrays["vector"] = _vector_array(np.stack([p.vector for p in pending]), dim)
    return pa.table([arrays[name] for name in schema.names], schema=schema)


def _row_keys(rows: pa.Table) -> pa.Array:
    """`id|content_hash`: a row needs re-embedding when either is new to the snapshot."""
    return pc.binary_join_element_wise(rows.column("id"), rows.column("content_hash"), "|")


def _embed_rows(embedder: Embedder, rows: pa.Table) -> dict[str, np.ndarray]:
    if rows.num_rows == 0:
        return {}
    texts = rows.column("content").to_pylist()
    return dict(zip(_row_keys(rows).to_pylist(), embedder.embed(texts), strict=True))
