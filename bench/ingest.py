"""bench/ingest: 300 k JSONL lines through Chronicle's ingest vs DuckDB's own `read_json` on the same file.

Each side runs in its own fresh process so its peak RSS is its own; the two alternate `--repeat` times
(so a burst of load hits both) and each figure is the median. Goal: ≤ 1.3× DuckDB native time, peak RSS
≤ 2 GB. `--profile` prints a pyinstrument profile of one ingest instead.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from bench._util import load_sampler, result, run_py

TYPES = ["message"] * 12 + ["enrollment", "ae", "sae", "deviation", "query", "decision", "visit"]


def make_file(path: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, 8)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            ts = start + timedelta(seconds=i * 60 + rng.randint(0, 59))
            fmt = rng.random()
            stamp = ts.isoformat() + ("+08:00" if fmt < 0.8 else "Z" if fmt < 0.9 else "")
            rec = {"project_id": f"P{i % 3}", "ts": stamp, "actor": f"CRC-{rng.randint(1, 40)}",
                   "type": rng.choice(TYPES), "content": f"受试者 S-{rng.randint(1, 999):03d} 访视记录 {i}",
                   "site": f"site-{rng.randint(1, 9)}"}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


OURS = """
import json, os, resource, time
os.environ["CHRONICLE_HOME"] = {home!r}
from pathlib import Path
from services.ingest import FileIngestor
from chronicle.settings import Settings
from storage.db import connect
s = Settings()
with connect(s):
    pass  # create + migrate the database outside the timed part
profiler = None
if {profile!r}:
    from pyinstrument import Profiler
    profiler = Profiler()
    profiler.start()
c0, t0 = time.process_time(), time.perf_counter()
r = FileIngestor(s).ingest(Path({file!r}))
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
if profiler:
    profiler.stop()
    import sys
    print(profiler.output_text(unicode=False, color=False), file=sys.stderr)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "cpu_s": cpu, "rows": r.entries_added, "rss_mb": rss}}))
"""

NATIVE = """
import json, resource, time, duckdb
conn = duckdb.connect({db!r})
conn.execute("SET enable_progress_bar = false")
c0, t0 = time.process_time(), time.perf_counter()
conn.execute("CREATE TABLE t AS SELECT * FROM read_json({file!r}, format='newline_delimited')")
n = conn.execute("SELECT count(*) FROM t").fetchall()[0][0]
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "cpu_s": cpu, "rows": n, "rss_mb": rss}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print a pyinstrument profile of one ingest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "big.jsonl"
        make_file(file, args.lines)
        size_mb = file.stat().st_size / 1e6
        if args.profile:
            import subprocess
            import sys

            code = OURS.format(home=str(Path(tmp) / "home-profile"), file=str(file), profile=True)
            subprocess.run([sys.executable, "-c", code], check=True)
            return
        natives, ours_runs = [], []
        with load_sampler() as sampler:
            for i in range(args.repeat):
                natives.append(json.loads(run_py(NATIVE.format(db=str(Path(tmp) / f"native{i}.duckdb"),
                                                               file=str(file)))))
                ours_runs.append(json.loads(run_py(OURS.format(home=str(Path(tmp) / f"home{i}"), file=str(file),
                                                               profile=False))))
    for run in natives + ours_runs:
        assert run["rows"] == args.lines, run

    def median(runs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    native_s, ours_s = median(natives, "seconds"), median(ours_runs, "seconds")
    ours_rss, native_rss = max(r["rss_mb"] for r in ours_runs), max(r["rss_mb"] for r in natives)
    print(f"{args.lines:,} lines, {size_mb:.0f} MB, median of {args.repeat}: ours {ours_s:.2f}s "
          f"(CPU {median(ours_runs, 'cpu_s'):.2f}s) / {ours_rss:.0f} MB peak, duckdb read_json {native_s:.2f}s "
          f"(CPU {median(natives, 'cpu_s'):.2f}s) / {native_rss:.0f} MB peak")
    ratio = ours_s / native_s
    result("ingest", measure=f"ingest {args.lines:,} JSONL lines", ours=ours_s, baseline=native_s,
           baseline_name="duckdb read_json", unit="s", goal="<=1.3x, RSS<=2GB",
           ok=ratio <= 1.3 and ours_rss <= 2048,
           extra={"ours_rss_mb": ours_rss, "native_rss_mb": native_rss, "lines": args.lines, "repeat": args.repeat,
                  "ours_runs_s": [r["seconds"] for r in ours_runs], "native_runs_s": [r["seconds"] for r in natives],
                  "pair_ratios": [o["seconds"] / n["seconds"] for o, n in zip(ours_runs, natives, strict=True)],
                  "ours_cpu_s": median(ours_runs, "cpu_s"), "native_cpu_s": median(natives, "cpu_s"),
                  **sampler.record()})


if __name__ == "__main__":
    main()
