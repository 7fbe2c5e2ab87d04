"""A local OpenAI-compatible HTTP server with scripted replies and seeded fault injection."""

from __future__ import annotations

import random
import socketserver
import threading
from collections import deque
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fakellm.handler import CHAT_PATH, EMBEDDINGS_PATH, FAULT_KINDS, Faults, Handler, RecordedRequest
from tests.fakellm.replies import Reply, default_responder


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler sleeping in a "timeout" fault must not delay stop()

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name with getfqdn(), which can stall for seconds.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class FakeLLMServer:
    """Serves `/v1/chat/completions`, `/v1/embeddings` and `/v1/models` on 127.0.0.1 in a daemon thread.

    Each POST is answered by, in order: the `enqueue`d replies (FIFO), the fault injector (`set_faults`),
    then `responder(request_json) -> str`.
    """

    def __init__(
        self, *, embedding_dim: int = 32, timeout_sleep_s: float = 3.0, models: tuple[str, ...] = (),
        style: str = "openai",
    ) -> None:
        self.responder: Callable[[dict[str, Any]], str] = default_responder
        self.style = style
        """Reply shape of a real endpoint (`tests.fakellm.replies.STYLES`); may be changed between requests."""
        self.max_prompt_chars: int | None = None
        """A chat request whose messages hold more characters than this is refused, as a model refuses one over its
        context window (400, `context_length_exceeded`); None: any length is read."""
        self.embedding_dim = embedding_dim
        self.timeout_sleep_s = timeout_sleep_s
        self.models = models or ("fake-model",)
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._faults: Faults | None = None
        self._rng = random.Random(0)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (Handler,), {"fake": self})
        httpd = _HTTPServer(("127.0.0.1", 0), handler)
        self._stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakellm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers waiting out a delay
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{CHAT_PATH}"

    @property
    def embeddings_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{EMBEDDINGS_PATH}"

    # --- scripting ---------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def set_faults(
        self,
        rate: float = 0.3,
        kinds: tuple[str, ...] = ("429", "500", "timeout"),
        seed: int = 1,
        retry_after: float = 0.0,
        timeout_sleep_s: float | None = None,
    ) -> None:
        """Fail a seeded-random share `rate` of POSTs with one of `kinds`; `rate=1.0` is fully down."""
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be among {FAULT_KINDS}, got {kinds}")
        sleep_s = self.timeout_sleep_s if timeout_sleep_s is None else timeout_sleep_s
        with self._lock:
            self._faults = Faults(rate, tuple(kinds), retry_after, sleep_s)
            self._rng = random.Random(seed)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults = None

    # --- inspection --------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def calls(self, path: str = CHAT_PATH) -> int:
        with self._lock:
            return sum(1 for r in self._requests if r.path == path)

    # --- used by the handler -----------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_action(self) -> Reply | tuple[str, Faults] | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            faults = self._faults
            if faults and self._rng.random() < faults.rate:
                return self._rng.choice(faults.kinds), faults
        return None

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)
