"""bench/input_rules: what the input rules cost the SQL stage of ingest — the duplicate-key check (one
`json_keys` per line) and the daylight-saving check (one more `timezone()` per local time) — against the same
SQL without them, in the same run (alternating, median of `--repeat`, load recorded).

Worst case on purpose: every line's `ts` is naive (project-local, so every line gets the DST check), in a zone
with daylight saving (Europe/Berlin). The baseline is this SQL with the two conditions taken out of pass 1.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from bench._util import load_sampler, result

RULES = " AND dst IS NULL AND len(keys) = list_unique(keys)"


def make_file(path: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, 8)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            ts = start + timedelta(seconds=i * 97 + rng.randint(0, 59))
            fh.write(json.dumps({"project_id": f"P{i % 3}", "ts": ts.isoformat(sep=" "), "actor": f"CRC-{i % 40}",
                                 "type": "message", "content": f"受试者 S-{i % 999:03d} 访视记录 {i}",
                                 "site": f"site-{i % 9}"}, ensure_ascii=False) + "\n")


def one_run(file: Path, home: Path, with_rules: bool) -> tuple[float, float, int]:
    """(wall s, CPU s, rows stored) of the SQL stage for the whole file."""
    from chronicle.ingest.lines import split_lines
    from chronicle.settings import Settings
    from chronicle.storage import ingest_sql
    from chronicle.storage.db import connect

    settings = Settings(home=home, timezone="Europe/Berlin")
    original = ingest_sql.good_lines_sql

    def without_rules(*args: object, **kwargs: object) -> str:
        sql = original(*args, **kwargs)
        assert RULES in sql, "the rules' conditions moved: update bench/input_rules.py"
        return sql.replace(RULES, "")

    buffer, offsets = split_lines(file.read_bytes())
    table = ingest_sql.buffer_table(buffer, offsets, 1)
    ingest_sql.good_lines_sql = original if with_rules else without_rules
    try:
        with connect(settings) as conn:
            c0, t0 = time.process_time(), time.perf_counter()
            ingest_sql.store_lines(conn, table, source="jsonl", source_file=str(file), default_project=None,
                                   default_tz=settings.timezone, project_tz={}, column_map={},
                                   max_line_bytes=settings.ingest.max_line_bytes, fresh=True)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows = conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0]
    finally:
        ingest_sql.good_lines_sql = original
    return wall, cpu, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "naive.jsonl"
        make_file(file, args.lines)
        runs: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
        with load_sampler() as sampler:
            for i in range(args.repeat):
                for rules in (False, True):
                    runs[rules].append(one_run(file, Path(tmp) / f"h{i}{rules}", rules))
    # Lines in a DST gap or fold are refused by the rules: a few per year of data, never more.
    assert all(r[2] == args.lines for r in runs[False]) and all(r[2] <= args.lines for r in runs[True])
    ours, base = (statistics.median(r[0] for r in runs[k]) for k in (True, False))
    ours_cpu, base_cpu = (statistics.median(r[1] for r in runs[k]) for k in (True, False))
    print(f"{args.lines:,} naive lines (Europe/Berlin), SQL stage, median of {args.repeat}: with the rules "
          f"{ours:.2f}s (CPU {ours_cpu:.2f}s), without {base:.2f}s (CPU {base_cpu:.2f}s); refused by the rules: "
          f"{args.lines - runs[True][0][2]}")
    result("input_rules", measure=f"ingest SQL stage, {args.lines:,} naive-local JSONL lines", ours=ours,
           baseline=base, baseline_name="same SQL without the duplicate-key and DST checks", unit="s",
           goal="<=1.25x", ok=ours / base <= 1.25,
           extra={"ours_cpu_s": ours_cpu, "baseline_cpu_s": base_cpu, "cpu_ratio": ours_cpu / base_cpu,
                  "repeat": args.repeat, **sampler.record()})


if __name__ == "__main__":
    main()
