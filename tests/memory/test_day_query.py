"""A question naming the day a note was written prefers that day's memories (full text: the day's token), in the
real LanceDB store over MiniLM, with memories distilled by the offline rules from notes on two days."""

from __future__ import annotations

from datetime import UTC, date, datetime

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.offline import distill_entries
from chronicle.memory.search import day_tokens, tokenize
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.storage.memory.store import MemoryStore

# 3月5日 and 5月3日 hold the same words ("3", "5", "月"): only a token for the whole day tells them apart.
DAYS = {
    date(2023, 3, 5): ["刘琳：今天晚上我看了一部电影，名字叫《肖申克的救赎》，非常感人。"],
    date(2023, 5, 2): ["Melanie: We watched Finding Nemo at the cinema downtown, the kids loved the turtles."],
    date(2023, 5, 3): ["陈阳：今天晚上我看了一部电影，名字叫《海边的曼彻斯特》，非常感人。",
                       "Caroline: We watched Frozen on TV at home tonight, the kids sang along to every song."],
}


def distilled(day: date, lines: list[str]) -> list:
    entries = [NoteEntry(f"{day}-{n}", "p", day, f"{day}.md", n, "bullet", text, ("对话",))
               for n, text in enumerate(lines, start=3)]
    return [redact_memory(m, Redactor.build()) for m in distill_entries(entries)]


def test_a_question_naming_a_day_finds_that_days_memory_first(settings, embedder) -> None:
    store = MemoryStore(settings, embedder)
    store.upsert_many([(distilled(day, lines), datetime(day.year, day.month, day.day, 12, tzinfo=UTC))
                       for day, lines in DAYS.items()])
    store.optimize()  # every row in the full-text index, as after a distillation of many notes
    for question, answer in (("在5月3号我看了哪一部电影？", "海边的曼彻斯特"), ("在3月5日我看了哪一部电影？", "肖申克"),
                             ("Which movie did the kids watch on May 3, 2023?", "Frozen"),
                             ("Which movie did the kids watch on 2 May?", "Finding Nemo")):
        found = store.search(question, limit=4)
        assert answer in found[0].content, (question, [h.content for h in found])
    assert store.count() == 4  # four memories, none merged into another


def test_a_day_is_one_token_however_it_is_written() -> None:
    for text in ("5月3号", "2023年5月3日", "5 月 3 日", "May 3, 2023", "3 May 2023", "the 3rd of May", "may 3rd"):
        assert day_tokens(text.casefold()) == ["d0503"], text
    assert day_tokens("sept. 14th") == ["d0914"] and day_tokens("oct 1") == ["d1001"]
    for text in ("15月3日", "13月1日", "5月40日", "March 2023", "mayo 3", "we may go", "2023-05-03"):
        assert day_tokens(text.casefold()) == [], text
    assert "d0503" in tokenize("我在5月3号买了一件连衣裙") and "连衣裙" in tokenize("我在5月3号买了一件连衣裙")
