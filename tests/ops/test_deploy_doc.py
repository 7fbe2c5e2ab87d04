"""Every command of docs/deploy.md's one-machine sections, in order, as written (scripts/deploy_doc.py): the
Chronicle setup, `chronicle serve`, an own Prefect server on another port with PREFECT_UI_API_URL, the work
pool, `prefect deploy --all`, a named worker, and the run history commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_deploy_doc_one_machine_commands_run_as_written(tmp_path: Path, api_url: str) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONICLE_", "PREFECT_"))}
    env.update(PATH=os.pathsep.join([bin_dir, env.get("PATH", "")]), PREFECT_API_URL=api_url,
               PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               CHRONICLE_WARM="0", PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "scripts.deploy_doc", "--run", str(tmp_path / "work")], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=1500)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted((tmp_path / "work" / "logs").glob("*")))
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n{logs}"
    assert ">>> all commands ran" in done.stdout
