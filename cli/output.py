"""One way to print rows, shared by every listing command: `--format table|csv|json`.

A table is for people: on a terminal it fits the width (long cells wrap, never cut); piped or redirected,
it is printed at its natural width, so no cell is ever truncated to "…". CSV and JSON are for programs:
every column, values unabridged (nested values as JSON in CSV), no colours, nothing else on stdout.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chronicle.cli.common import console, echo_safe


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


def format_option() -> Any:
    return typer.Option(Format.table, "--format", case_sensitive=False,
                        help="table (for people), csv or json (every column, for programs).")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=_json_default, ensure_ascii=False)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _table_console() -> Console:
    if console.is_terminal:
        return console
    # Not a terminal: rich would wrap at 80 columns. A table is only as wide as its content, so an
    # unbounded console prints every cell in full, one row per line.
    return Console(file=sys.stdout, width=1_000_000, color_system=None, highlight=False)


def emit(rows: Sequence[Mapping[str, Any]], fmt: Format | str = Format.table, *, columns: Sequence[str] | None = None,
         title: str | None = None, empty: str = "no rows") -> None:
    """Print `rows` (dicts with the same keys) as a table, CSV or JSON; `columns` picks and orders them."""
    fmt = Format(fmt)
    if fmt is Format.json:
        sys.stdout.write(json.dumps([dict(r) for r in rows], default=_json_default, ensure_ascii=False, indent=1))
        sys.stdout.write("\n")
        return
    cols = list(columns or (rows[0].keys() if rows else []))
    if fmt is Format.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(cols)
        writer.writerows([_cell(r.get(c)) for c in cols] for r in rows)
        return
    if not rows:
        console.print(echo_safe(empty), soft_wrap=True)
        return
    table = Table(title=echo_safe(title) if title else title)
    for col in cols:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(Text(_cell(row.get(c))) for c in cols))
    _table_console().print(table)


def print_text(text: str, *, soft_wrap: bool | None = True, target: Console | None = None) -> None:
    """Print stored text (a report, a chronicle) as it is: no markup, no highlighting.

    Rich's default highlighter runs a dozen regular expressions over the whole string, and some backtrack on long
    runs without spaces or punctuation: a 10,000-character unpunctuated correction took seconds, a long one minutes.
    As plain `Text` the cost is linear in the length.
    """
    (target or console).print(Text(text), soft_wrap=soft_wrap, highlight=False)

