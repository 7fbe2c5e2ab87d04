"""bench/startup: what importing each deployment's entrypoint costs a fresh flow-run process.

A process worker starts a new interpreter for every flow run (the backfill spread's child runs included), and
that interpreter imports the flow's module before the flow does anything. Prefect itself is already imported by
then (the engine loads the entrypoint), so the figure is the import of the entrypoint with Prefect loaded first,
from `python -X importtime` (the entrypoint module's cumulative time), median of `--repeat` fresh processes per
deployment, interleaved; Prefect's own import in the same processes is shown beside it. `--before PATH` (a
`git archive` of an earlier commit) measures that checkout too, interleaved with this one in the same run, and is
then the baseline.

    python -m bench.startup [--repeat 7] [--before PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from bench._util import load_sampler, result

REPO = Path(__file__).resolve().parents[1]
_LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \|\s?(\s*)(\S+)")


def entrypoints(tree: Path) -> dict[str, str]:
    spec = yaml.safe_load((tree / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d["entrypoint"].rpartition(".")[0] for d in spec["deployments"]}


def import_ms(tree: Path, module: str) -> tuple[float, float, int]:
    """(Prefect's import, then the module's, in ms; modules loaded) in one fresh interpreter."""
    code = f"import prefect, prefect.engine, sys; import {module}; print(len(sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    top: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        m = _LINE.match(line)
        if m and not m.group(2):  # a top-level import of the -c line
            top[m.group(3)] = top.get(m.group(3), 0) + int(m.group(1))
    prefect_us = top.get("prefect", 0) + top.get("prefect.engine", 0)
    return prefect_us / 1000, top.get(module, 0) / 1000, int(proc.stdout.split()[-1])


def _medians(runs: list[tuple[float, float, int]]) -> dict[str, float]:
    return {"module_ms": statistics.median(r[1] for r in runs), "prefect_ms": statistics.median(r[0] for r in runs),
            "modules": runs[-1][2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, default=None, help="an earlier checkout to compare with")
    args = parser.parse_args()
    trees = {"after": REPO} | ({"before": args.before.resolve()} if args.before else {})
    deployments = entrypoints(REPO)
    samples: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    with load_sampler() as load:
        for _ in range(args.repeat):
            for name, module in deployments.items():
                for label, tree in trees.items():  # interleaved: both trees see the same load
                    samples.setdefault((label, name), []).append(import_ms(tree, module))
    record = load.record()
    per = {label: {name: _medians(samples[(label, name)]) for name in deployments} for label in trees}
    for name in deployments:
        cells = "  ".join(f"{label} {per[label][name]['module_ms']:6.0f} ms ({per[label][name]['modules']} modules)"
                          for label in trees)
        print(f"{name:18s} {cells}  prefect {per['after'][name]['prefect_ms']:5.0f} ms")
    after = per["after"]["backfill-shard"]
    before = per.get("before", {}).get("backfill-shard")
    result("startup", measure="import of the backfill-shard entrypoint after Prefect, fresh process (median)",
           ours=after["module_ms"], baseline=(before or after)["module_ms"] if before else after["prefect_ms"],
           baseline_name="the same import in --before, same run" if before else "Prefect's own import, same runs",
           unit="ms", goal="report", ok=True, extra={"trees": {k: str(v) for k, v in trees.items()},
                                                     "repeat": args.repeat, "deployments": per, "load": record})
    print(f"load: {record['load_avg_1m']:.1f} (max {record['load_avg_1m_max']:.1f}), "
          f"others' CPU share {record['others_cpu_share']:.2f}")


if __name__ == "__main__":
    main()
