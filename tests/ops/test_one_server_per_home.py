"""One background Prefect server per home: a live server slow to answer its health check is waited for, never
replaced by a second server on the same database."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from chronicle.deployments import local_api


class _SlowHealth(BaseHTTPRequestHandler):
    delay_s = 4.0

    def do_GET(self) -> None:
        time.sleep(self.delay_s)  # longer than the quick health check's 2 s
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[local_api.ServerState]:
    """A 'server' recorded in this home's state file: a live process (this one) whose API answers slowly."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHealth)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.delenv("CHRONICLE_PREFECT_SERVER", raising=False)
    monkeypatch.setattr(local_api, "configured_url", lambda: None)
    me = psutil.Process()
    state = local_api.ServerState(me.pid, f"http://127.0.0.1:{httpd.server_port}/api", me.create_time(),
                                  str(tmp_path / "prefect"))
    local_api.state_dir().mkdir(parents=True)
    (local_api.state_dir() / "server.json").write_text(json.dumps(state.__dict__))

    def second(*_args: object, **_kwargs: object) -> local_api.ServerState:
        raise AssertionError("a second server was started on the same home")

    monkeypatch.setattr(local_api, "start", second)
    yield state
    httpd.shutdown()


def test_a_slow_background_server_is_waited_for_not_replaced(slow_server: local_api.ServerState) -> None:
    api = local_api.ensure(start_timeout=60)
    assert (api.url, api.source) == (slow_server.url, "background")
    assert local_api.read_state() == slow_server


def test_a_live_server_that_never_answers_is_named_not_replaced(slow_server: local_api.ServerState) -> None:
    _SlowHealth.delay_s = 30.0
    try:
        with pytest.raises(local_api.ApiUnavailable, match=f"pid {slow_server.pid}.*chronicle server stop"):
            local_api.ensure(start_timeout=3)
    finally:
        _SlowHealth.delay_s = 4.0
    assert local_api.read_state() == slow_server
