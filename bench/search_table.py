"""The synthetic `memories` tables of bench/search.py: `n` rows written straight with pyarrow, in chunks.

Text from a small English/Chinese vocabulary (`random`) or the realistic rows of bench/search_data.py (`clustered`),
tags, importance, and a `subject` per row (n / SUBJECT_ROWS people); tests/memory/test_search_scale.py builds
its tables with it too.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.search_data import RealSet, clustered_vectors, realistic_text

EN = [
    "deploy", "release", "server", "backup", "database", "pipeline", "report", "meeting", "budget", "invoice",
    "travel", "coffee", "tea", "garden", "daughter", "school", "doctor", "appointment", "password", "rotate",
    "staging", "production", "weekly", "friday", "monday", "python", "lance", "duckdb", "prefect", "model",
    "vector", "search", "memory", "distill", "note", "agent", "tool", "config", "api", "key", "holiday", "flight",
    "hotel", "birthday", "gift", "running", "morning", "evening", "project", "client", "contract", "review",
    "sprint", "retro"
]  # fmt: skip
ZH = [
    "报销", "发票", "会议", "预算", "项目", "周报", "备份", "服务器", "部署", "咖啡", "绿茶",
    "跑步", "早起", "家庭", "女儿", "学校", "医生", "生日", "旅行", "酒店"
]  # fmt: skip
TAGS = [f"tag{i}" for i in range(40)] + ["家庭", "偏好", "工具"]
FILES = ["MEMORY.md", "USER.md", "TOOLS.md", "AGENTS.md", "SOUL.md", "IDENTITY.md"]


def sentence(rng: random.Random) -> str:
    words = rng.choices(EN, k=rng.randint(6, 14))
    if rng.random() < 0.3:
        words += rng.choices(ZH, k=rng.randint(1, 4))
    return " ".join(words)


SUBJECT_ROWS = 100
"""Memories per subject in the synthetic tables (10,000 subjects x ~100 memories at 1 M)."""
BUILD_CHUNK = 100_000
"""Rows written per commit while building: the Arrow copy of one chunk, not of the whole table, is in memory."""


def subject_name(k: int) -> str:
    return f"person {k:05d}"


def build_table(
    uri: str, n: int, model_name: str, dim: int, seed: int = 7, *, subject: bool = True, real: RealSet | None = None
) -> tuple[list[str], np.ndarray]:
    """Write `n` synthetic memories (in chunks); returns their ids and vectors (the brute-force baseline).

    Each row also gets a `subject` (n / SUBJECT_ROWS distinct names, rows of one subject spread over the
    whole table as a person's memories are over time); a table whose schema does
    not have it yet gets it as an extra column, which search can filter on (`subject=False`: not then, for a
    table the store is to write to before that schema lands). With `real`: the `clustered` rows of
    bench/search_data.py (vectors around real centres, realistic text); without: `random` ones.
    """
    import lancedb
    import pyarrow as pa

    from chronicle.storage.memory.schema import TABLE, memory_schema

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    schema = memory_schema(model_name, dim)
    if subject and "subject" not in schema.names:
        schema = schema.append(pa.field("subject", pa.string()))
    subjects = max(1, n // SUBJECT_ROWS)
    matrix = np.empty((n, dim), dtype=np.float32)
    ids: list[str] = []

    def chunks() -> Any:
        for lo in range(0, n, BUILD_CHUNK):
            m = min(BUILD_CHUNK, n - lo)
            if real is None:
                vectors = nrng.standard_normal((m, dim), dtype=np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                contents = [sentence(rng) for _ in range(m)]
            else:
                vectors, centres = clustered_vectors(nrng, m, real)
                contents = [realistic_text(rng, real, int(c)) for c in centres]
            matrix[lo : lo + m] = vectors
            yield from _chunk_table(rng, schema, lo, contents, vectors, subjects, ids).to_batches()

    # One streamed write: one data fragment per ~1 M rows, as the store's compaction (`optimize`) leaves a table.
    # (Measured at 1 M: a 20-row take of the display columns costs ~20 ms CPU over one fragment as over ten.)
    lancedb.connect(uri).create_table(TABLE, pa.RecordBatchReader.from_batches(schema, chunks()), schema=schema,
                                      mode="overwrite")
    return ids, matrix


START = datetime(2025, 1, 1, tzinfo=UTC)
"""The first row's `created`; each next row a minute later."""


def _chunk_table(rng: random.Random, schema: Any, lo: int, contents: list[str], vectors: np.ndarray, subjects: int,
                 ids: list[str]) -> Any:
    """Rows `lo`.. of the table with these texts and vectors as an Arrow table of `schema` (their ids appended
    to `ids`): the other columns drawn from `rng`, the display columns packed where the schema has them."""
    import pyarrow as pa

    from chronicle.memory.model import content_hash, detect_language
    from chronicle.memory.search import fts_text
    from chronicle.storage.memory.arrow import packed_column
    from chronicle.storage.memory.schema import PACKED

    m, dim = len(contents), vectors.shape[1]
    tags = [rng.sample(TAGS, k=rng.randint(1, 3)) for _ in range(m)]
    created = [START + timedelta(minutes=lo + i) for i in range(m)]
    hashes = [content_hash(f"{lo + i} {c}") for i, c in enumerate(contents)]
    chunk_ids = [f"{c:%Y-%m-%d}-{h[:12]}" for c, h in zip(created, hashes, strict=True)]
    ids.extend(chunk_ids)
    columns: dict[str, Any] = {
        "id": chunk_ids,
        "content": contents,
        "summary": [c[:40] for c in contents],
        "target_file": [rng.choice(FILES) for _ in range(m)],
        "action": ["append"] * m,
        "tags": tags,
        "importance": [round(rng.random(), 2) for _ in range(m)],
        "key_info": [[] for _ in range(m)],
        "source": [f"{c:%Y-%m-%d}.md" for c in created],
        "created": created,
        "updated": [None] * m,
        "content_hash": hashes,
        "merged_hashes": [[h] for h in hashes],
        "language": [detect_language(c) for c in contents],
        "source_entry_ids": [[] for _ in range(m)],
        "fts_text": [fts_text(c, *t) for c, t in zip(contents, tags, strict=True)],
        "flow_run_id": ["bench"] * m,
        "absorbed": [[] for _ in range(m)],
        "subject": [subject_name(rng.randrange(subjects)) for _ in range(m)],
    }
    arrays = {k: pa.array(v, type=schema.field(k).type) for k, v in columns.items() if k in schema.names}
    arrays["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
    for f in schema:  # a column the schema gained later (and this bench does not know): "" for text
        # (`superseded_by = ''` marks a current memory, which a null would not), else null
        default = pa.array([""] * m, f.type) if f.type == pa.string() else pa.nulls(m, f.type)
        if f.name != PACKED:
            arrays.setdefault(f.name, default)
    if PACKED in schema.names:  # the display columns packed, as the store writes them (schema 5)
        arrays[PACKED] = packed_column(pa.table(arrays))
    return pa.table([arrays[f.name] for f in schema], schema=schema)
