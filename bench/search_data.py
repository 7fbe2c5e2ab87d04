"""Rows for bench/search's synthetic tables: `random` vectors (the worst case) or `clustered` ones (realistic).

`random`: isotropic random unit vectors and sentences from a 74-word vocabulary (bench/search.py). Nearest
neighbours of such vectors carry no structure an ANN index can use, and every full-text query word matches
~15 % of the rows: the worst case for both indexes, kept as such.

`clustered` (the headline): what a store of real memories looks like to the indexes.
- Centres: the real passage vectors (the query encoder's `embed`) of `CENTRES` real memory-like texts —
  LoCoMo dialogue turns and observations, MemoryBank user messages and replies (tests/data, licences there).
- Rows: noisy neighbours of a centre drawn uniformly, `v = t * c + sqrt(1 - t^2) * u`, so that cos(v, c) = t
  exactly; `t` is drawn from the cosines MEASURED between real distilled memories and the text they were
  distilled from (LoCoMo observations vs their evidence turn, `CALIBRATION` pairs); `u` is the unit part,
  orthogonal to `c`, of a draw from a Gaussian with the real vectors' mean and covariance. e5 vectors all lie
  in a narrow cone (two unrelated texts: cosine ~0.8); noise without that mean would put the rows on a
  wider sphere than real memories (row pairs ~0.58 instead of ~0.8) and make neighbours easier to tell apart.
- Queries: real questions (LoCoMo QA, MemoryBank probing questions) — texts not in the table, encoded by the
  real query encoder at search time.
- Text: a few of the centre text's own search tokens (a memory's words go with its meaning) plus words drawn
  from the real corpora's token frequencies (Zipf-distributed, as word frequencies are), Chinese included.
The encoded centres and calibration are cached under bench/out (a few minutes of encoding on 2 cores).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench._util import OUT

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CENTRES = 2_000
"""Real texts encoded as cluster centres (at 1 M rows, ~500 memories around each)."""
CALIBRATION = 200
"""LoCoMo (observation, evidence turn) pairs whose cosines give the rows' distribution of cosine to their centre."""
CENTRE_WORDS = (2, 6)
"""Search tokens of its centre's text a row carries (min, max), beside `OTHER_WORDS` drawn from the corpora."""
OTHER_WORDS = (4, 10)


@dataclass(frozen=True)
class RealSet:
    centres: np.ndarray
    """(CENTRES, dim) unit passage vectors of real texts."""
    centre_tokens: list[list[str]]
    cosines: np.ndarray
    """Measured cos(distilled memory, its source text): what a row's cosine to its centre is drawn from."""
    mean: np.ndarray
    """(dim,): the centres' mean vector (not unit: e5 vectors share a large common component)."""
    axes: np.ndarray
    """(dim, dim): standard normal noise @ axes has the covariance of the centres."""
    words: list[str]
    cumulative: list[float]
    """Cumulative token frequencies of `words` in the corpora (for `random.choices(cum_weights=...)`)."""
    queries: list[str]


def _locomo() -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """LoCoMo's dialogue turns, (observation, its first evidence turn) pairs, and questions."""
    turns, pairs, questions = [], [], []
    for sample in json.loads((DATA / "locomo" / "locomo10.json").read_text()):
        by_id = {}
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    by_id[turn["dia_id"]] = turn["text"]
                    turns.append(turn["text"])
        for session in sample["observation"].values():
            for facts in session.values():
                for text, evidence in facts:
                    first = (evidence if isinstance(evidence, str) else (evidence or [""])[0]).split(";")[0].strip()
                    if first in by_id:
                        pairs.append((text, by_id[first]))
        questions += [qa["question"] for qa in sample["qa"]]
    return turns, pairs, questions


