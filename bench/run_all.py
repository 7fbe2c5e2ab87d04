"""Run every benchmark and rewrite the figures table in README.md between the bench markers.

`make bench` (or `python -m bench.run_all [--only ingest,search]`). Each bench writes
`bench/out/<name>.json`; a bench that fails is reported as such in the table, never skipped silently.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench._util import OUT, machine

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
BENCHES = ["ingest", "backfill", "context", "search", "embed", "locomo", "embedders", "memory_e2e", "redaction", "cli"]


def _fmt(value: float, unit: str) -> str:
    if unit == "s" and value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.3g} {unit}".strip()


def table(results: list[dict]) -> str:
    lines = [f"Measured on: {machine()}, {time.strftime('%Y-%m-%d')}.", "",
             "| bench | measure | ours | baseline (same run) | ratio | goal | met |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | — | failed: {r['error']} | | | | no |")
            continue
        lines.append(
            f"| {r['name']} | {r['measure']} | {_fmt(r['ours'], r['unit'])} | "
            f"{_fmt(r['baseline'], r['unit'])} ({r['baseline_name']}) | {r['ratio']:.2f}× | {r['goal']} | "
            f"{'yes' if r['met'] else 'no'} |"
        )
    return "\n".join(lines)


def _files(name: str) -> list[Path]:
    """`<name>.json` and `<name>-*.json` (not `embedders.json` for `embed`)."""
    return sorted(p for p in OUT.glob(f"{name}*.json") if p.stem == name or p.stem.startswith(f"{name}-"))


def collect(names: list[str]) -> list[dict]:
    results = []
    for name in names:
        files = _files(name)
        if not files:
            results.append({"name": name, "error": "no result file"})
        for f in files:
            results.append(json.loads(f.read_text()))
    return results


def rewrite_readme(body: str) -> None:
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"README.md has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{body}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated bench names")
    parser.add_argument("--no-run", action="store_true", help="only rebuild the table from bench/out")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or BENCHES
    failed = []
    if not args.no_run:
        for name in names:
            for old in _files(name):
                old.unlink()
            print(f"== bench/{name}", flush=True)
            proc = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=ROOT, check=False)
            if proc.returncode != 0:
                failed.append(name)
    rewrite_readme(table(collect(BENCHES)))
    print("README.md figures updated" + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
