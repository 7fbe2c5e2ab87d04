"""bench/memory_weights: the search weights chosen on one distilled store per corpus (same run, same store).

A corpus is written in one layout, ingested and distilled once (offline engine, default embedder), then every
question is searched unscoped and scoped under each candidate setting of the ranking: the full-text share of
relevance (`search_fulltext_weight`), the score rule (`scaled` / seed 002's `additive`), the cosine floor
(`memory_min_cosine`: the model's measured floor vs none), recency (`memory_recency_half_life_days`) and the
share of its score a memory about someone the query does not name keeps (`search_named_subject_factor`). The
baseline is the shipped settings on the same store. Prints one line per setting and writes
bench/out/memory_weights_<corpus>.json.

    python -m bench.memory_weights --corpus memorybank --layout speech
    python -m bench.memory_weights --corpus locomo --layout bold --samples 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._util import OUT

CANDIDATES: tuple[dict[str, Any], ...] = (
    {},  # the shipped settings
    {"memory_min_cosine": 0.0},
    {"search_fulltext_weight": 0.3},
    {"search_fulltext_weight": 0.7},
    {"search_score": "additive"},
    {"search_importance_weight": 0.1, "search_semantic_weight": 0.9},
    {"memory_recency_half_life_days": 30.0},
    {"search_named_subject_factor": 1.0},
    {"search_named_subject_factor": 0.7},
)


def sweep(corpus_name: str, layout: str, samples: int) -> list[dict[str, Any]]:
    from bench.memory_e2e import corpus, distill_corpus, search_all
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    load_before = os.getloadavg()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home", llm_url=None, embedding_url=None)
        where, _, questions = corpus(corpus_name, layout, samples, Path(tmp) / "memory")
        days = sorted(datetime.strptime(f, "%Y-%m-%d.md").date() for f, _ in where)
        entries, _, _ = distill_corpus(settings, Path(tmp) / "memory", days[0], days[-1], corpus_name, False)
        entry_to_turn = {e.entry_id: where.get((Path(e.source_file).name, e.line_no or -1)) for e in entries}
        for change in CANDIDATES:
            store = MemoryStore(settings.updated(**change))
            hit, leaks, _, _ = search_all(store, questions, entry_to_turn)
            row = {"settings": change or "shipped", "other_subject_hits": leaks,
                   **{f"hit_{k.replace('@', '_at')}": v / len(questions) for k, v in hit.items()}}
            print(f"{corpus_name}/{layout} {change or 'shipped'}: scoped @5/@10 {row['hit_scoped_at5']:.3f}/"
                  f"{row['hit_scoped_at10']:.3f}, unscoped {row['hit_unscoped_at5']:.3f}/"
                  f"{row['hit_unscoped_at10']:.3f}", flush=True)
            out.append(row)
    OUT.mkdir(exist_ok=True)
    (OUT / f"memory_weights_{corpus_name}.json").write_text(json.dumps(
        {"layout": layout, "samples": samples, "rows": out, "load_avg_before": load_before,
         "load_avg_after": os.getloadavg()}, indent=2, default=str))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=["memorybank", "locomo"], default="memorybank")
    parser.add_argument("--layout", default="heading")
    parser.add_argument("--samples", type=int, default=2, help="LoCoMo conversations")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    for name in ("LLM_URL", "EMBEDDING_URL"):
        os.environ.pop(name, None)
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=900):
        sweep(args.corpus, args.layout, args.samples)


if __name__ == "__main__":
    main()
