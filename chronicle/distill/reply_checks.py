"""Parsed reply items -> validated `Memory` objects (pure).

Strict about what a memory says: a `targetFile` outside the six knowledge files (`../x`, `/etc/passwd`,
`memory/USER.md`) rejects that one memory, because the file name decides where text gets written.

Importance outside [0, 1] (a model answering `7`) is clamped, not rescaled: whether 7 meant 7/10 or
"very" is unknowable, and clamping keeps the memory while preserving its order among the others.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chronicle.distill.orders import order_reason
from chronicle.memory.model import Memory, content_hash, cut_content
from chronicle.settings import KNOWLEDGE_FILES

_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)\s")
DEFAULT_IMPORTANCE = 0.5
MAX_ITEMS, MAX_ITEM_CHARS = 12, 200


@dataclass
class Rejection:
    reason: str
    target_file: str | None = None
    importance: float | None = None
    tags: list[str] = field(default_factory=list)
    content_hash: str | None = None
    memory: Memory | None = None
    """The memory as it would have been, where one could be built (a memory that reads as an order but has a valid
    target and importance is not a rejection: it is stored flagged, `Memory.reads_as_order`)."""
    detail: str | None = None
    """What made it suspect (the matched phrase, or the note entry it repeats)."""


@dataclass
class Validated:
    memories: list[Memory] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    warnings: Counter[str] = field(default_factory=Counter)


def normalise_target(value: Any) -> str | None:
    """The knowledge file named by `value`, or None if it is not exactly one of the six (paths refused)."""
    if not isinstance(value, str):
        return None
    name = value.strip()
    if not name or any(c in name for c in "/\\\x00") or ".." in name:
        return None
    if not name.lower().endswith(".md"):
        name += ".md"
    return next((f for f in KNOWLEDGE_FILES if f.lower() == name.lower()), None)


def importance_of(value: Any, warnings: Counter[str]) -> float | None:
    """Importance in [0, 1]; None when it is not a number at all."""
    if value is None:
        warnings["importance_missing"] += 1
        return DEFAULT_IMPORTANCE
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    clamped = min(1.0, max(0.0, number))
    if clamped != number:
        warnings["importance_clamped"] += 1
    return clamped


def first_sentence(text: str, limit: int = 160) -> str:
    head = _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        value = re.split(r"[,，;；]", value)
    if not isinstance(value, list):
        return []
    return [str(v).strip()[:MAX_ITEM_CHARS] for v in value if str(v).strip()][:MAX_ITEMS]


def validate(items: list[Any], *, source: str, entry_ids: list[str]) -> Validated:
    """Memories from parsed items; bad items become `Rejection`s, fixable ones count a warning."""
    out = Validated()
    for item in items:
        if not isinstance(item, dict):
            out.rejections.append(Rejection("not_an_object"))
            continue
        content = item.get("content")
        content = cut_content(content.strip()) if isinstance(content, str) else ""
        tags = _strings(item.get("tags"))
        offered = item.get("targetFile", item.get("target_file"))
        target = normalise_target(offered)
        importance = importance_of(item.get("importance"), out.warnings)
        if not content:
            out.rejections.append(Rejection("missing_content", _shown(offered), importance, tags))
            continue
        injection = order_reason(content)
        if injection is not None and (target is None or importance is None):
            out.rejections.append(Rejection("suspected_injection", target or _shown(offered), importance, tags,
                                            content_hash(content), detail=injection))
            continue
        if target is None:
            out.rejections.append(Rejection("bad_target_file", _shown(offered), importance, tags,
                                            content_hash(content)))
            continue
        if importance is None:
            out.rejections.append(Rejection("bad_importance", target, None, tags, content_hash(content)))
            continue
        summary = item.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            out.warnings["summary_missing"] += 1
            summary = first_sentence(content)
        action = item.get("action", "append")
        if action not in ("append", "overwrite"):
            out.warnings["action_unknown"] += 1
            action = "append"
        memory = Memory(
            content=content,
            summary=summary.strip()[:500],
            key_info=_strings(item.get("keyInfo", item.get("key_info"))),
            tags=tags,
            importance=importance,
            target_file=target,
            action=action,
            source=source,
            source_entry_ids=_cited(item.get("entries"), entry_ids),
            # Whom it is about, as the model read it; normalised like the offline rules' (non-strings: unknown).
            subject=item.get("subject") if isinstance(item.get("subject"), str) else "",
        )
        # Reads as an order to the assistant: stored flagged (search says so), a file only through a proposal.
        out.memories.append(memory.model_copy(update={"reads_as_order": True}) if injection is not None else memory)
    return out


def _shown(value: Any) -> str | None:
    """The offered `targetFile` as recorded with a rejection (truncated; None stays None)."""
    return None if value is None else str(value)[:200]


def _cited(numbers: Any, entry_ids: list[str]) -> list[str]:
    """Entry ids the model cited by their `[n]` numbers; all of the chunk's when it cited none validly."""
    cited = []
    if isinstance(numbers, list):
        for n in numbers:
            if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(entry_ids):
                cited.append(entry_ids[n - 1])
    return list(dict.fromkeys(cited)) or list(entry_ids)
