"""Model replies -> the list of memory objects they contain (pure).

Recovery is lenient about *where* the JSON is: the whole reply, a ```json fence, or an array/object inside
prose ("Sure! Here are the memories: [...]"). What the objects say is checked in `validate`.

Any reply, however hostile (a thousand `[`, 100k of nesting, megabytes of prose), ends in a value or in
`ReplyError` — never in `RecursionError` or a quadratic scan — so the caller can quarantine it and go on.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*+(?:json|JSON|javascript)?[ \t]*+\n?(.*?)```", re.S)
MAX_DEPTH = 32
"""Memories nest 3 levels deep; anything deeper is not a reply to take (and could exhaust the stack)."""
MAX_CANDIDATES = 256
"""Brackets inside prose tried as the start of the JSON value: bounded, so a wall of `[` costs linear time."""


class ReplyError(ValueError):
    """The reply holds no usable JSON list of memories."""


def nesting_depth(text: str) -> int:
    """Deepest `[`/`{` nesting outside JSON strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def extract_json(text: str) -> Any:
    """The JSON value of a reply: the whole text, else a fenced block, else the best array/object in prose."""
    if nesting_depth(text) > MAX_DEPTH:
        raise ReplyError(f"JSON nested deeper than {MAX_DEPTH} levels; not a list of memories")
    stripped = text.strip().lstrip("\ufeff")
    for candidate in [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    decoder = json.JSONDecoder()
    best: tuple[int, Any] | None = None
    for n, match in enumerate(re.finditer(r"[\[{]", text)):
        if n >= MAX_CANDIDATES:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        score = 2 if _looks_like_memories(value) else 1
        if best is None or score > best[0]:
            best = (score, value)
            if score == 2:
                break
    if best is None:
        raise ReplyError("no JSON array or object in the reply")
    return best[1]


def _looks_like_memories(value: Any) -> bool:
    if isinstance(value, dict):
        return "memories" in value or "content" in value
    return isinstance(value, list) and (not value or all(isinstance(v, dict) for v in value))


def as_items(value: Any) -> list[Any]:
    """The list of memory objects in a parsed reply (`[...]`, `{"memories": [...]}` or one object)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        inner = value.get("memories")
        if isinstance(inner, list):
            return inner
        if "content" in value:
            return [value]
    raise ReplyError(f"JSON is a {type(value).__name__}, not a list of memories")


def parse_reply(text: str) -> list[Any]:
    return as_items(extract_json(text))


