"""bench/locomo: evidence retrieval of memory search on the 10 LoCoMo conversations (offline model).

One memory per dialogue turn: content "Speaker: text" plus the session date (a shared photo's caption is
part of what the speaker said), summary = the turn's text, tags = [sample_id], written through
`MemoryStore.upsert` one session per call (so dedup runs as in production; merged turns keep every
dia_id in `source_entry_ids`). For every QA of categories 1-4 the search is filtered by the conversation's
tag, and two measures are reported:

- hit@k: share of questions with at least one evidence turn in the top k (the measure under which dense
  MiniLM scores ~0.42 / 0.52, the brief's reference);
- recall@k: share of a question's evidence turns in the top k, averaged over questions (stricter).

Two memory variants: `turn` (the turn alone) and `turn+context` (the preceding turn of the session in
key_info, as a distiller's keyInfo would carry it; embeddings are identical, only full text sees it).
Modes: dense-only (cosine) and hybrid (cosine + BM25 fusion). Questions and answers never reach the index.
Goal: hybrid hit@5 >= 0.65 and hit@10 >= 0.75.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._util import result

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "locomo" / "locomo10.json"
_DIA = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)$")


def session_time(text: str) -> datetime:
    """LoCoMo session stamps look like "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.replace(",", "").strip(), "%I:%M %p on %d %B %Y")


def turn_content(turn: dict[str, Any], when: datetime, *, captions: bool) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if captions and turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    return f"{text} (said on {when:%-d %B %Y})"


def conversation_memories(
    sample: dict[str, Any], *, captions: bool = True, context: bool = False
) -> list[tuple[datetime, list[Any]]]:
    """Per session: (session time, one memory per turn), in session order."""
    from chronicle.memory.model import Memory

    conv = sample["conversation"]
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
    out = []
    for n in sessions:
        when = session_time(conv[f"session_{n}_date_time"])
        turns = conv[f"session_{n}"]
        memories = [
            Memory(
                content=turn_content(turn, when, captions=captions),
                summary=turn["text"] or "(photo)",
                key_info=[f"{prev['speaker']}: {prev['text']}"]
                if context and (prev := turns[i - 1] if i else None)
                else [],
                tags=[sample["sample_id"]],
                importance=0.5,
                target_file="MEMORY.md",
                source=f"{sample['sample_id']}/session_{n}",
                source_entry_ids=[f"{sample['sample_id']}:{turn['dia_id']}"],
            )
            for i, turn in enumerate(turns)
        ]
        out.append((when, memories))
    return out


def questions(sample: dict[str, Any]) -> list[tuple[str, set[str]]]:
    qs = []
    for qa in sample["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        evidence = {f"{sample['sample_id']}:{d}" for e in qa.get("evidence", []) for d in _DIA.findall(e)}
        if evidence:
            qs.append((qa["question"], evidence))
    return qs


def evaluate(store: Any, samples: list[dict[str, Any]], mode: str, ks: tuple[int, ...] = (5, 10)) -> dict[str, Any]:
    hit = dict.fromkeys(ks, 0.0)
    recall = dict.fromkeys(ks, 0.0)
    n = 0
    latencies = []
    for sample in samples:
        for question, evidence in questions(sample):
            t0 = time.perf_counter()
            hits = store.search(question, tags=[sample["sample_id"]], limit=max(ks), mode=mode)
            latencies.append(time.perf_counter() - t0)
            for k in ks:
                found = evidence & {e for h in hits[:k] for e in h.source_entry_ids}
                hit[k] += bool(found)
                recall[k] += len(found) / len(evidence)
            n += 1
    latencies.sort()
    return {
        **{f"hit@{k}": hit[k] / n for k in ks},
        **{f"recall@{k}": recall[k] / n for k in ks},
        "questions": n,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
    }


class CachedEmbedder:
    """Embeds each distinct text once across the variants (their contents are identical).

    `prefill` embeds every turn in one big call first: sorted-by-length batches of 64 run several times
    faster than ~270 session-sized calls, and which call does the embedding does not change the vectors.
    """

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_name, self.dim = inner, inner.model_name, inner.dim
        self.cache: dict[str, Any] = {}

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed(todo), strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.embed([])

    def prefill(self, texts: list[str]) -> float:
        t0 = time.perf_counter()
        self.embed(texts)
        return time.perf_counter() - t0


def run_variant(samples: list[dict[str, Any]], embedder: Any, home: Path, *, captions: bool, context: bool) -> dict:
    from chronicle.redaction.memories import redact_memory
    from chronicle.redaction.redactor import Redactor
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    redactor = Redactor.build()  # the store takes only memories through the gate, as in production
    store = MemoryStore(Settings(home=home), embedder)
    t0 = time.perf_counter()
    turns = merged = 0
    for sample in samples:
        for when, memories in conversation_memories(sample, captions=captions, context=context):
            turns += len(memories)
            memories = [redact_memory(m, redactor) for m in memories]
            merged += sum(e.event != "ADD" for e in store.upsert(memories, created=when, flow_run_id="locomo"))
    index_s = time.perf_counter() - t0
    out = {"turns": turns, "memories": store.count(), "merged_turns": merged, "index_seconds": index_s}
    for mode in ("dense", "hybrid"):
        out[mode] = evaluate(store, samples, mode)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-captions", action="store_true", help="content = speaker + text only")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from chronicle.memory.embedder import get_embedder
    from chronicle.settings import Settings

    samples = json.loads(args.data.read_text())
    settings = Settings(home=Path("unused"))
    embedder = CachedEmbedder(get_embedder(settings))
    contents = [
        m.content
        for sample in samples
        for _, memories in conversation_memories(sample, captions=not args.no_captions)
        for m in memories
    ]
    embed_s = embedder.prefill(contents)
    print(f"embedded {len(contents)} turns in {embed_s:.1f}s")
    variants: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, context in (("turn", False), ("turn+context", True)):
            variants[name] = r = run_variant(
                samples, embedder, Path(tmp) / name, captions=not args.no_captions, context=context
            )
            print(f"[{name}] {r['turns']} turns -> {r['memories']} memories, indexed in {r['index_seconds']:.1f}s")
            for mode in ("dense", "hybrid"):
                m = r[mode]
                print(
                    f"  {mode:6s} hit@5={m['hit@5']:.3f} hit@10={m['hit@10']:.3f}  "
                    f"recall@5={m['recall@5']:.3f} recall@10={m['recall@10']:.3f}  "
                    f"(n={m['questions']}, p50 {m['p50_ms']:.1f} ms)"
                )
    turn = variants["turn"]
    ok = turn["hybrid"]["hit@5"] >= 0.65 and turn["hybrid"]["hit@10"] >= 0.75
    result(
        "locomo",
        measure="hybrid hit@5 of QA evidence (cat 1-4), turn memories, per-conversation tag filter",
        ours=turn["hybrid"]["hit@5"],
        baseline=turn["dense"]["hit@5"],
        baseline_name="dense-only cosine hit@5",
        unit="",
        goal="hybrid hit@5 >= 0.65 and hit@10 >= 0.75 (turn variant)",
        ok=ok,
        extra={
            "variants": variants,
            "embed_seconds": embed_s,
            "captions": not args.no_captions,
            "embedding_model": settings.embedding.model,
        },
    )


if __name__ == "__main__":
    main()
