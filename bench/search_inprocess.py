"""bench/search_inprocess: the issue-27 experiment "an in-process dense index" — measured, not wired in.

The store's dense leg is one LanceDB query (IVF index, ~4-5 ms of per-call cost before any scan). This bench
asks what a numpy index held in the process would save: the table's vectors loaded once (float32), a coarse k-means
partitioning (spherical, on a sample) stored partition by partition, and per query a probe of the nearest
partitions' vectors — exact cosines, so `ranked` needs no re-read of them.

Two modes (docs/design/memory-search-scale.md, "The in-process dense index: measured, not wired in"):
- `sweep`: recall@10 against the exact scan and CPU per query of the numpy probe alone, over the share of
  partitions probed, on the kept tables' vectors (`--data`, bench/search.py) and real questions;
- `bench`: `python -m bench.search` with the store's dense leg replaced by that probe for unfiltered queries
  (filtered ones keep LanceDB's path) — the same figures as bench/search, same-run baselines, so the two runs
  (`bench.search` alone and this) compare step by step. Only for measuring: it patches
  `chronicle.storage.memory.search` in this process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from threadpoolctl import threadpool_limits


def kmeans(matrix: np.ndarray, k: int, *, iters: int = 8, per_centre: int = 60, seed: int = 0) -> np.ndarray:
    """Spherical k-means (unit centroids, assignment by inner product) on a sample of `per_centre x k` rows."""
    rng = np.random.default_rng(seed)
    sample = np.ascontiguousarray(matrix[rng.choice(len(matrix), min(len(matrix), per_centre * k), replace=False)])
    centres = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(iters):
        assign = np.argmax(sample @ centres.T, axis=1)
        for j in range(k):
            members = sample[assign == j]
            if len(members):
                total = members.sum(0)
                centres[j] = total / np.linalg.norm(total)
    return centres


class Partitioned:
    """Rows grouped by their nearest centroid (one contiguous float32 block per partition)."""

    def __init__(self, matrix: np.ndarray, k: int, reduce: int = 0) -> None:
        self.centres = kmeans(matrix, k)
        assign = np.empty(len(matrix), np.int32)
        for start in range(0, len(matrix), 65_536):
            assign[start : start + 65_536] = np.argmax(matrix[start : start + 65_536] @ self.centres.T, axis=1)
        self.order = np.argsort(assign, kind="stable")
        self.rows = matrix[self.order]
        self.bounds = np.searchsorted(assign[self.order], np.arange(k + 1))
        # Optionally the probe scores `reduce` principal components only (4x fewer bytes at 96 of 384) and
        # re-scores its best `RERANK` rows on the full vectors.
        self.basis = None
        if reduce:
            picked = np.random.default_rng(1).choice(len(self.rows), min(len(self.rows), 20_000), replace=False)
            sample = self.rows[picked]
            _, _, axes = np.linalg.svd(sample - sample.mean(0), full_matrices=False)
            self.basis = np.ascontiguousarray(axes[:reduce].T)
            self.reduced = np.ascontiguousarray(self.rows @ self.basis)

    def probe(self, q: np.ndarray, share: float, top: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions (into the original matrix) and cosines of the best `top` rows of the probed partitions."""
        p = min(len(self.centres), max(1, round(len(self.centres) * share)))
        parts = np.argpartition(-(self.centres @ q), p - 1)[:p]
        b = self.bounds
        rows, qq = (self.rows, q) if self.basis is None else (self.reduced, q @ self.basis)
        sims = np.concatenate([rows[b[j] : b[j + 1]] @ qq for j in parts])
        keep = top if self.basis is None else max(top, RERANK)
        best = np.argpartition(-sims, keep)[:keep] if len(sims) > keep else np.arange(len(sims))
        starts = np.cumsum([0] + [b[j + 1] - b[j] for j in parts])
        seg = np.searchsorted(starts, best, side="right") - 1
        at = b[parts[seg]] + (best - starts[seg])
        if self.basis is None:
            return self.order[at], sims[best]
        exact = self.rows[at] @ q
        best = np.argpartition(-exact, top)[:top] if len(exact) > top else np.arange(len(exact))
        return self.order[at[best]], exact[best]


RERANK = 100
"""With `--reduce`: the probe's best rows by their reduced cosine that are re-scored on the full vectors."""


def partitions_for(n: int) -> int:
    return max(1, round(np.sqrt(n) / 2.5))


def query_vectors(count: int) -> np.ndarray:
    from bench.search_data import realistic
    from chronicle.memory.embedder import get_embedder
    from chronicle.settings import Settings

    embedder = get_embedder(Settings())
    real = realistic(embedder)
    embed = getattr(embedder, "embed_query", None) or (lambda q: embedder.embed([q])[0])
    return np.stack([embed(q) for q in real.queries[:count]]).astype(np.float32)


