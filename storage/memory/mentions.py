"""Memories whose person is unknown (subject "") that mention a name in their text.

A scoped search (`--about X`) returns only memories known to be about X; when the notes did not say whose a
memory is, it may still name X ("张曼婷下周要去厦门" in a section about nobody). These reads let the caller say
so, and opt in to them, instead of an empty list in silence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chronicle.storage.memory.arrow import sql_str

from chronicle.memory.subjects import normalise_subject

if TYPE_CHECKING:
    from chronicle.storage.memory.store import MemoryStore


def mention_filter(name: str) -> str | None:
    """SQL prefilter: unknown subject and the (normalised) name in the content, or None for an empty name."""
    key = normalise_subject(name)
    if not key:
        return None
    escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"subject = '' AND lower(content) LIKE {sql_str('%' + escaped + '%')} ESCAPE '\\'"


def unknown_mentions(store: MemoryStore, name: str) -> int:
    """How many unknown-subject memories mention `name` (0 on an empty store)."""
    where = mention_filter(name)
    table = store._readable(vectors=False)  # a count needs the table itself, not a search
    if table is None or where is None:
        return 0
    return int(table.count_rows(where))


def mentions(name: str, text: str) -> bool:
    """Whether `text` names `name` (as `mention_filter` matches it)."""
    key = normalise_subject(name)
    return bool(key) and key in text.casefold()
