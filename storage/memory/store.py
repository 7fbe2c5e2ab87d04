"""The vector memory: a LanceDB table `memories` with dedup-on-write upserts and hybrid search.

The store does I/O only; what a new memory does to the table (NOOP / UPDATE / ADD, what a merge keeps) is
`chronicle.memory.dedup.plan_upsert`. Writes are serialised across processes by `<lance folder>/memories.lock`
(local folders) or a claim in the catalog database (object stores; storage/lance.py), and each `upsert` lands
as ONE `merge_insert` commit, so a killed run never leaves half a batch visible; embedding happens before the
lock is taken, as with DuckDB's write windows. Search is `chronicle.storage.memory.search`, index upkeep
`chronicle.storage.memory.indexes`.

Typical use (the distillation flow)::

    store = MemoryStore(settings)                       # embedder = get_embedder(settings)
    events = store.upsert(memories, created=run_started, flow_run_id=str(run_id))
    hits = store.search("用户的作息习惯", tags=["偏好"], min_importance=0.5, limit=5)

Changing `EMBEDDING_MODEL` makes the next `MemoryStore(...)` raise `EmbeddingModelMismatch`; then
`MemoryStore(settings, allow_model_mismatch=True).reindex()` re-embeds everything with the new model.
A table of an older schema is upgraded in place (missing columns added as nulls) when first opened.
Only redacted text gets in (else `NotRedactedError`): memories via `chronicle.redaction.memories`, `gate` to embed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronicle.memory.dedup import DedupPolicy, Neighbour, UpsertPlan, dedup_key, key_of, plan_upsert
from chronicle.memory.embedder import Embedder, embed_redacted, get_embedder, query_vector
from chronicle.memory.model import Memory
from chronicle.memory.ranking import Tuning, rerank
from chronicle.memory.subjects import normalise_subject
from chronicle.param_checks import ActionNeeded
from chronicle.redaction.configured import redactor_for
from chronicle.redaction.memories import require_redacted_memory, text_gate
from chronicle.settings import Settings
from chronicle.storage.lance import open_async, open_lance
from chronicle.storage.memory import aio, indexes
from chronicle.storage.memory.arrow import (
    all_rows,
    build_where,
    chunks,
    current_rows_where,
    embed_rows,
    row_keys,
    sql_list,
    to_arrow,
    vectors,
    with_vectors,
)
from chronicle.storage.memory.schema import (
    META_DIM,
    META_MODEL,
    ROW_COLUMNS,
    TABLE,
    MemoryEvent,
    SearchHit,
    StoredMemory,
    memory_schema,
)
from chronicle.storage.memory.search import SearchMode, Weights, hits, nearest, ranked
from chronicle.storage.memory.updates import mark_superseded

__all__ = ["EmbeddingModelMismatch", "MemoryStore", "SearchMode", "build_where", "embedding_text"]

NEIGHBOURS = 4
"""Stored rows considered per new memory: the nearest by cosine may fail the lexical check, the next may pass."""


class EmbeddingModelMismatch(ActionNeeded):
    """The table's vectors were made by another embedding model (or dimension) than the configured one."""


def embedding_text(memory: Memory | StoredMemory) -> str:
    """What gets embedded for a memory (reindex must use the same rule): its content (redacted by the gate)."""
    return memory.content


def _model_of(table: Any) -> tuple[str, int]:
    meta = table.schema.metadata or {}
    return meta.get(META_MODEL.encode(), b"").decode(), int(meta.get(META_DIM.encode(), b"0"))


