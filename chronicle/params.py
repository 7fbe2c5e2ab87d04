"""Typed flow parameters: one place for the constraints and help texts the Prefect UI turns into a form.

Prefect builds a deployment's parameter schema from the flow signature with pydantic, so an
`Annotated` type here gives the run form its widget, validation (`pattern`, bounds) and help text,
and the same constraints are enforced again when the flow starts (Prefect validates parameters).

Why `UiHelp` besides `Field(description=...)`: Prefect wraps every parameter in its own field whose
description comes from the flow docstring's `Args:` section, and that replaces a description given
with `Field` inside `Annotated`. `UiHelp` puts the text on the *type's* JSON schema instead, which
survives; an `Args:` entry in the flow docstring still wins where a flow has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

from pydantic import Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

# Weeks 01..53 only: the form rejects `2026-W00` or `2026-W60` before a run is even created.
# (`2025-W53` passes the pattern; `chronicle.weeks.IsoWeek.parse` rejects such non-existent weeks.)
ISO_WEEK_PATTERN = r"^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$"


@dataclass(frozen=True)
class UiHelp:
    """`Annotated` marker: a description on the type's JSON schema (see the module docstring for why)."""

    text: str

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema: dict[str, Any] = handler(core_schema)
        schema.setdefault("description", self.text)
        return schema


_WEEK_HELP = "ISO 8601 week in the project's timezone, written YYYY-Www (e.g. 2026-W05). Weeks start on Monday."

IsoWeekStr = Annotated[
    str,
    Field(pattern=ISO_WEEK_PATTERN, description=_WEEK_HELP, examples=["2026-W05"]),
    UiHelp(_WEEK_HELP),
]
"""One ISO week, e.g. `2026-W05`."""

OptionalIsoWeekStr = Annotated[
    IsoWeekStr | None,
    UiHelp("ISO week YYYY-Www (e.g. 2026-W05), or empty for the flow's default."),
]
"""An ISO week or nothing; a flow's `Args:` docstring entry says what empty means there."""

ProjectSelector = Annotated[
    str,
    Field(min_length=1, max_length=200, examples=["all", "XH305"]),
    UiHelp("A project id as it appears in raw_logs.project_id, or `all` for every project."),
]
"""`all` or one project id."""

OptionalProjectId = Annotated[
    str | None,
    UiHelp("Project id given to entries that carry none (daily notes); empty = the `notes_project` setting."),
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

SourcePaths = Annotated[
    list[str],
    Field(examples=[["/data/exports", "/home/me/.openclaw/workspace/memory"]]),
    UiHelp("Log files or folders to read (folders recursively): daily notes, JSONL/NDJSON, CSV, LoCoMo."),
]

DistillDays = Annotated[
    int | None,
    Field(ge=1, le=366),
    UiHelp("Days of daily notes to read, ending at `until`; empty = the DISTILL_DAYS setting (7)."),
]

NotesProject = Annotated[
    str | None,
    Field(min_length=1, max_length=200),
    UiHelp("Distill only the daily notes of this project (raw_logs.project_id); empty = the notes of every project."),
]

UntilDate = Annotated[
    date | None,
    UiHelp("Last local day of the window (inclusive); empty = today in the project's timezone."),
]
