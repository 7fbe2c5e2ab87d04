"""Pure payload builders of the fake OpenAI-compatible server (no sockets here)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

ERROR_MESSAGES = {
    400: "Bad request",
    401: "Incorrect API key provided",
    403: "You are not allowed to use this model",
    404: "The model does not exist or the URL is wrong",
    422: "Unprocessable request",
    429: "Rate limit reached, slow down",
    500: "Internal server error",
    502: "Bad gateway",
    503: "Model is loading, try again",
}


@dataclass
class Reply:
    """One scripted answer. `content=None` means "let the responder answer"; `""` sends an empty message.

    `raw_body` is sent verbatim (malformed bodies); `headers` are added to the response (e.g. Retry-After,
    or Content-Type to override `application/json`). Usage counts default to len // 4 estimates.
    """

    status: int = 200
    content: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    omit_usage: bool = False


def message_text(content: Any) -> str:
    """Text of a message `content`, which may be a string or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def default_responder(request: dict[str, Any]) -> str:
    """A short deterministic Markdown answer derived from the last user message."""
    users = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    text = message_text(users[-1].get("content")) if users else ""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    head = " ".join(text.split())[:80] or "(empty)"
    cite = " [E1]" if "[E1]" in text else ""  # a weekly prompt: cite an entry, as asked (else it is asked again)
    return f"## Summary\n\n- {head}{cite}\n- ref `{digest}`\n"


_COVERED_LINE = re.compile(r"^\[(E\d+)\][^|\n]*\|[^|\n]*\|\s*(?:sae|ae|deviation|enrollment)\s*\|", re.M)


def safety_sentence(request: dict[str, Any]) -> str:
    """What a faithful model adds to a weekly report: a sentence citing the week's SAE, AE, deviation and
    enrolment entries (the guard flags a report that leaves one out), or "" when the prompt shows none."""
    users = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    ids = _COVERED_LINE.findall(message_text(users[-1].get("content")) if users else "")
    return f"- 本周需关注的记录见流水账 [{', '.join(ids)}]。\n" if ids else ""


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    text = message or ERROR_MESSAGES.get(status, f"HTTP {status}")
    return {"error": {"message": text, "type": kind, "param": None, "code": str(status)}}


STYLES = ("openai", "vllm", "ollama-think", "deepseek", "prose-zh")
"""Reply shapes of real endpoints (`FakeLLMServer(style=...)`):

- `openai`: the answer in `content`; accepts `response_format` with a JSON schema.
- `vllm`: vLLM with `--reasoning-parser`: the chain of thought in `reasoning_content`, the answer in `content`.
- `ollama-think`: Ollama serving a reasoning model: `<think>…</think>` inline before the answer.
- `deepseek`: DeepSeek's API: `reasoning_content` beside `content`, reasoning tokens in the usage details,
  and HTTP 400 for a `json_schema` response format (it offers `json_object` only).
- `prose-zh`: a chatty model that wraps its answer (JSON included) in Chinese prose.
"""
REASONING = ("好的，我先逐条阅读这些日志，判断哪些值得记住。THINKING-MARKER: the user wants JSON only, so I will "
             "check each entry, skip the chit-chat, and count carefully before I answer. " * 6).strip()
"""Longer than a weekly report may be (500 characters): counting it would trigger a `shorten` call."""
REFUSED_FORMAT = "This response_format type is unavailable now"


def over_context(request: dict[str, Any], max_chars: int | None) -> dict[str, Any] | None:
    """OpenAI's 400 body for a request over the model's context window (here counted in characters), else None."""
    held = sum(len(m.get("content") or "") for m in request.get("messages") or [] if isinstance(m, dict))
    if max_chars is None or held <= max_chars:
        return None
    return {"error": {"message": f"This model's maximum context length is {max_chars} characters. However, your "
                                 f"messages resulted in {held} characters. Please reduce the length of the messages.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def refuses_format(style: str, request: dict[str, Any]) -> bool:
    """Whether an endpoint of this style answers 400 to the request's `response_format`."""
    kind = (request.get("response_format") or {}).get("type")
    return style == "deepseek" and kind == "json_schema"


def styled(style: str, content: str, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(assistant message, reasoning text) of `content` as an endpoint of `style` sends it."""
    if style not in STYLES:
        raise ValueError(f"unknown reply style {style!r}; one of {STYLES}")
    if (request.get("response_format") or {}).get("type") == "json_schema":
        content = _as_schema_object(content)
    if style == "ollama-think":
        return {"role": "assistant", "content": f"<think>\n{REASONING}\n</think>\n\n{content}"}, REASONING
    if style in ("vllm", "deepseek"):
        return {"role": "assistant", "content": content, "reasoning_content": REASONING}, REASONING
    if style == "prose-zh":
        return {"role": "assistant", "content": f"好的，以下是我整理的结果：\n\n{content}\n\n如需调整请告诉我。"}, ""
    return {"role": "assistant", "content": content}, ""


def _as_schema_object(content: str) -> str:
    """A schema-constrained decoder cannot answer a bare array where the schema's root is an object."""
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):  # hostile replies are sent as they are
        return content
    return json.dumps({"memories": value}, ensure_ascii=False) if isinstance(value, list) else content


def chat_body(request: dict[str, Any], content: str, reply: Reply | None = None,
              style: str = "openai") -> dict[str, Any]:
    messages = [m for m in request.get("messages", []) if isinstance(m, dict)]
    prompt = "".join(message_text(m.get("content")) for m in messages)
    message, reasoning = styled(style, content, request)
    prompt_tokens = len(prompt) // 4
    completion = (len(content) + len(reasoning)) // 4  # reasoning tokens are completion tokens too
    if reply and reply.prompt_tokens is not None:
        prompt_tokens = reply.prompt_tokens
    if reply and reply.completion_tokens is not None:
        completion = reply.completion_tokens
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        },
    }
    if reasoning and style == "deepseek":
        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": len(reasoning) // 4}
    if reply and reply.omit_usage:
        del body["usage"]
    return body


def embed_text(text: str, dim: int) -> list[float]:
    """Deterministic unit vector from a hash of `text`."""
    raw = hashlib.shake_256(text.encode("utf-8")).digest(4 * dim)
    values = [(n / 0xFFFFFFFF) * 2.0 - 1.0 for n in struct.unpack(f"<{dim}I", raw)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def embeddings_body(request: dict[str, Any], dim: int) -> dict[str, Any]:
    inputs = request.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    if not all(isinstance(t, str) for t in texts):
        raise ValueError("fake server only embeds strings")
    data = []
    for i, text in enumerate(texts):
        vector = embed_text(text, dim)
        if request.get("encoding_format") == "base64":
            encoded: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii")
        else:
            encoded = vector
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    tokens = sum(len(t) // 4 for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model") or "fake-embedding",
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
