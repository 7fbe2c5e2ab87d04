"""Typed flow parameters: one place for the help texts and defaults the Prefect UI turns into a form.

Prefect builds a deployment's parameter schema from the flow signature with pydantic. Every optional text
parameter here is a plain `str` defaulting to "" (the form shows a text box; `str | None` would show a
`str`/`None` toggle set to None), and carries no pattern: the API then accepts any text, and the flow checks
it as its first step (`chronicle.services.param_checks` over `chronicle.param_checks`), failing the run with a message
that
names the parameter and the format. So the UI form, `run_deployment`, `prefect deployment run` and the CLI
all get the same answer, and a refused run is in the run history with its reason. `None` (a Python caller's
"not given") is accepted for these parameters and read as "".

Why `UiHelp` besides `Field(description=...)`: Prefect wraps every parameter in its own field whose
description comes from the flow docstring's `Args:` section, and that replaces a description given
with `Field` inside `Annotated`. `UiHelp` puts the text on the *type's* JSON schema instead, which
survives; an `Args:` entry in the flow docstring still wins where a flow has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from chronicle.param_checks import DAY_FORMAT, WEEK_FORMAT


@dataclass(frozen=True)
class UiHelp:
    """`Annotated` marker: a description on the type's JSON schema (see the module docstring for why)."""

    text: str

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema: dict[str, Any] = handler(core_schema)
        schema.setdefault("description", self.text)
        return schema


def _as_text(value: Any) -> Any:
    """None -> "" and a date -> its ISO text, so Python callers may keep passing those; the schema stays `string`."""
    if value is None:
        return ""
    if isinstance(value, date):
        return value.isoformat()
    return value


def _as_int(value: Any) -> Any:
    return 0 if value is None else value


IsoWeekStr = Annotated[
    str,
    BeforeValidator(_as_text),
    Field(examples=["2026-W05"]),
    UiHelp(f"ISO 8601 week in the project's timezone, written {WEEK_FORMAT}. Weeks start on Monday."),
]
"""One ISO week, e.g. `2026-W05` (checked by the flow, not by the schema)."""

OptionalIsoWeekStr = Annotated[
    str,
    BeforeValidator(_as_text),
    Field(examples=["2026-W05"]),
    UiHelp(f"ISO week {WEEK_FORMAT}, or empty for the flow's default."),
]
"""An ISO week or "" ; a flow's `Args:` docstring entry says what empty means there."""

ProjectSelector = Annotated[
    str,
    Field(examples=["all", "XH305"]),
    UiHelp("A project id as it appears in raw_logs.project_id, or `all` for every project."),
]
"""`all` or one project id."""

ProjectId = Annotated[str, Field(examples=["XH201"]), UiHelp("A project id as it appears in raw_logs.project_id.")]

OptionalProjectId = Annotated[
    str,
    BeforeValidator(_as_text),
    UiHelp("Project id given to entries that carry none (daily notes); empty = the `notes_project` setting."),
]

Workers = Annotated[
    int,
    BeforeValidator(_as_int),
    UiHelp("Weeks in flight at once; 0 = the backfill_max_workers setting (default four times llm_concurrency)."),
]

OnlyMissing = Annotated[
    bool,
    UiHelp("Skip weeks that already have a report (re-running a backfill then costs no LLM calls)."),
]

Force = Annotated[
    bool,
    UiHelp("Regenerate reports even when one exists and its inputs are unchanged (spends LLM calls)."),
]

ReRead = Annotated[
    bool,
    UiHelp("Re-read every file whole, even one that looks unchanged (same size, mtime, head and tail)."),
]
Replace = Annotated[
    bool,
    UiHelp("Replace the rows read from these files before: they are superseded (kept, marked) and the files "
           "read again whole. A rewrite is otherwise never allowed to remove rows silently."),
]

SourcePaths = Annotated[
    list[str],
    Field(examples=[["/data/exports", "/home/me/.openclaw/workspace/memory"]]),
    UiHelp("Log files or folders to read (folders recursively): daily notes, JSONL/NDJSON, CSV, LoCoMo."),
]

DistillDays = Annotated[
    int,
    BeforeValidator(_as_int),
    UiHelp("Days of daily notes to read (1 to 366), ending at `until`; 0 = the DISTILL_DAYS setting (7)."),
]

NotesProject = Annotated[
    str,
    BeforeValidator(_as_text),
    UiHelp("Distill only the daily notes of this project (raw_logs.project_id); empty = the notes of every project."),
]

UntilDate = Annotated[
    str,
    BeforeValidator(_as_text),
    Field(examples=["2026-04-26"]),
    UiHelp(f"Last local day of the window (inclusive), {DAY_FORMAT}; empty = today in the project's timezone."),
]
