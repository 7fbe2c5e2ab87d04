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
# only where memory is searched or distilled.
LAZY = ("openai", "httpx2", "matplotlib", "PIL", "numpy", "lancedb", "pyarrow", "polars", "torch",
        "sentence_transformers", "transformers", "pandas")
CASES = {"backfill-shard": LAZY, "backfill-weeks": LAZY, "weekly-chronicle": LAZY}

PROBE = """
import importlib, json, sys
module, _, name = sys.argv[1].rpartition(".")
getattr(importlib.import_module(module), name)
print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))
"""


def _entrypoints() -> dict[str, str]:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d["entrypoint"] for d in spec["deployments"]}


@pytest.mark.parametrize("deployment", sorted(CASES))
def test_the_entrypoint_does_not_import_what_a_run_may_not_need(deployment: str) -> None:
    entrypoint = _entrypoints()[deployment]
    probe = subprocess.run([sys.executable, "-c", PROBE, entrypoint, *CASES[deployment]], cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert json.loads(probe.stdout.splitlines()[-1]) == []
