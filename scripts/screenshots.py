"""Screenshots of the real Prefect UI for docs/deploy.md, taken the way a person uses it, with headless Chromium.

Starts a throw-away `prefect server` on a local port (its default UI, the V2 one Prefect 3.9 opens at `/`),
runs `chronicle setup` and `chronicle serve` on the bundled sample and an ingest, then in the browser: the
deployments list, the weekly deployment's page, the backfill form filled in and **Submit** (the toast on the
deployment's page), the finished run (graph, *Details* with its message, *Artifacts*), its outcome and
progress artifacts, and a refused run (project XH999) with its message. Everything lives in a temporary
folder; only the PNGs are kept. The browser is driven over Chromium's DevTools protocol (a websocket, no
webdriver); every step waits for a text on the page, never a fixed time.

    apt-get install -y chromium fonts-noto-cjk   # Debian's packages (the sample's reports are Chinese)
    python scripts/screenshots.py                # -> docs/img/*.png
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO_PROJECT, DEMO_WEEKS = "XH201", ("2025-W10", "2025-W17")  # the sample trial's first two months: 8 weeks
WIDTH = 1400


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    sys.exit("chromium not found: apt-get update && apt-get install -y chromium")


def wait_for(what: str, check, timeout: float = 90.0, pause: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except Exception:  # not up yet
            pass
        time.sleep(pause)
    raise TimeoutError(f"timed out waiting for {what}")


class Browser:
    """One headless Chromium tab, driven over the DevTools protocol."""

    def __init__(self) -> None:
        from websockets.sync.client import connect

        self.profile = Path(tempfile.mkdtemp(prefix="chronicle-chromium-"))
        self.proc = subprocess.Popen([chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                      "--hide-scrollbars", "--remote-debugging-port=0", f"--window-size={WIDTH},900",
                                      f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = self.profile / "DevToolsActivePort"  # Chromium writes its port there once it listens
        port = wait_for("Chromium's DevTools port", lambda: active.exists() and active.read_text().split()[0], 60)
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        self.ws = connect(url, max_size=None, open_timeout=30)
        self.n = 0
        self.call("Page.enable")

    def call(self, method: str, **params: object) -> dict:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=120))
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr: str) -> object:
        return self.call("Runtime.evaluate", expression=expr, returnByValue=True).get("result", {}).get("value")

    def goto(self, url: str, text: str, timeout: float = 90) -> None:
        """Open `url` and wait until the page shows `text` (the single-page app fetches after loading)."""
        self.call("Page.navigate", url=url)
        self.wait_text(text, timeout)
        self.settle()

    def settle(self, timeout: float = 60) -> None:
        """Wait until no loading placeholder (the UI's pulsing skeletons) is left on the page."""
        wait_for("the page to finish loading", lambda: self.js(
            "document.querySelectorAll('.animate-pulse, [data-slot=skeleton]').length === 0"), timeout)

    def wait_text(self, text: str, timeout: float = 90) -> None:
        wait_for(f"{text!r} on the page", lambda: self.js(f"!!document.body && document.body.innerText"
                                                           f".includes({json.dumps(text)})"), timeout)

    def click(self, text: str, selector: str = "button, a, [role=tab], [role=menuitem]") -> None:
        """Click, with the mouse (menus open on pointer events), the first `selector` element reading `text`."""
        self._mouse(f"[...document.querySelectorAll({json.dumps(selector)})]"
                    f".find(e => e.innerText.trim() === {json.dumps(text)})", f"a {text!r} to click")

    def type_into(self, label: str, value: str) -> None:
        """Click into the text box of the form field whose text starts with `label`, and type `value`."""
        self._mouse(f"[...document.querySelectorAll('textarea, input')].find(input => {{ let box = input;"
                    f" for (let i = 0; i < 6 && box; i++, box = box.parentElement)"
                    f" if ((box.innerText || '').trim().startsWith({json.dumps(label + ' ')})) return true;"
                    f" return false; }})", f"the {label!r} box")
        self.js("document.activeElement.select && document.activeElement.select()")  # typing replaces it
        self.call("Input.insertText", text=value)

    def _mouse(self, find: str, what: str) -> None:
        """Press and release the left button over the element the JavaScript expression `find` returns."""
        where = (f"(() => {{ const el = {find}; if (!el) return null; el.scrollIntoView({{block: 'center'}});"
                 " const r = el.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;"
                 " return el.contains(document.elementFromPoint(x, y)) ? [x, y] : null; })()")  # nothing over it
        x, y = wait_for(what, lambda: self.js(where), 30)
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def shot(self, out: Path, height: int = 900) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height, deviceScaleFactor=1, mobile=False)
        self.js("window.scrollTo(0, 0)")
        # The run graph is drawn on a canvas and toasts fade in: the picture is taken once two in a row agree.
        last: list[str] = []

        def steady() -> str | None:
            last.append(self.call("Page.captureScreenshot", format="png")["data"])
            return last[-1] if len(last) > 1 and last[-1] == last[-2] else None

        try:
            data = wait_for("the page to stop changing", steady, 30)
        except TimeoutError:
            data = last[-1]  # something keeps moving (a clock): the latest picture
        out.write_bytes(base64.b64decode(data))
        print(f"  {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("--port", type=int, default=0, help="the throw-away server's port (default: a free one)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="chronicle-shots-"))
    port = args.port or _free_port()
    api, ui = f"http://127.0.0.1:{port}/api", f"http://127.0.0.1:{port}"

    from chronicle.sample import generate_sample

    manifest = generate_sample(work / "sample")
    env = {**os.environ, "PREFECT_HOME": str(work / "prefect"), "PREFECT_API_URL": api, "PREFECT_UI_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "CHRONICLE_HOME": str(work / "home"),
           "CHRONICLE_COLUMN_MAP": json.dumps(manifest.column_map), "PREFECT_RUNNER_POLL_FREQUENCY": "2",
           "CHRONICLE_SOURCE_PATHS": json.dumps([str(work / "sample" / "logs"), str(work / "sample" / "memory")]),
           "CHRONICLE_WARM": "0"}
    os.environ.update(env)  # this process talks to the same API below
    procs: list[subprocess.Popen] = []
    browser: Browser | None = None
    try:
        print(f"prefect server on {api} (data in {work})")
        procs.append(subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1",
                                       "--port", str(port)], env=env, cwd=work,
                                      stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT))
        wait_for("the Prefect server", lambda: urllib.request.urlopen(f"{api}/health", timeout=2).read() == b"true",
                 300)
        subprocess.run([str(BIN / "chronicle"), "setup"], env=env, cwd=work, check=True)
        procs.append(subprocess.Popen([str(BIN / "chronicle"), "serve"], env=env, cwd=work,
                                      stdout=(work / "serve.log").open("w"), stderr=subprocess.STDOUT))
        browser = Browser()
        try:
            shots(browser, ui, args.out)
        except Exception:  # what the page showed when a step failed, to see why
            browser.shot(work.parent / "chronicle-shots-failed.png")
            (work.parent / "chronicle-shots-failed.txt").write_text(str(browser.js("document.body.innerText")))
            raise
    finally:
        if browser is not None:
            browser.close()
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def shots(browser: Browser, ui: str, out: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    from chronicle.deployments.definitions import DEPLOYMENTS

    with get_client(sync_client=True) as client:
        wait_for("chronicle serve to register the deployments",
                 lambda: len(client.read_deployments()) >= len(DEPLOYMENTS), 300)
        ingest = run_deployment("ingest-logs/ingest", timeout=0)
        print("ingest:", wait_for("the ingest run", lambda: _finished(client, ingest.id), 600).state.name)
        backfill = client.read_deployment_by_name("backfill-weeks/backfill-weeks")
        weekly = client.read_deployment_by_name("weekly-chronicle/weekly-chronicle")

        print("screenshots:")
        _deployment_pages(browser, ui, out, weekly.id, backfill.id)
        run = _submit_backfill_form(browser, client, out, backfill.id)
        run = wait_for("the backfill run", lambda: _finished(client, run.id), 900)
        print("backfill:", run.name, run.state.name, run.state.message, run.parameters)
        _run_pages(browser, client, ui, out, run)
        _refused_run_page(browser, client, ui, out)


def _finished(client: Any, run_id: Any) -> object:
    run = client.read_flow_run(run_id)
    return run if run.state and run.state.is_final() else None


def _deployment_pages(browser: Browser, ui: str, out: Path, weekly_id: Any, backfill_id: Any) -> None:
    """The deployments list, the weekly one's page and the backfill's Run menu."""
    browser.goto(f"{ui}/", "Dashboard")  # what a person opens: `/` takes them to Prefect's default UI
    browser.goto(f"{ui}/v2/deployments", "backfill-weeks")
    browser.shot(out / "deployments.png", 560)
    browser.goto(f"{ui}/v2/deployments/deployment/{weekly_id}", "weekly-chronicle")
    browser.shot(out / "deployment-weekly.png", 800)
    browser.goto(f"{ui}/v2/deployments/deployment/{backfill_id}", "backfill-weeks")
    browser.click("Run")  # the deployment's Run button opens its menu: Quick run / Custom run
    browser.wait_text("Custom run")
    browser.shot(out / "deployment-run-menu.png", 500)


def _submit_backfill_form(browser: Browser, client: Any, out: Path, backfill_id: Any) -> Any:
    """The form as a person fills it: the week range typed in, then Submit; the run it started."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    browser.click("Custom run")
    browser.wait_text("start_week")
    browser.settle()
    browser.type_into("project_id", DEMO_PROJECT)
    browser.type_into("start_week", DEMO_WEEKS[0])
    browser.type_into("end_week", DEMO_WEEKS[1])
    browser.shot(out / "backfill-form.png", 1100)
    before = {r.id for r in client.read_flow_runs(deployment_filter=DeploymentFilter(
        id=DeploymentFilterId(any_=[backfill_id])))}

    def started() -> object:
        return next(iter(r for r in client.read_flow_runs(deployment_filter=DeploymentFilter(
            id=DeploymentFilterId(any_=[backfill_id]))) if r.id not in before), None)

    browser.click("Submit")
    # The toast lasts seconds: wait for it and shoot at once; the run it announces is checked through the API.
    try:
        browser.wait_text("scheduled to start", 60)
    except TimeoutError:  # a press the page missed (it re-rendered under the pointer): once more, if no run
        if started():
            raise
        browser.click("Submit")
        browser.wait_text("scheduled to start", 60)
    browser.shot(out / "backfill-submitted.png", 700)
    return wait_for("the run the form started", started, 60)


def _run_pages(browser: Browser, client: Any, ui: str, out: Path, run: Any) -> None:
    """The finished backfill run's tabs, then its artifacts' own pages."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    artifacts = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))]
    print("artifacts:", sorted(a.key or f"({a.type})" for a in artifacts))
    # One page, its tabs clicked in turn: by the time of the last shots the run graph (a canvas) is drawn.
    browser.goto(f"{ui}/v2/runs/flow-run/{run.id}", "Beginning flow run")
    browser.click("Artifacts")
    browser.wait_text(min(a.key for a in artifacts if a.key and a.key.endswith("-progress")))
    browser.settle()
    browser.shot(out / "backfill-artifacts.png", 900)
    browser.click("Details")
    browser.wait_text("State Message")
    browser.shot(out / "backfill-details.png", 1080)
    browser.click("Logs")
    browser.wait_text("Beginning flow run")
    browser.shot(out / "backfill-run.png", 1000)
    keyed = {a.key: a for a in artifacts if a.key}
    for name, match in {"progress": lambda k: k.endswith("-progress"), "summary": lambda k: k.endswith("-summary"),
                        "weekly-report": lambda k: k.startswith("report-"),
                        "outcome": lambda k: k.startswith("backfill-") and not k.endswith(("-progress",
                                                                                           "-summary"))}.items():
        if key := min((k for k in keyed if match(k)), default=None):
            browser.goto(f"{ui}/v2/artifacts/artifact/{keyed[key].id}", key)
            browser.shot(out / f"backfill-{name}.png", 900)


def _refused_run_page(browser: Browser, client: Any, ui: str, out: Path) -> None:
    """A backfill of an unknown project: refused, and the reason on the run's page."""
    from prefect.deployments import run_deployment

    typo = run_deployment("backfill-weeks/backfill-weeks", timeout=0, parameters={"project_id": "XH999"})
    refused = wait_for("the refused run", lambda: _finished(client, typo.id), 300)
    print("refused:", refused.name, refused.state.name, refused.state.message)
    browser.goto(f"{ui}/v2/runs/flow-run/{refused.id}?tab=Details", "XH999")
    browser.shot(out / "backfill-refused.png", 800)


if __name__ == "__main__":
    main()
