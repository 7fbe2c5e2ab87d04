"""Model replies -> the list of memory objects they contain (pure).

Recovery is lenient about *where* the JSON is: the whole reply, a ```json fence, or an array/object inside
prose ("Sure! Here are the memories: [...]"). What the objects say is checked in `validate`.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.S)


class ReplyError(ValueError):
    """The reply holds no usable JSON list of memories."""


def extract_json(text: str) -> Any:
    """The JSON value of a reply: the whole text, else a fenced block, else the best array/object in prose."""
    stripped = text.strip().lstrip("\ufeff")
    for candidate in [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    best: tuple[int, Any] | None = None
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
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


