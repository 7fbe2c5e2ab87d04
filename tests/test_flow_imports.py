"""A worker starts a fresh interpreter per flow run, so what a flow module imports is paid by every run, the
spread's child runs first (importing the flow module was ~10 s of a child's start-up on a loaded host).
Modules a run may not need are imported where they are used; this keeps them out of the entrypoints' import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
# Deployment → modules its entrypoint's import must not load: the `openai` SDK (and its HTTP stack) only when
# an LLM client is built, matplotlib only when a chart's stats changed, the vector store and embedding models
# only where memory is searched or distilled — and there by the first connection or encoding, so that a run
# refused or with nothing to do does not pay LanceDB's import (its REST client's models, ~2 s of CPU).
LAZY = ("openai", "httpx2", "matplotlib", "PIL", "numpy", "lancedb", "pyarrow", "polars", "torch",
        "sentence_transformers", "transformers", "pandas")
ARROW = ("numpy", "pyarrow")  # the raw-log batches (ingest) and the memory rows (distill) are Arrow
CASES = {"backfill-shard": LAZY, "backfill-weeks": LAZY, "weekly-chronicle": LAZY,
         "distill-memory": (*(m for m in LAZY if m not in ARROW), "lance_namespace"),
         "ingest": tuple(m for m in LAZY if m not in ARROW)}

# Imports each entrypoint in turn in one fresh interpreter, noting which of its modules were loaded before the
# import (by an entrypoint imported earlier) and after it. With none before, "after" is exactly what this
# entrypoint's own import loads, as in an interpreter of its own; otherwise the test probes it alone.
PROBE = """
import importlib, json, sys
found = {}
for deployment, (entrypoint, modules) in json.loads(sys.argv[1]).items():
    before = sorted(m for m in modules if m in sys.modules)
    module, _, name = entrypoint.rpartition(".")
    getattr(importlib.import_module(module), name)
    found[deployment] = {"before": before, "after": sorted(m for m in modules if m in sys.modules)}
print(json.dumps(found))
"""


def _entrypoints() -> dict[str, str]:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d["entrypoint"] for d in spec["deployments"]}


def _probe(deployments: list[str]) -> subprocess.CompletedProcess[str]:
    cases = {d: (_entrypoints()[d], CASES[d]) for d in deployments}
    return subprocess.run([sys.executable, "-c", PROBE, json.dumps(cases)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def probed() -> dict[str, dict[str, list[str]]]:
    """Every case in one interpreter (one start-up and one Prefect import instead of one per case); {} if that
    failed, so that each test probes its case alone and reports its own error."""
    probe = _probe(sorted(CASES))
    return json.loads(probe.stdout.splitlines()[-1]) if probe.returncode == 0 else {}


@pytest.mark.parametrize("deployment", sorted(CASES))
def test_the_entrypoint_does_not_import_what_a_run_may_not_need(deployment: str, probed) -> None:
    found = probed.get(deployment)
    if found is None or found["before"]:  # not probed, or not in an interpreter where none was loaded yet
        probe = _probe([deployment])
        assert probe.returncode == 0, probe.stderr[-3000:]
        found = json.loads(probe.stdout.splitlines()[-1])[deployment]
    assert found["before"] == []
    assert found["after"] == []
