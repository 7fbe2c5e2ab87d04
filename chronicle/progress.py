"""Progress hook: flows report progress; the CLI (or nobody) listens. Keeps flows free of UI code."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, int], None]  # (stage, done, total)
_listeners: list[Listener] = []


def report(stage: str, done: int, total: int) -> None:
    for listener in list(_listeners):
        listener(stage, done, total)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
