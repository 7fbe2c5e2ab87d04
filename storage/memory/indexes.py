"""Upkeep of the `memories` table: in-place schema upgrades and its indexes (scalar, full text, ANN).

Where the table lives and the lock its writers take are `storage/lance.py`'s (folder or object store).
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree, IvfSq, LabelList

log = logging.getLogger("chronicle.storage.memory")

SCALAR_INDEXES: tuple[tuple[str, Any], ...] = (
    ("id", BTree),
    ("content_hash", BTree),
    ("importance", BTree),
    ("target_file", Bitmap),
    ("tags", LabelList),
    ("merged_hashes", LabelList),
    # Columns of schema 3, indexed once a table has them: a search about one person of 10,000
    # prefilters on `subject` (BTREE: too many distinct values for a bitmap), and `superseded_by = ''` keeps
    # replaced memories out of every search.
    ("subject", BTree),
    ("superseded_by", BTree),
)
# ANN query knobs (only used once the IVF_SQ index exists): partitions probed, and — for the dedup neighbour
# lookup only — how many times `limit` candidates are re-ranked on the full float32 vectors. Search does
# not refine inside LanceDB: it re-scores its own top candidates on their vectors (storage/memory/search.py),
# which costs one read instead of ~3x the rest of the query.
# Probes: at 1 M rows (LanceDB's default ~122 partitions of ~8 k rows), on vectors around real e5 texts
# (bench/search.py --vectors clustered) the true top 10 of real questions were in the best 40 of 5 / 10 / 20 / 40 /
# 60 probed partitions for recall 0.58 / 0.75 / 0.90 / 0.98 / 1.00 at 10 / 12 / 16 / 24 / 27 ms CPU per dense leg
# (load ~16): 32 is the fewest that reach 0.95 — on one k-means run. Over 100 real questions and two index builds
# of the same rows (load ~9): 32 probes 0.957 / 0.941, 40 probes 0.974 / 0.968, 48 0.988 / 0.983, at
# 13-15 / 16-17 / 18-19 ms CPU. A third build missed 0.95 at 40 probes (0.946 over the bench's 41 questions;
# 44 / 48 / 52 probes: 0.961 / 0.973 / 0.980): 48 keeps it on every draw seen. (At 100 k there are only ~12
# partitions: every one is probed.)
ANN_NPROBES = 48
ANN_REFINE_FACTOR = 2
# Write-side housekeeping thresholds (see `after_write`).
OPTIMIZE_UNINDEXED_ROWS = 1_000
OPTIMIZE_SMALL_FRAGMENTS = 16


def missing_columns(table: Any, schema: pa.Schema) -> list[pa.Field]:
    """Columns of the current schema an older table lacks (never the vector: its size is the table's own)."""
    have = set(table.schema.names)
    return [f for f in schema if f.name not in have and f.name != "vector"]


def upgrade(table: Any, schema: pa.Schema) -> list[str]:
    """Add the missing columns as all-null (a metadata-only commit: no row is rewritten); call under the lock."""
    missing = missing_columns(table, schema)
    if missing:
        table.add_columns(missing)
        log.info("memory table: upgraded, added columns %s", ", ".join(f.name for f in missing))
    return [f.name for f in missing]


def ensure_indexes(table: Any, ann_min_rows: int) -> list[str]:
    """Create missing indexes; returns the names of those created.

    Scalar indexes make the `where` prefilters and the dedup lookups cheap; the FTS index is what full
    text searches; the ANN index only pays off on big tables (below `ann_min_rows` an exact scan is fast
    and exact), so it is created once the table reaches that size.
    """
    rows = table.count_rows()
    if rows == 0:
        return []
    have = {tuple(ix.columns) for ix in table.list_indices()}
    created = []
    names = set(table.schema.names)
    for column, config in SCALAR_INDEXES:
        if (column,) not in have and column in names:
            table.create_index(column, config=config(), replace=True)
            created.append(column)
    if ("fts_text",) not in have:
        # Text is pre-tokenised (jieba for Chinese), so split on whitespace only; stemming and English
        # stop words still apply to English tokens.
        table.create_index("fts_text", config=FTS(base_tokenizer="whitespace", with_position=False))
        created.append("fts_text")
    if ("vector",) not in have and rows >= ann_min_rows:
        # IVF partitions of 8-bit scalar-quantised vectors, re-ranked on the full vectors (refine_factor).
        # Measured at 100 k x 384 (bench/search.py, random unit vectors = the hardest case for ANN):
        # IVF_SQ 3 s to build, ~6 ms/query, recall@10 1.00 with refine; IVF_HNSW_SQ 77 s, 0.38;
        # IVF_PQ 39 s, 0.36. Exact search was ~120 ms per query at that size.
        table.create_index("vector", config=IvfSq(distance_type="cosine"))
        created.append("vector")
    if created:
        log.info("memory table: created indexes %s", ", ".join(created))
    return created


def after_write(table: Any, ann_min_rows: int) -> None:
    """Create missing indexes; fold new rows into them once enough have piled up.

    `optimize()` rewrites index segments and compacts fragments (~0.3 s even for a handful of rows),
    which dominated small upserts. Rows not yet in an index are still found — LanceDB scans them flat
    alongside the index — so folding them in is only a matter of speed, done in bulk.
    """
    if ensure_indexes(table, ann_min_rows):
        return
    unindexed = max((ix.num_unindexed_rows or 0 for ix in table.list_indices()), default=0)
    small_fragments = table.stats()["fragment_stats"]["num_small_fragments"]
    if unindexed >= OPTIMIZE_UNINDEXED_ROWS or small_fragments >= OPTIMIZE_SMALL_FRAGMENTS:
        table.optimize()


class AnnFlag:
    """Whether the vector column has an ANN index, cached per table version (listing indexes costs more)."""

    def __init__(self) -> None:
        self._cache: tuple[int, bool] | None = None

    def __call__(self, table: Any) -> bool:
        version = table.version
        if self._cache is None or self._cache[0] != version:
            self._cache = (version, any(tuple(ix.columns) == ("vector",) for ix in table.list_indices()))
        return self._cache[1]
