"""bench/embed: throughput of the flow's embedding path vs raw sentence-transformers on the same texts.

Ours: `get_embedder(settings).embed(texts)` (batched by `embedding_batch_size`, normalised float32).
Baseline: `SentenceTransformer.encode(texts, batch_size=<same>)` on the same loaded model. 2,000 real
dialogue turns from LoCoMo, in 5 chunks of 400; per chunk and round ours and the baseline run back to back
(who goes first alternates) and each side's time is the sum over chunks of its best round: on a shared
machine a neighbour's burst then hits one round of one chunk, not a whole side.
Goal: ours >= 0.9x the baseline's texts per second.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from bench._util import result

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "locomo" / "locomo10.json"


def load_texts(n: int) -> list[str]:
    texts = []
    for sample in json.loads(DATA.read_text()):
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(f"{t['speaker']}: {t['text']}" for t in turns)
    return texts[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np

    from chronicle.memory.embedder import LocalEmbedder, get_embedder
    from chronicle.settings import MINILM_EMBEDDING_MODEL, Settings

    # The sentence-transformers path against SentenceTransformer.encode itself (the packaged default model
    # has no torch model to compare with).
    settings = Settings(home=Path("unused"), embedding_model=MINILM_EMBEDDING_MODEL)
    embedder = get_embedder(settings)
    assert isinstance(embedder, LocalEmbedder), "bench/embed measures the local model (unset EMBEDDING_URL)"
    model = embedder.model
    texts = load_texts(args.texts)
    # Warm-up over every text: the first time each (batch, length) shape runs, torch/oneDNN picks and caches
    # kernels (measured: 6.1 s vs 2.4 s for the same 400 texts), which would bill whichever side went first.
    embedder.embed(texts)

    chunks = [texts[i : i + 400] for i in range(0, len(texts), 400)]
    ours_t, base_t, ours_parts, raw_parts = _interleaved(embedder, model, chunks, args.rounds,
                                                         settings.embedding.batch_size)
    ours, raw = np.concatenate(ours_parts), np.concatenate(raw_parts)
    raw = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    max_diff = float(np.abs(ours - raw).max())  # same vectors, or the comparison is meaningless
    ours_s = [sum(t[r] for t in ours_t) for r in range(args.rounds)]
    base_s = [sum(t[r] for t in base_t) for r in range(args.rounds)]
    ours_tps = len(texts) / sum(min(t) for t in ours_t)
    base_tps = len(texts) / sum(min(t) for t in base_t)
    print(
        f"{len(texts)} texts, batch {settings.embedding.batch_size}: ours {ours_tps:.0f} texts/s "
        f"(rounds {', '.join(f'{s:.1f}s' for s in ours_s)}), raw encode {base_tps:.0f} texts/s "
        f"(rounds {', '.join(f'{s:.1f}s' for s in base_s)}), max |diff| {max_diff:.2e}"
    )
    result(
        "embed",
        measure="texts/s of get_embedder(settings).embed on 2,000 LoCoMo turns",
        ours=ours_tps,
        baseline=base_tps,
        baseline_name="SentenceTransformer.encode, same model and batch size",
        unit=" texts/s",
        goal="ours >= 0.9x baseline",
        ok=ours_tps >= 0.9 * base_tps and max_diff < 1e-4,
        extra={"texts": len(texts), "ours_seconds": ours_s, "baseline_seconds": base_s, "max_abs_diff": max_diff},
    )


def _interleaved(embedder: Any, model: Any, chunks: list[list[str]], rounds: int,
                 batch_size: int) -> tuple[list[list[float]], list[list[float]], list[Any], list[Any]]:
    """Seconds per chunk and round of ours and of the raw encode, the two sides taking turns going first; the first
    round's vectors of each."""
    ours_t = [[0.0] * rounds for _ in chunks]
    base_t = [[0.0] * rounds for _ in chunks]
    ours_parts, raw_parts = [], []
    for r in range(rounds):
        for c, chunk in enumerate(chunks):
            for side in ("ours", "base") if (r + c) % 2 == 0 else ("base", "ours"):
                t0 = time.perf_counter()
                if side == "ours":
                    out = embedder.embed(chunk)
                    ours_t[c][r] = time.perf_counter() - t0
                    if r == 0:
                        ours_parts.append(out)
                else:
                    out = model.encode(chunk, batch_size=batch_size, show_progress_bar=False)
                    base_t[c][r] = time.perf_counter() - t0
                    if r == 0:
                        raw_parts.append(out)
    return ours_t, base_t, ours_parts, raw_parts


if __name__ == "__main__":
    main()
