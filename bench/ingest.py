"""bench/ingest: 1 M JSONL lines through Chronicle's ingest vs DuckDB's own `read_json` on the same file.

Each side runs in its own fresh process so its peak RSS is its own. Goal: ≤ 1.3× DuckDB native
time, peak RSS ≤ 2 GB.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from bench._util import result, run_py

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
t0 = time.perf_counter()
r = FileIngestor(s).ingest(Path({file!r}))
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "rows": r.entries_added, "rss_mb": rss}}))
"""

NATIVE = """
import json, resource, time, duckdb
conn = duckdb.connect({db!r})
conn.execute("SET enable_progress_bar = false")
t0 = time.perf_counter()
conn.execute("CREATE TABLE t AS SELECT * FROM read_json({file!r}, format='newline_delimited')")
n = conn.execute("SELECT count(*) FROM t").fetchall()[0][0]
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "rows": n, "rss_mb": rss}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "big.jsonl"
        make_file(file, args.lines)
        size_mb = file.stat().st_size / 1e6
        native = json.loads(run_py(NATIVE.format(db=str(Path(tmp) / "native.duckdb"), file=str(file))))
        ours = json.loads(run_py(OURS.format(home=str(Path(tmp) / "home"), file=str(file))))
    assert ours["rows"] == native["rows"] == args.lines, (ours, native)
    print(f"{args.lines:,} lines, {size_mb:.0f} MB: ours {ours['seconds']:.2f}s / {ours['rss_mb']:.0f} MB peak, "
          f"duckdb read_json {native['seconds']:.2f}s / {native['rss_mb']:.0f} MB peak")
    ratio = ours["seconds"] / native["seconds"]
    result("ingest", measure=f"ingest {args.lines:,} JSONL lines", ours=ours["seconds"], baseline=native["seconds"],
           baseline_name="duckdb read_json", unit="s", goal="<=1.3x, RSS<=2GB",
           ok=ratio <= 1.3 and ours["rss_mb"] <= 2048,
           extra={"ours_rss_mb": ours["rss_mb"], "native_rss_mb": native["rss_mb"], "lines": args.lines})


if __name__ == "__main__":
    main()
