"""Memories whose person is unknown (subject "") that mention a name in their text.

A scoped search (`--about X`) returns only memories known to be about X; when the notes did not say whose a
memory is, it may still name X ("张曼婷下周要去厦门" in a section about nobody). These reads let the caller say
so, and opt in to them, instead of an empty list in silence.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from chronicle.memory.subjects import normalise_subject
from chronicle.storage.memory.arrow import all_rows, sql_str

if TYPE_CHECKING:
    from chronicle.storage.memory.store import MemoryStore


def _keys(name: str) -> list[str]:
    """What counts as naming the person: the whole name, and for a Latin full name its first name too ("Brandon"
    for "Brandon Lee": notes call people by their first name)."""
    key = normalise_subject(name)
    if not key:
        return []
    first = key.split(" ")[0]
    return [key] + ([first] if " " in key and re.fullmatch(r"[^\W\d_]{2,}", first)
                     and not re.search(r"[\u3400-\u9fff]", first) else [])


def mention_filter(name: str) -> str | None:
    """SQL prefilter: unknown subject and the (normalised) name in the content, or None for an empty name. A
    superset: `mentions` then keeps only whole words ("Tom" is not in "tomorrow")."""
    keys = _keys(name)
    if not keys:
        return None
    likes = []
    for key in keys:
        escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        likes.append(f"lower(content) LIKE {sql_str('%' + escaped + '%')} ESCAPE '\\'")
    return f"subject = '' AND ({' OR '.join(likes)})"


def unknown_mentions(store: MemoryStore, name: str) -> int:
    """How many unknown-subject memories mention `name` (0 on an empty store)."""
    where = mention_filter(name)
    table = store._readable(vectors=False)  # a count needs the table itself, not a search
    if table is None or where is None:
        return 0
    return sum(mentions(name, text) for text in all_rows(table, ["content"], where).column("content").to_pylist())


def mentions(name: str, text: str) -> bool:
    """Whether `text` names `name`: the name (or a full name's first name) as a whole word — a Latin name is not
    found inside another word; a Chinese name, written without spaces, anywhere."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    for key in _keys(name):
        if re.search(r"[a-z0-9]", key):
            if re.search(rf"(?<![\w]){re.escape(key)}(?![\w])", folded):
                return True
        elif key in folded:
            return True
    return False
