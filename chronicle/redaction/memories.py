"""The memory gate (pure): a distilled memory with every text field redacted — the only form the memory store
takes. `MemoryStore.upsert*` calls `require_redacted_memory` and raises `NotRedactedError` for a memory that did
not come through `redact_memory` (its fields then hold plain `str`, not `Redacted`).

`Memory` is a pydantic model: building or validating one turns `Redacted` fields back into plain `str`, so the
gate is the last step before the store (`model_copy` keeps the field objects as they are).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial

from chronicle.memory.model import Memory
from chronicle.redaction.redactor import Redactor
from chronicle.redaction.text import Redacted, gate, require_redacted

STORE_SINK = "the memory store"


def redact_memory(memory: Memory, redactor: Redactor, counts: Counter[str] | None = None) -> Memory:
    """The memory with content, summary, key info, tags and source redacted (`counts` gets the kinds found in
    the text fields; the source, a note file name, was counted when the notes were read)."""
    return memory.model_copy(update={
        "content": redactor.redact(memory.content, counts),
        "summary": redactor.redact(memory.summary, counts),
        "key_info": redactor.redact_all(memory.key_info, counts),
        "tags": redactor.redact_all(memory.tags, counts),
        "source": redactor.redact(memory.source),
    })


def require_redacted_memory(memory: Memory, sink: str = STORE_SINK) -> Memory:
    """`memory` unchanged, or `NotRedactedError` when one of its text fields skipped the gate."""
    require_redacted([memory.content, memory.summary, memory.source, *memory.key_info, *memory.tags], sink)
    return memory


def text_gate(redactor: Redactor) -> Callable[[str], Redacted]:
    """`gate` with the settings' redactor: for text that is plain `str` again on its way to the embedder — a row
    read back from the table (written redacted; redacting is idempotent), a search query."""
    return partial(gate, redactor=redactor)
