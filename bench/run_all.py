"""Run every benchmark and rewrite the figures table in bench/README.md between the bench markers.

`make bench` (or `python -m bench.run_all [--only ingest,search] [--repeat 3]`). Each bench writes
`bench/out/<name>.json` (and `<name>-*.json` for further measures); a bench that fails is reported as such in
the table, never skipped silently. The same for every bench, whoever wrote it:

- **repetitions**: each bench runs `--repeat` times (`RUNS` lowers it for benches whose figure is a
  deterministic quality score or that take many minutes); every run's files are kept in `bench/out/runs/`,
  and the table shows the run with the median ratio — ours and its own same-run baseline, never a mix of
  runs — with the spread of the ratios beside it;
- **machine load**: each run is wrapped in `bench._util.LoadSampler` (1-minute load average, share of the
  CPU used by processes other than the bench); a figure measured while others held more than
  `BUSY_SHARE` of the CPU is marked **busy** in the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench._util import BUSY_SHARE, OUT, LoadSampler, machine

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "bench" / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
BENCHES = ["ingest", "backfill", "offline", "context", "search", "embed", "locomo", "embedders", "memory_e2e",
           "redaction", "cli", "scale", "faithfulness", "compaction", "desk", "mcp",
           "memory_decisions", "llm_slots", "long_lines"]
RUNS = {"locomo": 1, "embedders": 1, "memory_e2e": 1, "redaction": 1, "offline": 1, "scale": 1, "faithfulness": 1,
        "compaction": 1, "desk": 1, "mcp": 1, "memory_decisions": 1,
        "llm_slots": 1, "long_lines": 1}
"""Runs of benches whose figure is deterministic (hit@k, recall), that take many minutes, or that take the median
of their own repetitions inside one run (offline, scale); others: `--repeat`."""
RUNS_DIR = OUT / "runs"


def _fmt(value: float, unit: str) -> str:
    if unit == "s" and value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.3g} {unit}".strip()


def _load(r: dict) -> str:
    if "others_cpu_share" not in r or r["others_cpu_share"] is None:
        return "not recorded"
    text = f"load {r['load_avg_1m']:.1f}, others {100 * r['others_cpu_share']:.0f}% CPU, {r.get('measured', '')}"
    return f"**busy**: {text}" if r.get("busy") else text


def _runs(r: dict) -> str:
    ratios = r.get("run_ratios") or []
    if len(ratios) < 2:
        return str(len(ratios) or 1)
    return f"{len(ratios)} ({min(ratios):.2f}–{max(ratios):.2f}×)"


def table(results: list[dict]) -> str:
    lines = [f"Measured on: {machine()}, {time.strftime('%Y-%m-%d')}. Each figure is the run with the median ratio "
             f"of `runs` (ratio range in brackets), with its baseline from the same run; load = 1-minute load "
             f"average and share of the CPU taken by other processes while it ran (**busy** above "
             f"{100 * BUSY_SHARE:.0f}%).", "",
             "| bench | measure | ours | baseline (same run) | ratio | goal | met | runs | machine load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            shown = r["error"] if r.get("missing") else f"failed: {r['error']}"
            lines.append(f"| {r['name']} | — | {shown} | | | | — | | |")
            continue
        lines.append(
            f"| {r['name']} | {r['measure']} | {_fmt(r['ours'], r['unit'])} | "
            f"{_fmt(r['baseline'], r['unit'])} ({r['baseline_name']}) | {r['ratio']:.2f}× | {r['goal']} | "
            f"{'yes' if r['met'] else 'no'} | {_runs(r)} | {_load(r)} |"
        )
    return "\n".join(lines)


def _files(name: str) -> list[Path]:
    """`<name>.json` and `<name>-*.json` (not `embedders.json` for `embed`)."""
    return sorted((p for p in OUT.glob(f"{name}*.json") if p.stem == name or p.stem.startswith(f"{name}-")),
                  key=lambda p: (p.stem != name, p.stem))


def collect(names: list[str], measured: list[str]) -> list[dict]:
    """The results of `names` in table order; a bench not in `measured` (not run this time: `--only`) keeps the
    README rows it has, even when an older result file of it is lying in bench/out (git keeps no result files)."""
    results = []
    old = _old_rows()
    for name in names:
        if name not in measured:
            kept = [row for row in old if row == name or row.startswith(f"{name}-")] or [name]
            results += [{"name": row, "missing": True, "error": "not run this time"} for row in kept]
            continue
        files = _files(name)
        if not files:
            results.append({"name": name, "missing": True,
                            "error": f"no result file: not measured by this table's run (`python -m bench.{name}`; "
                                     f"figures from its last run are in the notes below)"})
        for f in files:
            results.append(json.loads(f.read_text()))
    return results


def _old_rows() -> dict[str, list[str]]:
    """README table rows by bench name, as they are now (for benches not run this time: `--only`)."""
    text = README.read_text()
    if START not in text:
        return {}
    rows: dict[str, list[str]] = {}
    for line in text.split(START, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("bench", "---") and not set(cells[0]) <= {"-"}:
            if len(cells) < 9:  # a row of the table before runs and load were recorded
                line = line.rstrip().rstrip("|") + "| — | not recorded (earlier run) |"
            rows.setdefault(cells[0], []).append(line)
    return rows


def merged_table(results: list[dict]) -> str:
    """The table of `results`; a bench with no result file keeps its current README row(s), if any."""
    old = _old_rows()
    body = table([r for r in results if "error" not in r or r["name"] not in old]).splitlines()
    order = {r["name"]: i for i, r in enumerate(results)}
    rows = [(order.get(line.split("|")[1].strip(), 0), line) for line in body[4:]]
    rows += [(order[name], line) for name, lines in old.items() if name in order
             and any(r["name"] == name and "error" in r for r in results) for line in lines]
    return "\n".join(body[:4] + [line for _, line in sorted(rows, key=lambda item: item[0])])


def rewrite_readme(body: str) -> None:
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{README} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{body}\n{END}{tail}")


def run_bench(name: str, repeat: int) -> bool:
    """Run one bench `repeat` times under a load sampler; keep each run's files, publish the median run's."""
    for old in _files(name):
        old.unlink()
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    for old in RUNS_DIR.glob(f"{name}*.json"):
        old.unlink()
    by_stem: dict[str, list[dict]] = {}
    ok = True
    for i in range(repeat):
        print(f"== bench/{name} (run {i + 1}/{repeat})", flush=True)
        with LoadSampler() as sampler:
            proc = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=ROOT, check=False)
        load = sampler.record()
        ok = ok and proc.returncode == 0
        for f in _files(name):
            data = {**json.loads(f.read_text()), **load, "run": i + 1, "measured": time.strftime("%Y-%m-%d")}
            (RUNS_DIR / f"{f.stem}.{i + 1}.json").write_text(json.dumps(data, indent=2, default=str))
            by_stem.setdefault(f.stem, []).append(data)
            f.unlink()
    for stem, runs in by_stem.items():
        ranked = sorted(runs, key=lambda r: (r["ratio"] != r["ratio"], r["ratio"]))  # NaN last
        chosen = ranked[(len(ranked) - 1) // 2]
        summary = {**chosen, "run_ratios": [r["ratio"] for r in runs], "run_ours": [r["ours"] for r in runs],
                   "run_baselines": [r["baseline"] for r in runs], "runs_busy": sum(bool(r.get("busy")) for r in runs)}
        (OUT / f"{stem}.json").write_text(json.dumps(summary, indent=2, default=str))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated bench names")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each bench (RUNS overrides, lower only)")
    parser.add_argument("--no-run", action="store_true", help="only rebuild the table from bench/out")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or BENCHES
    failed = []
    if not args.no_run:
        for name in names:
            if not run_bench(name, min(args.repeat, RUNS.get(name, args.repeat))):
                failed.append(name)
    rewrite_readme(merged_table(collect(BENCHES, names)))
    print("bench/README.md figures updated" + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
