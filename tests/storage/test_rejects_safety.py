"""Whether a refused line names a safety event is decided once, in the transaction that stores it (rejects.safety),
so the desk's home page and `chronicle status` read a flag; lines stored before the flag existed are judged by the
same rule when read, and decided when their file's rejects are stored again."""

from __future__ import annotations

from chronicle.ingest.model import Reject
from chronicle.settings import Settings
from chronicle.storage.db import read, write
from chronicle.storage.raw_logs import insert_rejects, refused_safety_lines

FILE, OTHER = "/logs/site-3.jsonl", "/logs/site-4.jsonl"


def _reject(path: str, line: int, raw: str) -> Reject:
    return Reject(path, line, line * 100, "invalid_json", "unterminated string", raw)


def _flags(settings: Settings) -> list[tuple]:
    return read(settings, lambda c: c.execute("SELECT source_file, line_no, safety FROM rejects ORDER BY 1, 2")
                .fetchall())


def test_each_refused_line_is_decided_when_stored_and_read_as_a_flag(settings: Settings) -> None:
    write(settings, lambda c: insert_rejects(c, [
        _reject(FILE, 1, '{"type": "sae", "content": "受试者 03-011 因肺炎住院'),
        _reject(FILE, 2, '{"content": "checksum 3f2ae19c'),  # `ae` inside a hex id: the SQL hint keeps it, the rule not
        _reject(FILE, 3, '{"content": "no adverse event this week'),  # denied or not, a refused line cannot be judged
        _reject(FILE, 4, '{"content": "visit 3 done'),  # ruled out by the hint at insert
        _reject(OTHER, 7, 'SUSAR reported to the ethics committee, "'),
    ]))
    assert _flags(settings) == [(FILE, 1, True), (FILE, 2, False), (FILE, 3, True), (FILE, 4, False),
                                (OTHER, 7, True)]
    assert read(settings, refused_safety_lines) == [(FILE, 1), (FILE, 3), (OTHER, 7)]
    assert read(settings, refused_safety_lines, [OTHER]) == [(OTHER, 7)]


def test_lines_stored_before_the_flag_are_judged_by_the_rule_until_decided(settings: Settings) -> None:
    write(settings, lambda c: insert_rejects(c, [_reject(FILE, 1, "AE grade 2 rash, "),
                                                 _reject(FILE, 2, "checksum 3f2ae19c, "),
                                                 _reject(OTHER, 5, "严重不良事件, ")]))
    # As a database upgraded from before the column holds them: no answer stored.
    write(settings, lambda c: c.execute("UPDATE rejects SET safety = NULL"))
    assert read(settings, refused_safety_lines) == [(FILE, 1), (OTHER, 5)]

    write(settings, lambda c: insert_rejects(c, [_reject(FILE, 9, "visit 9 done, ")]))  # FILE's rejects stored again
    assert _flags(settings) == [(FILE, 1, True), (FILE, 2, False), (FILE, 9, False), (OTHER, 5, None)]
    assert read(settings, refused_safety_lines) == [(FILE, 1), (OTHER, 5)]
