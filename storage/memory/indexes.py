"""Upkeep of the `memories` table: in-place schema upgrades and its indexes (scalar, full text, ANN).

Where the table lives and the lock its writers take are `storage/lance.py`'s (folder or object store).
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

log = logging.getLogger("chronicle.storage.memory")

# Column -> the `lancedb.index` config class, by name: LanceDB is imported where a table is touched
# (storage/lance.py `open_lance` says why).
SCALAR_INDEXES: tuple[tuple[str, str], ...] = (
    ("id", "BTree"),
    ("content_hash", "BTree"),
    ("importance", "BTree"),
    ("target_file", "Bitmap"),
    ("tags", "LabelList"),
    ("merged_hashes", "LabelList"),
    # Columns of schema 3, indexed once a table has them: a search about one person of 10,000
    # prefilters on `subject` (BTREE: too many distinct values for a bitmap), and `superseded_by = ''` keeps
    # replaced memories out of every search.
    ("subject", "BTree"),
    ("superseded_by", "BTree"),
)
# ANN query knobs (only used once the vector index exists): partitions probed, per kind of index, and — for the
# dedup neighbour lookup only — how many times `limit` candidates are re-ranked on the full float32 vectors. Search
# does not refine inside LanceDB: it re-scores its own top candidates on their vectors (storage/memory/search.py),
# which costs one read instead of ~3x the rest of the query.
# Real questions' neighbours come from several clusters, so recall follows the share of the table probed: each
# kind's probes are the fewest that kept recall@10 above 0.95 at 1 M rows over several k-means draws (IVF_SQ: the
# index of tables built before IVF_RQ, kept until `chronicle memory reindex`); the measurements are in
# docs/design/memory-search-scale.md. At 100 k rows every partition is probed either way.
ANN_NPROBES = {"IvfRq": 96, "IvfSq": 48}
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
    from lancedb import index

    rows = table.count_rows()
    if rows == 0:
        return []
    have = {tuple(ix.columns) for ix in table.list_indices()}
    created = []
    names = set(table.schema.names)
    for column, config in SCALAR_INDEXES:
        if (column,) not in have and column in names:
            table.create_index(column, config=getattr(index, config)(), replace=True)
            created.append(column)
    if ("fts_text",) not in have:
        # Text is pre-tokenised (jieba for Chinese), so split on whitespace only; stemming and English
        # stop words still apply to English tokens.
        table.create_index("fts_text", config=index.FTS(base_tokenizer="whitespace", with_position=False))
        created.append("fts_text")
    if ("vector",) not in have and rows >= ann_min_rows:
        # IVF partitions of RaBitQ codes, 4 bits per dimension: their distance estimates keep the true top 10
        # among the best 20 of the pool, at about half the probe cost of IVF_SQ's 8-bit codes. 1 bit lost the top
        # 10, IVF_PQ was no faster, IVF_HNSW_SQ far slower to build (docs/design/memory-search-scale.md).
        table.create_index("vector", config=index.IvfRq(distance_type="cosine", num_bits=4))
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


def nprobes(index_type: str) -> int:
    """Partitions to probe in a vector index of this kind (the most of any known kind for another)."""
    return ANN_NPROBES.get(index_type, max(ANN_NPROBES.values()))


class AnnProbes:
    """Partitions a search probes in the vector column's ANN index, 0 without one (so it reads as "has an ANN
    index"), cached per table version (listing indexes costs more)."""

    def __init__(self) -> None:
        self._cache: tuple[int, int] | None = None

    def __call__(self, table: Any) -> int:
        version = table.version
        if self._cache is None or self._cache[0] != version:
            kinds = [ix.index_type for ix in table.list_indices() if tuple(ix.columns) == ("vector",)]
            self._cache = (version, nprobes(kinds[0]) if kinds else 0)
        return self._cache[1]
