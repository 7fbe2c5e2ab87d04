"""bench/compaction: what a long history of short write windows costs the embedded file, with and without
compaction (storage/compaction.py).

Two homes get the same `--windows` write windows, each one `transaction()` storing 16 weekly reports (the
offline engine's, real report rows with their versions) as a backfill's group commit does. In one home a
flow's end follows every `--per-flow` windows (`publish_snapshot`, which compacts when due); the other
home never compacts (the baseline: the file as DuckDB 1.4 leaves it; its snapshot is not taken, which
only makes the baseline cheaper). Windows alternate between the homes so machine load hits both alike.
Reported: the median window time over the last `--tail` windows of each home, the files' sizes, the
compactions done and their total time. Goal: the window time stays bounded (the last windows <= 1.3x the
first ones: between two compactions the surplus grows back up to its threshold).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import LoadSampler
from bench._weekly_util import bench_env, offline_reports, synthetic_entries, write_result

WEEKS_PER_WINDOW = 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=600)
    parser.add_argument("--per-flow", type=int, default=16, help="write windows per flow run (then a flow's end)")
    parser.add_argument("--tail", type=int, default=100, help="windows at each end whose median is reported")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    bench_env(root / "unused")

    from chronicle.settings import Settings
    from chronicle.storage import reports
    from chronicle.storage.db import transaction
    from chronicle.storage.snapshot import publish_snapshot

    homes = {"compacted": Settings(home=root / "compacted"), "plain": Settings(home=root / "plain")}
    template = offline_reports(synthetic_entries("BENCH", WEEKS_PER_WINDOW))
    times: dict[str, list[float]] = {name: [] for name in homes}
    compactions: list[float] = []
    with LoadSampler() as load:
        for i in range(args.windows):
            items = [(dataclasses.replace(r, project_id=f"P{i:05d}"), False, "bench", None) for r in template]
            for name, settings in homes.items():
                t0 = time.perf_counter()
                with transaction(settings) as conn:
                    reports.save_reports(conn, items)
                times[name].append(1000 * (time.perf_counter() - t0))
            if (i + 1) % args.per_flow == 0:
                info = publish_snapshot(homes["compacted"])
                if info is not None and info.compacted is not None:
                    compactions.append(info.compacted.seconds)
    sizes = {name: s.db_path.stat().st_size for name, s in homes.items()}
    info = publish_snapshot(homes["plain"])  # only now: the never-compacted file, copied compact once
    assert info is not None and info.compacted is not None, "the plain home was not fragmented"
    compact_size = info.compacted.bytes_after
    first = {n: statistics.median(t[:args.tail]) for n, t in times.items()}
    last = {n: statistics.median(t[-args.tail:]) for n, t in times.items()}
    for name in homes:
        print(f"{name}: window median first {args.tail} {first[name]:.1f} ms, last {args.tail} {last[name]:.1f} ms; "
              f"file {sizes[name] / 1e6:.1f} MB")
    print(f"compactions: {len(compactions)}, {sum(compactions):.2f} s in all "
          f"({1000 * sum(compactions) / args.windows:.2f} ms per window); the plain file copied compact: "
          f"{compact_size / 1e6:.1f} MB")
    ok = last["compacted"] <= 1.3 * first["compacted"]
    write_result("compaction", ours=last["compacted"], baseline=last["plain"], unit="ms",
                 measure=f"median write window (16 reports) after {args.windows} windows, compaction at each "
                         f"flow's end ({args.per_flow} windows per flow)",
                 baseline_name="the same windows, never compacted (DuckDB 1.4 as is)",
                 goal="last windows <= 1.3x the first (bounded)", met=ok,
                 extra={"windows": args.windows, "per_flow": args.per_flow, "first_ms": first, "last_ms": last,
                        "file_bytes": sizes, "compact_bytes": compact_size, "compactions": len(compactions),
                        "compaction_s": sum(compactions), "load": load.record(),
                        "load_avg_1m": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
