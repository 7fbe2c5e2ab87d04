"""bench/ingest: 300 k JSONL lines through Chronicle's ingest vs DuckDB's own `read_json` on the same file.

`--files N`: N one-line JSONL files in one folder, read the way the `ingest` flow reads them (discover, batches
of `CHRONICLE_INGEST_BATCH_FILES`, one write window per batch) vs DuckDB's `read_json` of the same glob.
`--notes N`: N daily notes (`memory/YYYY-MM-DD.md`) vs DuckDB's `read_text` of the glob. Goal for both: ≤ 10×.

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
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
from chronicle.storage.db import connect
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


def make_files(folder: Path, n: int, notes: bool) -> str:
    """`n` small files in `folder`; returns the glob DuckDB reads them with."""
    rng = random.Random(2)
    start = datetime(2020, 1, 1, 9)
    if notes:
        memory = folder / "memory"
        memory.mkdir(parents=True)
        for i in range(n):
            day = (start + timedelta(days=i)).date()
            (memory / f"{day.isoformat()}.md").write_text(
                f"# {day}\n\n## 进展\n\n- 受试者 S-{rng.randint(1, 999):03d} 访视完成\n- 决定: 方案 v{i % 7}\n\n"
                f"今天的备注 {i}。\n", encoding="utf-8")
        return str(memory / "*.md")
    for i in range(n):
        ts = start + timedelta(minutes=i)
        (folder / f"session-{i:05d}.jsonl").write_text(json.dumps(
            {"project_id": f"P{i % 3}", "ts": ts.isoformat() + "+08:00", "actor": "assistant",
             "type": "message", "content": f"会话 {i}"}, ensure_ascii=False) + "\n", encoding="utf-8")
    return str(folder / "*.jsonl")


OURS_FILES = """
import json, os, resource, time
os.environ["CHRONICLE_HOME"] = {home!r}
from pathlib import Path
from chronicle.ingest.batches import file_batches
from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
from chronicle.storage.db import connect
s = Settings()
with connect(s):
    pass  # create + migrate the database outside the timed part
c0, t0 = time.process_time(), time.perf_counter()
files, _ = discover([Path({folder!r})])
ing, rows, batches = FileIngestor(s), 0, file_batches([(str(f), f.stat().st_size) for f in files], s.ingest.batch_files)
for batch in batches:
    rows += sum(r.entries_added for r in ing.ingest_many([Path(p) for p in batch]))
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "cpu_s": cpu, "rows": rows, "files": len(files), "batches": len(batches),
                  "rss_mb": rss}}))
"""

NATIVE_FILES = """
import json, resource, time, duckdb
conn = duckdb.connect({db!r})
conn.execute("SET enable_progress_bar = false")
c0, t0 = time.process_time(), time.perf_counter()
if {notes!r}:
    conn.execute("CREATE TABLE t AS SELECT * FROM read_text({glob!r})")
else:
    conn.execute("CREATE TABLE t AS SELECT * FROM read_json({glob!r}, format='newline_delimited', filename=true)")
n = conn.execute("SELECT count(*) FROM t").fetchall()[0][0]
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": dt, "cpu_s": cpu, "rows": n, "rss_mb": rss}}))
"""


def many_files(n: int, repeat: int, notes: bool) -> None:
    what = "daily notes" if notes else "one-line JSONL files"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        glob = make_files(folder, n, notes)
        natives, ours_runs = [], []
        with load_sampler() as sampler:
            for i in range(repeat):
                natives.append(json.loads(run_py(NATIVE_FILES.format(db=str(Path(tmp) / f"native{i}.duckdb"),
                                                                     glob=glob, notes=notes))))
                ours_runs.append(json.loads(run_py(OURS_FILES.format(home=str(Path(tmp) / f"home{i}"),
                                                                     folder=str(folder)))))
    for run in ours_runs:
        assert run["files"] == n and run["rows"] >= n, run
    native_s = statistics.median(r["seconds"] for r in natives)
    ours_s = statistics.median(r["seconds"] for r in ours_runs)
    print(f"{n:,} {what}, median of {repeat}: ours {ours_s:.2f}s in {ours_runs[0]['batches']} batches "
          f"(CPU {statistics.median(r['cpu_s'] for r in ours_runs):.2f}s), duckdb {native_s:.2f}s")
    name = "ingest_notes" if notes else "ingest_files"
    result(name, measure=f"ingest {n:,} {what}", ours=ours_s, baseline=native_s,
           baseline_name="duckdb read_text of the glob" if notes else "duckdb read_json of the glob", unit="s",
           goal="<=10x", ok=ours_s / native_s <= 10,
           extra={"files": n, "repeat": repeat, "batches": ours_runs[0]["batches"],
                  "ours_runs_s": [r["seconds"] for r in ours_runs], "native_runs_s": [r["seconds"] for r in natives],
                  "ours_cpu_s": statistics.median(r["cpu_s"] for r in ours_runs), **sampler.record()})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print a pyinstrument profile of one ingest")
    parser.add_argument("--files", type=int, default=0, help="N one-line JSONL files instead of one large file")
    parser.add_argument("--notes", type=int, default=0, help="N daily notes instead of one large file")
    args = parser.parse_args()
    if args.files or args.notes:
        many_files(args.files or args.notes, args.repeat, notes=bool(args.notes))
        return
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