def sweep(data: Path, sizes: list[int], queries: int, shares: list[float], reduce: int) -> None:
    queries_m = query_vectors(queries)
    for n in sizes:
        matrix = np.ascontiguousarray(np.load(data / f"n{n}-clustered" / "vectors.npy"), dtype=np.float32)
        with threadpool_limits(1, user_api="blas"):
            t0 = time.process_time()
            exact = [set(np.argpartition(-(matrix @ q), 10)[:10].tolist()) for q in queries_m]
            scan_ms = (time.process_time() - t0) / len(queries_m) * 1e3
            t0 = time.perf_counter()
            index = Partitioned(matrix, partitions_for(n), reduce)
            build_s = time.perf_counter() - t0
            print(f"{n} rows: exact scan {scan_ms:.2f} ms CPU/query; {len(index.centres)} partitions built in "
                  f"{build_s:.1f} s; reduced to {reduce or 'all'} dims; load {os.getloadavg()[0]:.1f}", flush=True)
            for share in shares:
                t0 = time.process_time()
                found = [set(index.probe(q, share, 10)[0].tolist()) for q in queries_m]
                ms = (time.process_time() - t0) / len(queries_m) * 1e3
                recall = np.mean([len(a & b) / 10 for a, b in zip(exact, found, strict=True)])
                print(f"  probe {share:.0%} of partitions: recall@10 {recall:.3f}, {ms:.2f} ms CPU/query", flush=True)


def patch(share: float, reduce: int) -> None:
    """Replace the store's dense leg, for unfiltered queries, by the numpy probe over a copy of the table's vectors
    loaded on the first query of each table version; `ranked` is told the cosines are exact (no re-read)."""
    import chronicle.storage.memory.search as search
    import chronicle.storage.memory.store as store
    from chronicle.storage.memory.arrow import vectors

    lance_query, lance_ranked = search.dense_query, search.ranked
    built: dict[tuple[str, int], dict[str, Any]] = {}

    async def build(table: Any) -> dict[str, Any]:
        t0 = time.perf_counter()
        data = table.query().select(["id", "importance", "vector"]).with_row_id()
        data = await data.limit(await table.count_rows()).to_arrow()
        index = Partitioned(np.ascontiguousarray(vectors(data)), partitions_for(data.num_rows), reduce)
        print(f"[in-process index] {data.num_rows} rows, {len(index.centres)} partitions, built in "
              f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
        return {"index": index, "cols": data.select(["id", "importance", "_rowid"])}

    class Found:
        def __init__(self, rows: pa.Table) -> None:
            self.rows = rows

        async def to_arrow(self) -> pa.Table:
            return self.rows

    async def dense_query(table: Any, qvec: np.ndarray, where: str | None, pool: int, *, ann: int,
                          columns: list[str]) -> Any:
        if where is not None:
            return await lance_query(table, qvec, where, pool, ann=ann, columns=columns)
        # Keyed by what it reads (the table's folder and version): the bench's two stores share one copy.
        key = (await table.uri(), await table.version())
        if key not in built:
            built[key] = await build(table)
        at, sims = built[key]["index"].probe(qvec, share, pool)
        out = built[key]["cols"].take(pa.array(at))
        return Found(out.append_column("_distance", pa.array(1.0 - sims, pa.float32())))

    def ranked(table: Any, embed_query: Any, query: str, where: str | None, limit: int, mode: Any, *, ann: int,
               weights: Any) -> Any:
        return lance_ranked(table, embed_query, query, where, limit, mode, ann=ann and where is not None,
                            weights=weights)

    search.dense_query, search.ranked, store.ranked = dense_query, ranked, ranked  # type: ignore[assignment]
    # One BLAS thread for the probe, set once: `threadpool_limits` as a context costs ~0.3 ms per query.
    threadpool_limits(1, user_api="blas")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["sweep", "bench"])
    parser.add_argument("--data", type=Path, required=True, help="bench/search.py's kept tables (--data there)")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--shares", default="0.1,0.2,0.3,0.4", help="sweep: shares of partitions probed")
    parser.add_argument("--share", type=float, default=0.4, help="bench: share of partitions probed")
    parser.add_argument("--reduce", type=int, default=0, help="probe on this many principal components")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.mode == "sweep":
        sweep(args.data, sizes, args.queries, [float(s) for s in args.shares.split(",")], args.reduce)
        return
    patch(args.share, args.reduce)
    from bench import search as bench_search

    sys.argv = ["bench.search", "--sizes", args.sizes, "--vectors", "clustered", "--queries", str(args.queries),
                "--reps", str(args.reps), "--data", str(args.data)]
    bench_search.main()


if __name__ == "__main__":
    main()
