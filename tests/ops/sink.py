"""A real local HTTP endpoint that keeps every JSON body POSTed to it (alert webhooks, OpenLineage events)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Sink:
    def __init__(self) -> None:
        self.bodies: list[tuple[str, Any]] = []
        self._cond = threading.Condition()
        self.url = ""

    def add(self, path: str, body: Any) -> None:
        with self._cond:
            self.bodies.append((path, body))
            self._cond.notify_all()

    def wait_for(self, match: Callable[[Any], bool], timeout: float = 60) -> Any:
        """The first body `match` accepts, waiting for it to arrive (on the POST itself, no polling)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for _, body in self.bodies:
                    if match(body):
                        return body
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"nothing matching arrived in {timeout}s; got {self.bodies!r}"[:4000])
                self._cond.wait(left)

    def matching(self, match: Callable[[Any], bool]) -> list[Any]:
        with self._cond:
            return [b for _, b in self.bodies if match(b)]


@contextmanager
def http_sink() -> Iterator[Sink]:
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            # Kept before the answer: a sender that got its 200 may be read back by the test at once (a flow's
            # lineage hook posts, the flow returns, the test looks).
            sink.add(self.path, body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def server_bind(self) -> None:  # skip getfqdn(), which can stall for seconds
            import socketserver

            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = self.server_address[:2]

    httpd = Server(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        httpd.shutdown()
        httpd.server_close()
