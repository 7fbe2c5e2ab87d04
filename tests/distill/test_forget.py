"""`chronicle memory forget|edit` end to end: real notes distilled offline into a real LanceDB folder and knowledge
files, then forgotten / corrected, then distilled again from scratch (nothing forgotten comes back)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.distill.conftest import ingest, snapshot

UNTIL = date(2026, 3, 3)
NOTE = """# 2026-03-02 会话记录

## 与张曼婷的对话

- 张曼婷: 我最近搬到了杭州，在一家三甲医院做护士，每周三值夜班。
- 张曼婷: 我对青霉素过敏，去医院一定要提醒医生。

## 与王峰的对话

- 王峰: 我最近搬到了杭州，在一家三甲医院做护士，每周三值夜班。
- 王峰: 我喜欢周末去西湖边跑步，一般跑十公里。
"""
FORGET = "青霉素过敏"
SHARED = "每周三值夜班"


def _distill_from_scratch(settings):
    """Distill the window again as if the notes were new (a new prompt or model): the chunk cache emptied."""
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.storage.db import write

    write(settings, lambda conn: conn.execute("DELETE FROM distill_chunks"))
    return distill_memory(days=3, until=UNTIL)


@pytest.fixture
def distilled(distill_env: Path, tmp_path: Path):
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.settings import Settings

    notes = tmp_path / "notes" / "memory"
    notes.mkdir(parents=True)
    (notes / "2026-03-02.md").write_text(NOTE, encoding="utf-8")
    ingest(notes.parent)
    distill_memory(days=3, until=UNTIL)
    return Settings()


def _rows(settings):
    from chronicle.storage.memory.store import MemoryStore

    return MemoryStore(settings).list(limit=1000)


def _changes(settings) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings, read_only=True) as conn:
        return conn.execute("SELECT kind, actor, reason, selector, memory_ids, files FROM memory_changes").fetchall()


def _live(settings) -> str:
    """The knowledge files as an assistant loads them (backups aside)."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(settings.workspace_dir.glob("*.md")))


def _invoke(*args: str):
    from chronicle.cli.main import app

    return CliRunner().invoke(app, list(args))


def test_forget_takes_a_memory_out_of_store_and_files_for_good(distilled) -> None:
    settings = distilled
    before = _rows(settings)
    target = [r for r in before if FORGET in r.content]
    assert target and {r.subject for r in target} == {"张曼婷"}
    files = snapshot(settings.workspace_dir)
    assert any(FORGET in text.decode() for text in files.values())

    # A dry run names what would go and changes nothing: store, files, ledgers.
    dry = _invoke("memory", "forget", "--match", FORGET, "--dry-run", "--format", "json")
    assert dry.exit_code == 0, dry.output
    assert target[0].id in dry.output
    assert len(_rows(settings)) == len(before) and snapshot(settings.workspace_dir) == files
    assert _changes(settings) == []

    out = _invoke("memory", "forget", "--match", FORGET, "--reason", "asked to be forgotten", "--by", "zmt")
    assert out.exit_code == 0, out.output
    after = _rows(settings)
    assert {r.id for r in after} == {r.id for r in before} - {r.id for r in target}
    live = snapshot(settings.workspace_dir)
    for name, text in live.items():
        if not name.startswith(".backups"):
            assert FORGET not in text.decode(), name
    backups = [name for name in live if name.startswith(".backups/")]
    assert backups and any(FORGET in live[b].decode() for b in backups)  # the old file is kept, as for any write
    [(kind, actor, reason, selector, ids, changed)] = _changes(settings)
    assert (kind, actor, reason, selector) == ("forget", "zmt", "asked to be forgotten", f"match={FORGET}")
    assert ids == [r.id for r in target] and changed

    # Idempotent: asked again, nothing is left to forget and nothing changes.
    again = _invoke("memory", "forget", "--match", FORGET, "--reason", "again")
    assert again.exit_code == 0 and "nothing to forget" in again.output
    assert snapshot(settings.workspace_dir) == live and len(_changes(settings)) == 1
    by_id = _invoke("memory", "forget", target[0].id, "--reason", "again")
    assert by_id.exit_code == 0 and "forgotten before" in by_id.output

    # Re-distilling the same notes from scratch never brings it back (neither store nor file), and says why.
    summary = _distill_from_scratch(settings)
    assert summary.tally.rejected["forgotten"] >= 1
    assert not [r for r in _rows(settings) if FORGET in r.content]
    assert {r.id for r in _rows(settings)} == {r.id for r in after}
    for name, text in snapshot(settings.workspace_dir).items():
        if not name.startswith(".backups"):
            assert FORGET not in text.decode(), name


def test_forget_about_one_person_leaves_the_same_words_of_another(distilled) -> None:
    settings = distilled
    before = _rows(settings)
    shared = {r.subject: r for r in before if SHARED in r.content}
    assert set(shared) == {"张曼婷", "王峰"}  # the same words, two people: two memories
    assert _live(settings).count(SHARED) == 2

    out = _invoke("memory", "forget", "--about", "张曼婷", "--reason", "moved away, asked us to forget her")
    assert out.exit_code == 0, out.output
    after = _rows(settings)
    assert "张曼婷" not in {r.subject for r in after}
    kept = [r for r in before if r.subject != "张曼婷"]
    assert {r.id for r in after} == {r.id for r in kept}
    live = _live(settings)
    assert live.count(SHARED) == 1 and f"id={shared['王峰'].id}" in live
    assert f"id={shared['张曼婷'].id}" not in live

    _distill_from_scratch(settings)
    again = _rows(settings)
    assert "张曼婷" not in {r.subject for r in again}
    assert {r.id for r in again} == {r.id for r in kept}  # 王峰's memories were never touched
    assert _live(settings).count(SHARED) == 1