class MemoryStore:
    """Typed, synchronous access to the `memories` table. Cheap to construct once the embedder is warm."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, *,
                 allow_model_mismatch: bool = False) -> None:
        self.settings = settings
        self.embedder = embedder if embedder is not None else get_embedder(settings)
        self._redacted = text_gate(redactor_for(settings))  # for rows read back and queries
        # Folder or object store, and the lock writers take: storage/lance.py (both topologies).
        handle = open_lance(settings, TABLE)
        self.uri, self._db, self._write_lock = handle.uri, handle.db, handle.lock
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._has_ann = indexes.AnnProbes()
        self._twin = aio.AsyncTwin(lambda: open_async(settings, handle, TABLE))  # the search path's handle
        self._upgraded = False
        self._table: Any = self._open()
        self._mismatch: str | None = None
        if self._table is not None:
            self._mismatch = self._check_model(self._table)
            if self._mismatch and not allow_model_mismatch:
                raise EmbeddingModelMismatch(self._mismatch)

    # --- metadata ---------------------------------------------------------------------------
    def recorded_model(self) -> tuple[str, int] | None:
        """`(model name, dimension)` the stored vectors were made with; None before the first write."""
        return None if self._table is None else _model_of(self._table)

    def _check_model(self, table: Any) -> str | None:
        model, dim = _model_of(table)
        # Compare names first: a remote embedder only learns its dimension by calling the endpoint.
        if model == self.embedder.model_name and dim == self.embedder.dim:
            return None
        return (f"the memory table at {self.uri} holds {dim}-d vectors from embedding model {model!r}, but the "
                f"configured model is {self.embedder.model_name!r}; run `chronicle memory reindex` to re-embed "
                f"all memories with the new model (or set EMBEDDING_MODEL back to {model!r})")

    def _open(self) -> Any:
        try:
            return self._db.open_table(TABLE)
        except ValueError:  # "Table 'memories' was not found"
            return None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One writer at a time: a thread lock within the process, `storage/lance.py`'s lock across them."""
        with self._thread_lock:
            held = self._depth > 0  # by this thread (e.g. an upgrade inside an upsert): claims don't nest
            with nullcontext() if held else self._write_lock.acquire(timeout=self.settings.db_lock_timeout_s):
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1

    def _readable(self, vectors: bool = True) -> Any:
        """The table for reads, None if nothing was ever written; refuses vectors of another model — unless the read
        uses no vector (`vectors=False`: list, tags, count, rows by id), which works on any table (an upgraded
        home lists its memories before `chronicle memory reindex`)."""
        if self._table is None:
            self._table = self._open()
            if self._table is not None:
                self._mismatch = self._check_model(self._table)
        if self._mismatch and vectors:
            raise EmbeddingModelMismatch(self._mismatch)
        if self._table is not None and not self._upgraded:
            self._upgrade(self._table)
        return self._table

    def _upgrade(self, table: Any) -> None:
        """Bring an older table to the current schema once per store (adding columns needs the write lock)."""
        schema = memory_schema(self.embedder.model_name, self.embedder.dim)
        if indexes.missing_columns(table, schema):
            with self._writing():
                indexes.upgrade(table, schema)
        self._upgraded = True

    def _writable(self) -> Any:
        """The table for writes (created on first use, recorded with the current model); call under the lock."""
        table = self._readable()
        if table is None:
            schema = memory_schema(self.embedder.model_name, self.embedder.dim)
            table = self._db.create_table(TABLE, schema=schema, exist_ok=True)
            self._table = table
            self._mismatch = self._check_model(table)  # another process may have won the race
            if self._mismatch:
                raise EmbeddingModelMismatch(self._mismatch)
            self._upgrade(table)
        return table

    def _policy(self, language: str) -> DedupPolicy:
        return DedupPolicy.for_model(self.embedder.model_name, language, self.settings.memory.dedup_threshold)

    # --- writes -----------------------------------------------------------------------------
    def upsert(self, memories: Sequence[Memory], *, created: datetime,
               flow_run_id: str | None = None) -> list[MemoryEvent]:
        """Add, merge or skip each memory (one event per input, input order) in one atomic commit.

        The decisions are `chronicle.memory.dedup.plan_upsert`'s; this looks up what it needs (stored
        hashes, the nearest stored rows) and writes its plan.
        """
        return self.upsert_many([(memories, created)], flow_run_id=flow_run_id)[0]

    def upsert_many(self, batches: Sequence[tuple[Sequence[Memory], datetime]], *,
                    flow_run_id: str | None = None) -> list[list[MemoryEvent]]:
        """`upsert` of each `(memories, created)` batch in order (one commit each), with ONE embedding call.

        A distillation stores one batch per note chunk; embedding each chunk's ~20 memories separately ran
        3x slower than one call over all of them (bench/memory_e2e.py --profile: 152 of 171 s in per-chunk
        embedding). Later batches see earlier ones (each is committed before the next is planned).
        """
        if not any(memories for memories, _ in batches):
            return [[] for _ in batches]
        everything = [require_redacted_memory(m) for memories, _ in batches for m in memories]
        # Skip the embedding cost for what is stored already (a rerun of the same notes is then cheap).
        known = self._known_hashes({m.content_hash for m in everything})
        vecs = self._embed_contents([m for m in everything if dedup_key(m) not in known], {})
        out = []
        with self._writing():
            for memories, created in batches:
                out.append(self._upsert_locked(memories, created, flow_run_id, vecs) if memories else [])
        return out

    def _upsert_locked(self, memories: Sequence[Memory], created: datetime, flow_run_id: str | None,
                       vecs: dict[str, np.ndarray]) -> list[MemoryEvent]:
        table = self._writable()
        hashes, keys = [m.content_hash for m in memories], [dedup_key(m) for m in memories]
        known = self._known_hashes(set(hashes))  # again: another writer may have committed meanwhile
        first = sorted({k: i for i, k in reversed(list(enumerate(keys)))}.values())  # one per subject and content
        need = [i for i in first if keys[i] not in known]
        vecs.update(self._embed_contents([memories[i] for i in need], vecs))  # rows deleted meanwhile: rare
        by_index = {i: vecs[hashes[i]] for i in need}
        plan = plan_upsert(memories, known=known, vectors=by_index, neighbours=self._neighbours(table, need, by_index),
                           policy=self._policy, created=created, now=datetime.now(UTC), flow_run_id=flow_run_id)
        self._supersede(plan)
        if plan.rows:
            data = to_arrow(list(plan.rows.values()), table.schema)
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
            indexes.after_write(table, self.settings.memory.ann_min_rows)
        return plan.events

    def _supersede(self, plan: UpsertPlan) -> None:
        """Knowledge updates of the plan's new rows, in the same commit (`chronicle.storage.memory.updates`)."""
        table = self._readable()

        def by_id(ids: list[str]) -> list[tuple[StoredMemory, np.ndarray]]:
            return [(r, v) for r, v in self._get_with_vectors(ids, with_vectors=True) if v is not None]

        def current(subjects: list[str]) -> list[tuple[StoredMemory, np.ndarray]]:
            return [] if table is None else by_id([i for chunk in chunks(subjects) for i in all_rows(
                table, ["id"], current_rows_where(chunk)).column("id").to_pylist()])

        mark_superseded(plan, current, by_id)

    def delete(self, ids: Sequence[str]) -> int:
        """Remove rows by id; returns how many existed."""
        table = self._readable()
        if table is None or not ids:
            return 0
        with self._writing():
            removed = 0
            for chunk in chunks(list(ids)):
                where = f"id IN ({sql_list(chunk)})"
                removed += table.count_rows(where)
                table.delete(where)
            indexes.after_write(table, self.settings.memory.ann_min_rows)
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
        if not self._upgraded:
            self._upgrade(table)
        # Embed outside the write lock; rows that appear or change meanwhile are caught up under it.
        snapshot = all_rows(table, ["id", "content", "content_hash"])
        done = embed_rows(embedder, snapshot, self._redacted)
        with self._writing():
            rows = all_rows(table, ROW_COLUMNS)
            missing = rows.filter(pc.invert(pc.is_in(row_keys(rows), value_set=pa.array(list(done), pa.string()))))
            done.update(embed_rows(embedder, missing, self._redacted))
            schema = memory_schema(embedder.model_name, embedder.dim)
            keys = row_keys(rows).to_pylist()
            matrix = np.stack([done[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)
            data = with_vectors(rows, matrix, schema)
            self._table = self._db.create_table(TABLE, data, schema=schema, mode="overwrite")
            self.embedder, self._mismatch = embedder, None
            self.ensure_indexes()
        return len(keys)

    # --- reads ------------------------------------------------------------------------------
    def search(self, query: str, *, tags: list[str] | None = None, min_importance: float | None = None,
               target_file: str | None = None, limit: int = 10, mode: SearchMode = "hybrid", subject: str | None = None,
               as_of: date | None = None) -> list[SearchHit]:
        """Best memories for `query`, scored per `chronicle.memory.search.fuse`, filters applied before ranking.

        `tags` matches rows having ANY of the tags. `mode="dense"` skips full text (semantic = cosine).
        `subject`: only memories about that person (normalised here). `as_of`: only what was current at the end of
        that day (notes' timezone); without it superseded memories rank below current ones (`memory.ranking`).
        """
        table = self._readable()
        if table is None or limit <= 0 or not query.strip():
            return []
        tz = self.settings.tz_for(self.settings.ingest.notes_project)
        current_at = None if as_of is None else datetime.combine(as_of + timedelta(days=1), time.min, tzinfo=tz)
        where = build_where(tags=tags, min_importance=min_importance, target_file=target_file,
                            subject=None if subject is None else normalise_subject(subject), current_at=current_at)
        opts = self.settings.memory
        weights = Weights(opts.search_semantic_weight, opts.search_importance_weight, opts.search_fulltext_weight,
                          opts.search_score)
        half_life = opts.importance_half_life_days
        # A few more candidates than asked: demoting superseded rows (or ageing) lets the next ones move up.
        fetch = limit * 2 if half_life > 0 else limit + 5
        scored, rows = ranked(self._twin(table), self._embed_query, query, where, fetch, mode, ann=self._has_ann(table),
                              weights=weights)
        now, tuning = current_at or datetime.now(UTC), Tuning.of(self.settings, self.embedder.model_name)
        return rerank(hits(scored, rows), now=now, importance_weight=weights.importance, half_life_days=half_life,
                      demote_superseded=as_of is None, rule=weights.rule, tuning=tuning, query=query)[:limit]

    def _embed_query(self, query: str) -> np.ndarray:
        return query_vector(self.embedder, self._redacted(query))

    def list(self, limit: int = 50, offset: int = 0, tags: list[str] | None = None,
             target_file: str | None = None) -> list[StoredMemory]:
        """Memories newest first (`created` desc, then id), optionally filtered."""
        table = self._readable(vectors=False)
        if table is None:
            return []
        data = all_rows(table, ROW_COLUMNS, build_where(tags=tags, target_file=target_file))
        data = data.sort_by([("created", "descending"), ("id", "ascending")]).slice(offset, limit)
        return [StoredMemory.from_row(r) for r in data.to_pylist()]

    def get(self, ids: Sequence[str]) -> list[StoredMemory]:
        """The rows with these ids, in the given order (unknown ids are skipped)."""
        return [row for row, _ in self._get_with_vectors(ids, with_vectors=False)]

    def tags(self) -> dict[str, int]:
        """Tag -> number of memories carrying it, most used first."""
        table = self._readable(vectors=False)
        if table is None:
            return {}
        flat = pc.list_flatten(all_rows(table, ["tags"]).column("tags"))
        if len(flat) == 0:
            return {}
        counts = pc.value_counts(flat).to_pylist()
        return {c["values"]: c["counts"] for c in sorted(counts, key=lambda c: (-c["counts"], c["values"]))}

    def count(self) -> int:
        table = self._readable(vectors=False)
        return 0 if table is None else int(table.count_rows())

    # --- indexes ----------------------------------------------------------------------------
    def ensure_indexes(self) -> list[str]:
        """Create missing indexes (see `chronicle.storage.memory.indexes.ensure_indexes`); returns those created."""
        return [] if self._table is None else indexes.ensure_indexes(self._table, self.settings.memory.ann_min_rows)

    def optimize(self) -> None:
        """Compact small fragments and fold all new rows into the existing indexes now (incremental)."""
        if self._table is not None:
            with self._writing():
                self._table.optimize()

    # --- upsert helpers ---------------------------------------------------------------------
    def _known_hashes(self, hashes: set[str]) -> dict[str, str]:
        """`dedup_key` (subject and content hash) -> id of the row holding (or having absorbed) that content."""
        table = self._readable()
        if table is None or not hashes:
            return {}
        out: dict[str, str] = {}
        for chunk in chunks(sorted(hashes)):
            where = f"array_has_any(merged_hashes, [{sql_list(chunk)}])"
            for row in all_rows(table, ["id", "merged_hashes", "subject"], where).to_pylist():
                for h in row["merged_hashes"] or []:
                    if h in hashes:
                        out.setdefault(key_of(row["subject"] or "", h), row["id"])
        return out

    def _neighbours(self, table: Any, need: list[int], vecs: dict[int, np.ndarray]) -> dict[int, list[Neighbour]]:
        """Per input index, the nearest stored rows that clear the loosest cosine threshold, with their vectors."""
        if not need:
            return {}
        floor = min(self._policy("zh").cosine, self._policy("en").cosine)
        found = nearest(table, np.stack([vecs[i] for i in need]), NEIGHBOURS, ann=self._has_ann(table))
        close = {i: [(rid, cos) for rid, cos in f if cos >= floor] for i, f in zip(need, found, strict=True)}
        ids = list(dict.fromkeys(rid for pairs in close.values() for rid, _ in pairs))
        loaded = {row.id: (row, vec) for row, vec in self._get_with_vectors(ids, with_vectors=True)}
        return {i: [Neighbour(loaded[rid][0], loaded[rid][1], cos) for rid, cos in pairs if rid in loaded]
                for i, pairs in close.items()}

    def _get_with_vectors(self, ids: Sequence[str], *,
                          with_vectors: bool) -> list[tuple[StoredMemory, np.ndarray | None]]:
        table = self._readable(vectors=with_vectors)
        if table is None or not ids:
            return []
        columns = [*ROW_COLUMNS, "vector"] if with_vectors else ROW_COLUMNS
        found: dict[str, tuple[StoredMemory, np.ndarray | None]] = {}
        for chunk in chunks(list(dict.fromkeys(ids))):
            # ids are unique, so `limit(len(chunk))` is exact and saves a count query (search calls this).
            data = table.search().where(f"id IN ({sql_list(chunk)})").select(columns).limit(len(chunk)).to_arrow()
            matrix = vectors(data) if with_vectors else None
            for n, row in enumerate(data.select(ROW_COLUMNS).to_pylist()):
                found[row["id"]] = (StoredMemory.from_row(row), matrix[n] if matrix is not None else None)
        return [found[i] for i in ids if i in found]

    def _embed_contents(self, memories: Sequence[Memory], have: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """content hash -> vector for the memories not in `have`, in one embedding call."""
        todo: dict[str, str] = {}
        for m in memories:  # the first text of each hash is the one stored (and embedded)
            if m.content_hash not in have:
                todo.setdefault(m.content_hash, embedding_text(m))
        if not todo:
            return dict(have)
        fresh = embed_redacted(self.embedder, list(todo.values()))
        return have | dict(zip(todo, fresh, strict=True))
