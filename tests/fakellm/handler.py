"""Request handler of the fake LLM server: routing, scripted replies, injected faults."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from tests.fakellm.replies import (
    REFUSED_FORMAT,
    Reply,
    chat_body,
    embeddings_body,
    error_body,
    over_context,
    refuses_format,
)

if TYPE_CHECKING:
    from tests.fakellm.server import FakeLLMServer

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
FAULT_KINDS = ("429", "500", "502", "503", "timeout", "malformed", "reset")
# A truncated JSON document: what a proxy cutting a response short looks like.
MALFORMED_BODY = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": ['


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any | None
    body: bytes


@dataclass(frozen=True)
class Faults:
    """Fault-injection settings of a server."""

    rate: float
    kinds: tuple[str, ...]
    retry_after: float
    timeout_sleep_s: float


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers; every answer carries Content-Length
    server_version = "FakeLLM/1.0"
    timeout = 10  # idle keep-alive connections of finished tests get reaped
    # Headers and body leave in one segment: split small writes meet Nagle + delayed ACK (40 ms each).
    wbufsize = 1 << 16
    fake: FakeLLMServer

    def handle(self) -> None:
        # The client may give up (its timeout) before a delayed answer is flushed.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        path = self._path()
        self.fake._record(RecordedRequest("GET", path, self._headers(), None, b""))
        if path == MODELS_PATH:
            models = self.fake.models
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fakellm"} for m in models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, error_body(404, f"no route {path}"))

    def do_POST(self) -> None:
        path = self._path()
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        self.fake._record(RecordedRequest("POST", path, self._headers(), payload, raw))
        if path not in (CHAT_PATH, EMBEDDINGS_PATH):
            return self._send_json(404, error_body(404, f"no route {path}"))
        if not isinstance(payload, dict):
            return self._send_json(400, error_body(400, "request body is not a JSON object"))
        if path == CHAT_PATH and refuses_format(self.fake.style, payload):
            return self._send_json(400, error_body(400, REFUSED_FORMAT))
        if path == CHAT_PATH and (too_long := over_context(payload, self.fake.max_prompt_chars)) is not None:
            return self._send_json(400, too_long)
        action = self.fake._next_action()
        if isinstance(action, Reply):
            return self._scripted(path, payload, action)
        if action is not None:
            return self._fault(path, payload, *action)
        return self._normal(path, payload)

    # --- answers -----------------------------------------------------------------------------
    def _scripted(self, path: str, payload: dict[str, Any], reply: Reply) -> None:
        self.fake._wait(reply.delay_s)
        if reply.raw_body is not None:
            return self._send(reply.status, reply.raw_body, reply.headers)
        if reply.status != 200:
            return self._send_json(reply.status, error_body(reply.status, reply.content), reply.headers)
        if path == EMBEDDINGS_PATH or reply.content is None:
            return self._normal(path, payload, reply)
        self._send_json(200, chat_body(payload, reply.content, reply, self.fake.style), reply.headers)

    def _fault(self, path: str, payload: dict[str, Any], kind: str, faults: Faults) -> None:
        if kind == "timeout":
            self.fake._wait(faults.timeout_sleep_s)
            return self._normal(path, payload)
        if kind == "malformed":
            return self._send(200, MALFORMED_BODY)
        if kind == "reset":
            # Linger 0 makes close() send RST: a genuine "connection reset by peer".
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return None
        status = int(kind)
        headers = {"Retry-After": f"{faults.retry_after:g}"} if status == 429 else {}
        self._send_json(status, error_body(status), headers)

    def _normal(self, path: str, payload: dict[str, Any], reply: Reply | None = None) -> None:
        headers = reply.headers if reply else {}
        try:
            if path == EMBEDDINGS_PATH:
                return self._send_json(200, embeddings_body(payload, self.fake.embedding_dim), headers)
            content = self.fake.responder(payload)
        except Exception as exc:  # surface responder bugs to the test as a 500 with the reason
            return self._send_json(500, error_body(500, f"fake responder failed: {exc!r}"))
        self._send_json(200, chat_body(payload, content, reply, self.fake.style), headers)

    # --- plumbing ----------------------------------------------------------------------------
    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        extra = {k.lower(): v for k, v in (headers or {}).items()}
        try:
            self.send_response(status)
            self.send_header("Content-Type", extra.pop("content-type", "application/json"))
            self.send_header("Content-Length", str(len(body)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout); nothing to answer
