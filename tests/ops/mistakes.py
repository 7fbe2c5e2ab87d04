"""Operator mistakes and the answer each gets: the table `tests/ops/test_mistakes.py` checks, one case a test,
and `python -m scripts.mistakes --write` renders into docs/mistakes.md (a test fails when the page is stale).

`{tmp}` in an argument or an environment value is the test's scratch folder; `files` are written there first.
`answer` is what the command must print (a part of its output); `code` its exit status.
"""

from __future__ import annotations

import gzip
import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mistake:
    topic: str
    situation: str
    args: tuple[str, ...]
    answer: str
    code: int
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    one_line: bool = True
    """The whole output is that one line (no table, no traceback)."""

    @property
    def command(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return " ".join(filter(None, [env, "chronicle", shlex.join(self.args)])).replace("{tmp}/", "")


def _line(**fields: str) -> bytes:
    import json

    return (json.dumps(fields, ensure_ascii=False) + "\n").encode()



MISTAKES: list[Mistake] = [
    # --- unknown project ---------------------------------------------------------------------
    *[Mistake("unknown project", f"`{' '.join(a[:2]) if a[0] == 'report' else a[0]}` on a project with no entries",
              a, "unknown project 'XH999'; known projects: ALPHA", 2)
      for a in (("report", "show", "--project", "XH999", "--week", "2026-W01"),
                ("report", "edit", "--project", "XH999", "--week", "2026-W01", "--file", "{tmp}/fix.md",
                 "--reason", "typo", "--author", "dr-li"),
                ("report", "history", "--project", "XH999", "--week", "2026-W01"),
                ("report", "list", "--project", "XH999"),
                ("context", "--project", "XH999"),
                ("ask", "哪几周发生了 SAE？", "--project", "XH999"),
                ("chart", "--project", "XH999", "--out", "{tmp}/charts"),
                ("stats", "--project", "XH999"),
                ("weeks", "--project", "XH999"),
                ("backfill", "--project", "XH999"),
                ("distill", "--project", "XH999"))],
    Mistake("unknown project", "a project id one letter off", ("context", "--project", "ALPHB"),
            "unknown project 'ALPHB' (did you mean 'ALPHA'?)", 2),
    # --- mistyped home -----------------------------------------------------------------------
    *[Mistake("mistyped home", f"`{' '.join(a)}` with CHRONICLE_HOME pointing where nothing was ever ingested",
              a, "no Chronicle data at", 1, env={"CHRONICLE_HOME": "{tmp}/no-such-home"})
      for a in (("runs",), ("weeks",), ("memory", "list"), ("memory", "search", "偏好"), ("memory", "tags"),
                ("report", "list", "--project", "ALPHA"), ("context", "--project", "ALPHA"),
                ("stats", "--project", "ALPHA"))],
    # --- names and ranges --------------------------------------------------------------------
    Mistake("names and ranges", "`runs --flow` naming no flow", ("runs", "--flow", "nope"),
            "no flow is named like 'nope'; flows with runs:", 1),
    Mistake("names and ranges", "a reversed week range",
            ("backfill", "--all", "--from", "2026-W30", "--to", "2026-W20"),
            "--from 2026-W30 is after --to 2026-W20: the range is reversed", 2),
    Mistake("names and ranges", "a week that does not exist", ("report", "show", "--project", "ALPHA", "--week",
                                                               "2025-W53"),
            "--week '2025-W53' does not exist: 2025 has ISO weeks W01 to W52", 2),
    Mistake("names and ranges", "a reversed range for `stats`",
            ("stats", "--project", "ALPHA", "--from", "2026-W30", "--to", "2026-W20"),
            "--from 2026-W30 is after --to 2026-W20: the range is reversed", 2),
    Mistake("names and ranges", "a week written the wrong way", ("stats", "--project", "ALPHA", "--from", "2026-13"),
            "--from '2026-13' is not an ISO week: write YYYY-Www, e.g. 2026-W05", 2),
    Mistake("names and ranges", "a path that does not exist", ("ingest", "{tmp}/no/such/folder"),
            "no such file or folder", 2),
    # --- report edits ------------------------------------------------------------------------
    Mistake("report edit", "an empty edit file (would blank the week and pin it as a human edit)",
            ("report", "edit", "--project", "ALPHA", "--week", "2026-W01", "--file", "{tmp}/empty.md",
             "--reason", "typo", "--author", "dr-li"),
            "is empty: nothing stored", 2, files={"empty.md": b"  \n"}),
    Mistake("report edit", "an edit file with NUL bytes (a binary file pinned as the week's truth)",
            ("report", "edit", "--project", "ALPHA", "--week", "2026-W01", "--file", "{tmp}/nul.md",
             "--reason", "typo", "--author", "dr-li"),
            "contains a NUL byte", 2, files={"nul.md": b"week text\x00\x00more"}),
    Mistake("report edit", "an edit without saying who makes it (never the shell user silently)",
            ("report", "edit", "--project", "ALPHA", "--week", "2026-W01", "--file", "{tmp}/fix.md",
             "--reason", "typo"),
            "say who corrects the report", 2, files={"fix.md": b"fixed"}),
    Mistake("report edit", "an edit file that is not UTF-8 (Latin-1, GBK...)",
            ("report", "edit", "--project", "ALPHA", "--week", "2026-W01", "--file", "{tmp}/latin1.md",
             "--reason", "x", "--author", "dr-li"),
            "is not UTF-8 text (byte 6", 2, files={"latin1.md": "Woche mit Störung".encode("latin-1")[:6] + b"\xf6"}),
    # --- settings ----------------------------------------------------------------------------
    Mistake("settings", "an ambiguous abbreviation as the time zone", ("runs",),
            "setting CHRONICLE_TIMEZONE: 'CST' is not an IANA time zone name (valid example: "
            "CHRONICLE_TIMEZONE=Asia/Shanghai)", 2, env={"CHRONICLE_TIMEZONE": "CST"}),
    Mistake("settings", "a per-project zone that is no zone", ("ingest", "{tmp}/ok.jsonl"),
            "setting CHRONICLE_PROJECT_TIMEZONES: project 'XH305': 'Berlin' is not an IANA time zone name", 2,
            env={"CHRONICLE_PROJECT_TIMEZONES": '{"XH305": "Berlin"}'}, files={"ok.jsonl": b"{}\n"}),
    Mistake("settings", "`chronicle config` with a bad value", ("config",),
            "setting CHRONICLE_TIMEZONE: 'Mars/Olympus' is not an IANA time zone name", 2,
            env={"CHRONICLE_TIMEZONE": "Mars/Olympus"}),
    Mistake("settings", "a JSON setting that is not JSON", ("weeks",),
            "setting CHRONICLE_COLUMN_MAP: not valid JSON (valid example:", 2, env={"CHRONICLE_COLUMN_MAP": "time=ts"}),
    Mistake("settings", "a number that is not a number", ("runs",),
            "setting CHRONICLE_LLM_CONCURRENCY: Input should be a valid integer", 2,
            env={"CHRONICLE_LLM_CONCURRENCY": "four"}),
    Mistake("settings", "a redaction pattern that is no regular expression", ("runs",),
            "setting CHRONICLE_REDACT_EXTRA_PATTERNS: 'XH-(\\\\d+' is not a regular expression", 2,
            env={"CHRONICLE_REDACT_EXTRA_PATTERNS": '["XH-(\\\\d+"]'}),
    Mistake("settings", "a subject-id pattern that would stall every gate on a long run of letters", ("weeks",),
            "setting CHRONICLE_REDACT_SUBJECT_ID_PATTERN: '([A-Z]|[A-Z]{2})+\\\\d*$' backtracks without end", 2,
            env={"CHRONICLE_REDACT_SUBJECT_ID_PATTERN": "([A-Z]|[A-Z]{2})+\\d*$"}),
    # --- input whose meaning would change ----------------------------------------------------
    Mistake("input", "a JSONL line with a key written twice", ("ingest", "{tmp}/dup.jsonl"), "duplicate_key", 1,
            files={"dup.jsonl": b'{"project_id":"ALPHA","ts":"2026-01-05T10:00:00+08:00","content":"a",'
                                b'"content":"b"}\n'}, one_line=False),
    Mistake("input", "a CSV header with a column twice", ("ingest", "{tmp}/dup.csv"), "duplicate_column", 1,
            files={"dup.csv": b"project_id,ts,content,content\nALPHA,2026-01-05T10:00:00+08:00,a,b\n"},
            one_line=False),
    Mistake("input", "a local time in the spring DST gap (never happened)", ("ingest", "{tmp}/gap.jsonl"),
            "nonexistent_local_time", 1,
            files={"gap.jsonl": _line(project_id="ALPHA", ts="2026-03-08 02:30:00 America/New_York", content="x")},
            one_line=False),
    Mistake("input", "a local time in the autumn DST fold (happened twice)", ("ingest", "{tmp}/fold.jsonl"),
            "ambiguous_local_time", 1,
            files={"fold.jsonl": _line(project_id="ALPHA", ts="2026-11-01 01:30:00 America/New_York", content="x")},
            one_line=False),
    Mistake("input", "a daily note named with an absurd date", ("ingest", "{tmp}/memory/9999-01-01.md"),
            "future_timestamp", 1, files={"memory/9999-01-01.md": b"- a typo in the name\n"}, one_line=False),
    Mistake("input", "a log file in another encoding (Latin-1)", ("ingest", "{tmp}/latin1.jsonl"), "invalid_utf8", 1,
            files={"latin1.jsonl": '{"project_id":"ALPHA","ts":"2026-01-05T10:00:00+08:00","content":"Störung"}\n'
                   .encode("latin-1")}, one_line=False),
    Mistake("input", "a .jsonl.gz that is not gzip", ("ingest", "{tmp}/broken.jsonl.gz"), "invalid_gzip", 1,
            files={"broken.jsonl.gz": b"not gzip at all"}, one_line=False),
    Mistake("input", "a gzip-compressed log in a folder (read, not skipped)", ("ingest", "{tmp}/zipped"),
            "entries added: 1", 0,
            files={"zipped/a.jsonl.gz": gzip.compress(_line(project_id="ALPHA", ts="2026-01-06T10:00:00+08:00",
                                                             content="zipped"))}, one_line=False),
]
