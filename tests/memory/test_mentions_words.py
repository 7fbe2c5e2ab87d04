"""Mentions of a person in unknown-subject memories: whole words, a full name's first name, in the real store."""

from __future__ import annotations

from datetime import datetime

import pytest

from chronicle.memory.model import Memory
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.storage.memory.mentions import mentions, unknown_mentions
from chronicle.storage.memory.store import MemoryStore
from tests.memory.conftest import HashEmbedder


@pytest.mark.parametrize(("name", "text", "named"), [
    ("Tom", "See you tomorrow at the gym.", False), ("Tom", "Tom said the gym opens at six.", True),
    ("Ann", "Planning the trip with Anna.", False), ("Brandon Lee", "Talked to Brandon about his new job.", True),
    ("张伟", "今天和张伟聊了他的新工作。", True), ("Zoë", "zoë moved to Lyon.", True),
])
def test_a_name_is_a_whole_word(name: str, text: str, named: bool) -> None:
    assert mentions(name, text) is named


def test_unknown_mentions_count_whole_words_in_the_store(settings) -> None:
    store = MemoryStore(settings, HashEmbedder())
    rows = [("See you tomorrow at the gym.", ""), ("Met Tom at the climbing gym today.", ""),
            ("Talked to Brandon about his new job; Brandon starts Monday.", ""),
            ("Tom: I moved to Leeds.", "tom")]
    store.upsert([redact_memory(Memory(content=t, summary=t[:20], importance=0.6, target_file="MEMORY.md",
                                       subject=s), Redactor.build()) for t, s in rows],
                 created=datetime(2026, 3, 3, 12, tzinfo=settings.tz_for("x")))
    assert unknown_mentions(store, "Tom") == 1
    assert unknown_mentions(store, "Brandon Lee") == 1
    assert unknown_mentions(store, "Anna") == 0
