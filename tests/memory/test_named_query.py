"""A query that names a person prefers that person's memories (unscoped search), in the real LanceDB store over
MiniLM, with notes in a layout the subject rules were not written around (speech verbs under a club heading)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from chronicle.distill.chunks import NoteEntry
from chronicle.distill.offline import distill_entries
from chronicle.ingest.notes import parse_note
from chronicle.memory.ranking import ELSEWHERE_FACTOR, elsewhere, named_subjects, rerank
from chronicle.memory.records import SearchHit
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.storage.memory.store import MemoryStore

NOTE = """# 2024-06-01

## Book club, second meeting

Tomás said: My favourite style of dance is salsa, I dance it every Friday night with my sister.

Ingrid said: We finished the novel about the lighthouse keeper and nobody liked the ending.

Priya said: I love contemporary dance the most, I go twice a week to the studio near my office.
"""


def distilled(text: str) -> list:
    entries = [NoteEntry(f"e{b.line_no}", "p", date(2024, 6, 1), "2024-06-01.md", b.line_no, b.kind, b.text,
                         tuple(b.heading_path), b.parent) for b in parse_note(text)]
    return [redact_memory(m, Redactor.build()) for m in distill_entries(entries)]


def test_a_question_naming_a_person_ranks_their_memory_above_anothers(settings, embedder) -> None:
    memories = distilled(NOTE)
    assert [m.subject for m in memories] == ["tomás", "ingrid", "priya"]
    question = "What is Priya's favourite style of dance?"
    plain = MemoryStore(settings.updated(search_named_subject_factor=1.0), embedder)
    plain.upsert(memories, created=datetime(2024, 6, 1, 12, tzinfo=UTC))
    # Without the rule, Tomás's sentence (the question's own words) wins over Priya's.
    assert plain.search(question, limit=3)[0].subject == "tomás"
    found = MemoryStore(settings, embedder).search(question, limit=3)
    assert found[0].subject == "priya"
    assert {h.subject for h in found} == {"priya", "tomás", "ingrid"}  # demoted, never dropped
    # Scoped to the person, nothing changes; a query naming nobody is ranked as before.
    assert [h.subject for h in MemoryStore(settings, embedder).search(question, subject="Tomás")] == ["tomás"]
    unnamed = "Whose favourite style of dance is salsa?"
    assert [h.id for h in MemoryStore(settings, embedder).search(unnamed, limit=3)] == [
        h.id for h in plain.search(unnamed, limit=3)]


def hit(rid: str, subject: str, content: str, score: float) -> SearchHit:
    return SearchHit(id=rid, content=content, summary=content, target_file="MEMORY.md", tags=[], importance=0.5,
                     key_info=[], source="", created=datetime(2024, 6, 1, tzinfo=UTC), updated=None,
                     content_hash=rid, language="", source_entry_ids=[], flow_run_id=None, subject=subject,
                     score=score, semantic=score, cosine=score)


def test_names_are_whole_words_in_latin_script_and_anywhere_in_chinese() -> None:
    subjects = {"mel", "melanie", "张曼婷", "user", ""}
    assert named_subjects("What did Melanie's kids like?", subjects) == {"melanie"}
    assert named_subjects("张曼婷的猫叫什么名字？", subjects) == {"张曼婷"}
    assert named_subjects("Which melody was played?", subjects) == frozenset()
    assert named_subjects("", subjects) == frozenset()


def test_only_memories_about_someone_else_that_do_not_mention_the_named_person_are_demoted() -> None:
    named = frozenset({"gina"})
    assert elsewhere(hit("a", "jon", "Jon: I opened my dance studio.", 0.9), named)
    assert not elsewhere(hit("b", "jon", "Jon: Gina, your store looks great!", 0.9), named)
    assert not elsewhere(hit("c", "gina", "Gina: I love contemporary dance.", 0.9), named)
    assert not elsewhere(hit("d", "", "The studio opens on Friday.", 0.9), named)
    assert not elsewhere(hit("a", "jon", "Jon: I opened my dance studio.", 0.9), frozenset())
    hits = [hit("jon", "jon", "Jon: contemporary is my top pick.", 0.80),
            hit("gina", "gina", "Gina: it really speaks to me.", 0.75)]
    ranked = rerank(hits, now=datetime(2024, 6, 2, tzinfo=UTC), importance_weight=0.3,
                    query="What is Gina's favourite style of dance?")
    assert [h.id for h in ranked] == ["gina", "jon"] and ranked[1].score == 0.80 * ELSEWHERE_FACTOR
    assert [h.id for h in rerank(hits, now=datetime(2024, 6, 2, tzinfo=UTC), importance_weight=0.3)] == [
        "jon", "gina"]
