"""Forgetting as pure rules: which rows a request selects, tombstones, and the knowledge-file lines that go."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chronicle.distill.forget_lines import Marks, change_files, drop_lines, rewrite_lines
from chronicle.distill.sections import Item, apply
from chronicle.memory.forget import Selector, SelectorError, corrected, is_forgotten, select, tombstones
from chronicle.memory.model import Memory, content_hash
from chronicle.memory.records import StoredMemory

HUMAN = "# My notes\r\n\r\nwritten by hand -- keep me\r\n"


def row(rid: str, content: str, subject: str = "", absorbed: tuple[str, ...] = ()) -> StoredMemory:
    h = content_hash(content)
    return StoredMemory(rid, content, content, "MEMORY.md", [], 0.5, [], "d.md", datetime(2026, 1, 1, tzinfo=UTC),
                        None, h, "en", [], None, merged_hashes=[h, *(content_hash(a) for a in absorbed)],
                        absorbed=list(absorbed), subject=subject)


def item(rid: str, text: str, day: str = "2026-03-02") -> Item:
    return Item(memory_id=rid, content_hash=content_hash(text), text=text, day=day, source=f"{day}.md")


ROWS = [row("2026-03-02-aaa", "Alice is allergic to penicillin", "alice", ("Alice cannot take penicillin",)),
        row("2026-03-02-bbb", "Works night shifts on Wednesdays", "alice"),
        row("2026-03-02-ccc", "Works night shifts on Wednesdays", "bob"),
        row("2026-03-03-ddd", "The deploy key lives in the vault", "")]


@pytest.mark.parametrize(("selector", "ids"), [
    (Selector(memory_id="2026-03-02-aaa"), ["2026-03-02-aaa"]),
    (Selector(memory_id="2026-03-03"), ["2026-03-03-ddd"]),  # a unique prefix
    (Selector(about=" Alice "), ["2026-03-02-aaa", "2026-03-02-bbb"]),
    (Selector(match="NIGHT  shifts"), ["2026-03-02-bbb", "2026-03-02-ccc"]),
    (Selector(match="cannot take"), ["2026-03-02-aaa"]),  # an absorbed text counts
    (Selector(about="bob", match="night shifts"), ["2026-03-02-ccc"]),
    (Selector(about="carol"), []),
])
def test_select(selector: Selector, ids: list[str]) -> None:
    assert [r.id for r in select(ROWS, selector)] == ids


def test_select_refuses_nothing_and_ambiguous_prefixes() -> None:
    with pytest.raises(SelectorError):
        select(ROWS, Selector())
    with pytest.raises(SelectorError, match="matches 3"):
        select(ROWS, Selector(memory_id="2026-03-02"))


def test_tombstones_cover_merged_texts_and_keep_other_people() -> None:
    stones = {}
    for s in tombstones([ROWS[0], ROWS[1]]):
        stones.setdefault(s.content_hash, set()).add(s.subject)

    def memory(text: str, subject: str) -> Memory:
        return Memory(content=text, summary=text, importance=0.5, target_file="MEMORY.md", subject=subject)

    assert is_forgotten(memory("Alice cannot take penicillin.", "alice"), stones)  # merged text, normalised
    assert is_forgotten(memory("Works night shifts on Wednesdays", "alice"), stones)
    assert is_forgotten(memory("Works night shifts on Wednesdays", ""), stones)  # whose it is unknown: still gone
    assert not is_forgotten(memory("Works night shifts on Wednesdays", "bob"), stones)  # bob's own words stay
    unknown = {s.content_hash: {s.subject} for s in tombstones([ROWS[3]])}
    assert is_forgotten(memory("The deploy key lives in the vault", "carol"), unknown)


def test_drop_lines_keeps_human_text_byte_for_byte_and_removes_emptied_sections() -> None:
    text, _ = apply(HUMAN, [item("2026-03-02-aaa", "Alice is allergic to penicillin"),
                            item("2026-03-02-bbb", "Works night shifts on Wednesdays"),
                            item("2026-03-03-ddd", "The deploy key lives in the vault", "2026-03-03")])
    out, n = drop_lines(text, Marks(frozenset({"2026-03-02-aaa"}), frozenset()))
    assert n == 1 and "penicillin" not in out and "night shifts" in out and out.startswith(HUMAN)
    out, n = drop_lines(out, Marks(frozenset({"2026-03-02-bbb"}), frozenset()))
    assert n == 1 and "2026-03-02" not in out and "deploy key" in out and out.startswith(HUMAN)
    out, n = drop_lines(out, Marks(frozenset({"2026-03-03-ddd"}), frozenset()))
    assert out == HUMAN and n == 1
    assert drop_lines(out, Marks(frozenset({"2026-03-03-ddd"}), frozenset())) == (HUMAN, 0)  # idempotent


def test_hash_marks_never_take_a_kept_rows_line_and_lines_outside_sections_stay() -> None:
    shared = "Works night shifts on Wednesdays"
    hand = f"- {shared} <!-- chronicle:mem id=2026-03-02-bbb hash={content_hash(shared)[:16]} -->\n"
    # The same words in two people's bullets (ccc kept, zzz an approved proposal's id, no stored row).
    ours = [apply("\n", [it])[0] for it in (item("2026-03-02-ccc", shared), item("p-zzz", shared, "2026-03-04"))]
    text = hand + "".join(ours)
    marks = Marks(frozenset({"2026-03-02-bbb"}), frozenset({content_hash(shared)}), frozenset({"2026-03-02-ccc"}))
    out, n = drop_lines(text, marks)
    assert out.startswith(hand)  # a bullet a human copied outside the managed sections is theirs
    assert "id=2026-03-02-ccc" in out and "id=p-zzz" not in out and n == 1


def test_rewrite_and_files(tmp_path) -> None:
    text, _ = apply(HUMAN, [item("2026-03-02-aaa", "Alice is allergic to penicillin")])
    (tmp_path / "USER.md").write_text(text, encoding="utf-8", newline="")
    fixed = corrected(ROWS[0], "Alice is allergic to amoxicillin", now=datetime(2026, 3, 5, tzinfo=UTC))
    assert fixed.absorbed == [] and fixed.merged_hashes == [fixed.content_hash] and fixed.id == ROWS[0].id
    edit = lambda t: rewrite_lines(t, Marks(frozenset({fixed.id}), frozenset()), fixed.content, fixed.content_hash)  # noqa: E731
    assert [c.lines for c in change_files(tmp_path, edit, keep=3, dry_run=True)] == [1]
    assert (tmp_path / "USER.md").read_bytes().decode() == text and not (tmp_path / ".backups").exists()
    [done] = change_files(tmp_path, edit, keep=3)
    new = (tmp_path / "USER.md").read_bytes().decode()
    assert done.backup is not None and done.backup.read_bytes().decode() == text
    assert "amoxicillin" in new and "penicillin" not in new and new.startswith(HUMAN)
    assert f"hash={fixed.content_hash[:16]}" in new and "\r\n" in new.split(HUMAN)[1]
    assert change_files(tmp_path, edit, keep=3) == []  # already says it: no write, no backup
