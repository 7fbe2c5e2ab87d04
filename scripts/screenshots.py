"""Screenshots of the real Prefect UI for the docs, made with headless Chromium.

Starts a throw-away `prefect server` on a local port, runs `chronicle setup` and `chronicle serve` on the
bundled sample, triggers an ingest and a backfill of a past range through the API (as the UI's Run form
does), and a backfill of a project that does not exist, then photographs: the deployments list, the
backfill run form, the finished backfill run and its artifacts, and the refused run with its message.
Everything lives in a temporary folder; only the PNGs are kept.

    apt-get install -y chromium fonts-noto-cjk   # Debian's packages (the sample's reports are Chinese)
    python scripts/screenshots.py                # -> docs/img/*.png
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO_WEEKS = ("2025-W10", "2025-W17")  # the sample trial's first two months


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    sys.exit("chromium not found: apt-get update && apt-get install -y chromium")


def shoot(url: str, out: Path, height: int = 900, width: int = 1400) -> None:
    """One screenshot; the UI is a single-page app, so give it virtual time to fetch and render."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--window-size={width},{height}", "--virtual-time-budget=20000",
                        "--hide-scrollbars", f"--screenshot={out}", url],
                       check=True, capture_output=True, timeout=120)
    print(f"  {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")


def wait_for(what: str, check, timeout: float = 90.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except Exception:  # not up yet
            pass
        time.sleep(1)
    sys.exit(f"timed out waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("--port", type=int, default=4281)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="chronicle-shots-"))
    api = f"http://127.0.0.1:{args.port}/api"

    from chronicle.sample import generate_sample

    manifest = generate_sample(work / "sample")
    env = {**os.environ, "PREFECT_HOME": str(work / "prefect"), "PREFECT_API_URL": api, "PREFECT_UI_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "CHRONICLE_HOME": str(work / "home"),
           "CHRONICLE_COLUMN_MAP": json.dumps(manifest.column_map), "PREFECT_RUNNER_POLL_FREQUENCY": "2",
           "CHRONICLE_SOURCE_PATHS": json.dumps([str(work / "sample" / "logs"), str(work / "sample" / "memory")]),
           "CHRONICLE_WARM": "0"}
    os.environ.update(env)  # this process talks to the same API below
    procs: list[subprocess.Popen] = []
    try:
        print(f"prefect server on {api} (data in {work})")
        procs.append(subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1",
                                       "--port", str(args.port)], env=env, cwd=work,
                                      stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT))
        wait_for("the Prefect server", lambda: urllib.request.urlopen(f"{api}/health", timeout=2).read() == b"true")
        subprocess.run([str(BIN / "chronicle"), "setup"], env=env, cwd=work, check=True)
        procs.append(subprocess.Popen([str(BIN / "chronicle"), "serve"], env=env, cwd=work,
                                      stdout=(work / "serve.log").open("w"), stderr=subprocess.STDOUT))

        from chronicle.deployments.definitions import DEPLOYMENTS
        from prefect.client.orchestration import get_client
        from prefect.deployments import run_deployment

        with get_client(sync_client=True) as client:
            wait_for("chronicle serve to register the deployments",
                     lambda: len(client.read_deployments()) >= len(DEPLOYMENTS))

            def finished(run_id) -> object:
                run = client.read_flow_run(run_id)
                return run if run.state and run.state.is_final() else None

            ingest = run_deployment("ingest-logs/ingest", timeout=0)
            print("ingest:", wait_for("the ingest run", lambda: finished(ingest.id), 300).state.name)
            backfill = run_deployment("backfill-weeks/backfill-weeks", timeout=0, parameters={
                "project_id": "all", "start_week": DEMO_WEEKS[0], "end_week": DEMO_WEEKS[1]})
            run = wait_for("the backfill run", lambda: finished(backfill.id), 600)
            print("backfill:", run.name, run.state.name, run.state.message)
            typo = run_deployment("backfill-weeks/backfill-weeks", timeout=0, parameters={"project_id": "XH999"})
            refused = wait_for("the refused run", lambda: finished(typo.id), 300)
            print("refused:", refused.name, refused.state.name, refused.state.message)
            deployment_id = client.read_deployment_by_name("backfill-weeks/backfill-weeks").id
            from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

            artifacts = {a.key: a for a in client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id]))) if a.key}
            from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            print(f"backfill: {len(logs)} log lines, artifacts {sorted(artifacts)}")

        ui = f"http://127.0.0.1:{args.port}"
        print("screenshots:")
        shoot(f"{ui}/deployments", args.out / "deployments.png", 560, 1800)  # wide: the cron text fits
        shoot(f"{ui}/deployments/deployment/{deployment_id}/run", args.out / "backfill-form.png", 1100)
        shoot(f"{ui}/runs/flow-run/{run.id}", args.out / "backfill-run.png", 1000)
        shoot(f"{ui}/runs/flow-run/{refused.id}", args.out / "backfill-refused.png", 700)
        # The run's own artifacts (issue 3's flow): progress, outcome table, summary, and one weekly report.
        wanted = {"progress": lambda k: k.endswith("-progress"), "summary": lambda k: k.endswith("-summary"),
                  "outcome": lambda k: k.startswith("backfill-") and not k.endswith(("-progress", "-summary")),
                  "weekly-report": lambda k: k.startswith("report-")}
        for name, match in wanted.items():
            key = min((k for k in artifacts if match(k)), default=None)
            if key:
                shoot(f"{ui}/artifacts/artifact/{artifacts[key].id}", args.out / f"backfill-{name}.png")
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
