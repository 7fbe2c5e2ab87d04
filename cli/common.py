"""Shared CLI plumbing: console, settings with `--home`, progress bars, quiet Prefect defaults."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chronicle.progress import listening
from chronicle.settings import Settings, get_settings, reset_settings

console = Console()
err = Console(stderr=True)

# A local run should not try to phone home (there is no network) nor warn about it on every command.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_settings(home: str | None = None) -> Settings:
    if home:
        os.environ["CHRONICLE_HOME"] = home
        reset_settings()
    return get_settings()


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[None]:
    """A rich progress bar fed by `chronicle.progress.report` calls from inside flows."""
    if not enabled or not console.is_terminal:
        yield
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        with listening(update):
            yield