def test_edit_corrects_a_memory_and_redistilling_keeps_the_correction(distilled) -> None:
    from chronicle.services.memory import search_memories

    settings = distilled
    [row] = [r for r in _rows(settings) if "西湖" in r.content]
    fixed = "王峰周末去钱塘江边跑步，一般跑十公里，联系邮箱 wangfeng.run@example.org"
    out = _invoke("memory", "edit", row.id[:14], "--text", fixed, "--reason", "it was the Qiantang river")
    assert out.exit_code == 0, out.output
    [now] = [r for r in _rows(settings) if r.id == row.id]
    assert "钱塘江" in now.content and "wangfeng.run@example.org" not in now.content  # through the redaction gate
    assert "[REDACTED:email]" in now.content
    live = _live(settings)
    assert "钱塘江" in live and "西湖" not in live and "wangfeng.run" not in live
    hits = search_memories(settings, "王峰在哪里跑步", about="王峰", limit=3)
    assert hits and hits[0].id == row.id  # re-embedded: found by its new words

    again = _invoke("memory", "edit", row.id, "--text", fixed)
    assert again.exit_code == 0 and "nothing changed" in again.output

    _distill_from_scratch(settings)
    texts = [r.content for r in _rows(settings) if r.subject == "王峰"]
    assert not [t for t in texts if "西湖" in t] and [t for t in texts if "钱塘江" in t]
    live = _live(settings)
    assert "西湖" not in live and "钱塘江" in live
    assert [c[0] for c in _changes(settings)] == ["correct"]


def test_an_assistants_forget_request_waits_for_a_person(distilled) -> None:
    """`request_forget` (the MCP tool's use case) files a pending request and forgets nothing; `chronicle memory
    approve f-…` forgets what it names, recorded as the approver's change with the assistant's reason; a rejected
    request changes nothing and stays rejected; a selector that names nothing is refused."""
    from chronicle.services.assistant import ProposalRefused, request_forget

    settings = distilled
    before, files = _rows(settings), snapshot(settings.workspace_dir)
    asked = request_forget(settings, about="张曼婷", match=FORGET, reason="she asked me to forget her allergy")
    assert asked.new and asked.request.status == "pending" and asked.would_take == 1
    again = request_forget(settings, about="张曼婷", match=FORGET, reason="asked twice")
    assert not again.new and again.request.request_id == asked.request.request_id
    assert len(_rows(settings)) == len(before) and snapshot(settings.workspace_dir) == files and not _changes(settings)
    with pytest.raises(ProposalRefused, match="nothing to forget"):
        request_forget(settings, match="从未提过的事", reason="x")
    with pytest.raises(ProposalRefused, match="say what to forget"):
        request_forget(settings, reason="x")

    listed = _invoke("memory", "proposals")
    assert listed.exit_code == 0 and asked.request.request_id in listed.output and "forget" in listed.output
    other = request_forget(settings, about="王峰", reason="not really")
    rejected = _invoke("memory", "reject", other.request.request_id)
    assert rejected.exit_code == 0 and "nothing was forgotten" in rejected.output
    assert _invoke("memory", "approve", other.request.request_id).exit_code == 1  # a rejection stands

    approved = _invoke("memory", "approve", asked.request.request_id[:8])
    assert approved.exit_code == 0 and "1 memory(ies) forgotten" in approved.output, approved.output
    assert not [r for r in _rows(settings) if FORGET in r.content]
    assert {r.subject for r in _rows(settings) if r.subject == "王峰"}  # the rejected request took nothing
    [(kind, actor, reason, selector, _, changed)] = _changes(settings)
    assert actor != "assistant (MCP)"  # the person who approved it changed the memory
    assert kind == "forget" and "she asked me to forget her allergy" in reason and selector == \
        f"about=张曼婷 match={FORGET}" and changed
    assert "was approved before" in _invoke("memory", "approve", asked.request.request_id).output


def test_an_approval_killed_after_its_forget_is_finished_by_approving_again(distilled) -> None:
    """The forget runs before the request's row says approved: a kill between them leaves the request pending with
    its memories gone. Approving again finds nothing left, and ties the request to the change that forgot them."""
    from chronicle.services.assistant import request_forget
    from chronicle.services.forget import Selector, forget
    from chronicle.storage.db import read
    from chronicle.storage.proposals import forget_requests

    settings = distilled
    asked = request_forget(settings, match=FORGET, reason="she asked").request
    # What the approval does first, and then the process dies.
    first = forget(settings, Selector(None, None, FORGET), reason=f"{asked.source} asked: {asked.reason}", by="ops")
    assert first.change_id and read(settings, forget_requests, "pending")[0].request_id == asked.request_id
    out = _invoke("memory", "approve", asked.request_id)
    assert out.exit_code == 0 and f"nothing left to forget (forgotten by change {first.change_id})" in out.output
    [done] = read(settings, forget_requests, None)
    assert (done.status, done.change_id) == ("approved", first.change_id) and len(_changes(settings)) == 1
