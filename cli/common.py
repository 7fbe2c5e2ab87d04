"""Shared CLI plumbing: console, settings with `--home`, progress bars, quiet Prefect defaults."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chronicle.progress import listening
from chronicle.settings import Settings, using

console = Console()
err = Console(stderr=True)

# A local run should not try to phone home (there is no network) nor warn about it on every command.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


T = TypeVar("T")


def load_settings(home: str | None = None) -> Settings:
    """This command's settings: environment / `.env` / `chronicle.toml`, with `--home` on top."""
    return Settings(home=Path(home)) if home else Settings()


def run_flow(settings: Settings, flow: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call a flow in this process with the command's settings (flows read them when they start)."""
    with using(settings):
        return flow(*args, **kwargs)


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