def _memorybank() -> tuple[list[str], list[str]]:
    """MemoryBank's user messages and replies, and its probing questions."""
    texts = []
    for user in json.loads((DATA / "memorybank" / "memory_bank_cn.json").read_text()).values():
        for day in user["history"].values():
            for exchange in day:
                texts += [exchange["query"], exchange["response"]]
    questions = []
    for line in (DATA / "memorybank" / "probing_questions_cn.jsonl").read_text().splitlines():
        for asked in json.loads(line).values() if line.strip() else ():
            questions += asked
    return texts, questions


def realistic(embedder: Any, seed: int = 11) -> RealSet:
    """The real centres, calibration and vocabulary (encoded once per model, then read from bench/out)."""
    from chronicle.memory.search import tokenize

    turns, pairs, en_questions = _locomo()
    mb_texts, zh_questions = _memorybank()
    rng = random.Random(seed)
    pool = [t for t in dict.fromkeys(turns + [o for o, _ in pairs] + mb_texts) if tokenize(t)]
    chosen = rng.sample(pool, CENTRES)
    calibration = rng.sample(pairs, CALIBRATION)
    cache = OUT / f"search-centres-{embedder.model_name.replace('/', '_')}-{CENTRES}-{CALIBRATION}-{seed}.npz"
    if cache.exists():
        saved = np.load(cache)
        centres, cosines = saved["centres"], saved["cosines"]
    else:
        centres = embedder.embed(chosen)
        memories = embedder.embed([o for o, _ in calibration])
        sources = embedder.embed([s for _, s in calibration])
        cosines = np.sort(np.einsum("ij,ij->i", memories, sources))
        OUT.mkdir(exist_ok=True)
        np.savez(cache, centres=centres, cosines=cosines)
    mean = centres.mean(axis=0)
    centred = centres - mean
    _, spread, axes = np.linalg.svd(centred, full_matrices=False)
    counts: dict[str, int] = {}
    for text in turns + mb_texts:
        for token in tokenize(text):
            counts[token] = counts.get(token, 0) + 1
    words = sorted(counts, key=lambda w: -counts[w])
    cumulative = np.cumsum([counts[w] for w in words]).astype(float).tolist()
    questions = list(dict.fromkeys(en_questions + zh_questions))
    rng.shuffle(questions)
    return RealSet(centres=centres.astype(np.float32), centre_tokens=[tokenize(t) for t in chosen],
                   cosines=cosines, mean=mean.astype(np.float32),
                   axes=(spread[:, None] / np.sqrt(len(centres)) * axes).astype(np.float32),
                   words=words, cumulative=cumulative, queries=questions)


def clustered_vectors(nrng: np.random.Generator, m: int, real: RealSet) -> tuple[np.ndarray, np.ndarray]:
    """`m` unit vectors around centres drawn uniformly (see the module doc), and their centres' indexes."""
    centre = nrng.integers(0, len(real.centres), m)
    c = real.centres[centre]
    t = nrng.choice(real.cosines, m).astype(np.float32)[:, None]
    u = real.mean + nrng.standard_normal((m, real.axes.shape[0]), dtype=np.float32) @ real.axes
    u -= np.einsum("ij,ij->i", u, c)[:, None] * c
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = t * c + np.sqrt(1.0 - t * t) * u
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32), centre


def realistic_text(rng: random.Random, real: RealSet, centre: int) -> str:
    """Some of the centre's own tokens and Zipf-distributed corpus words, space-joined (already tokens)."""
    own = real.centre_tokens[centre]
    words = rng.sample(own, min(len(own), rng.randint(*CENTRE_WORDS)))
    words += rng.choices(real.words, cum_weights=real.cumulative, k=rng.randint(*OTHER_WORDS))
    rng.shuffle(words)
    return " ".join(words)


def describe(real: RealSet) -> dict[str, Any]:
    """What the clustered set was drawn from (bench output, docs/design/memory-search-scale.md)."""
    q = np.percentile(real.cosines, [5, 25, 50, 75, 95]).round(3).tolist()
    return {"centres": len(real.centres), "calibration_pairs": len(real.cosines),
            "cos_to_centre_p5_p25_p50_p75_p95": q, "vocabulary": len(real.words), "queries": len(real.queries)}
