"""Weekly chronicle (seed 000): one report per project and ISO week, human corrections, the read side.

Pure modules: `tokens`, `stats`, `model`, `prompt`, `offline`, `faithfulness`, `engine`, `context`,
`search`, `report_md`. `history` is the I/O read side (`build_history_context`, `ask_chronicle`),
imported lazily here because `storage.reports` itself imports `chronicle.weekly.model`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ask_chronicle", "build_history_context"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from chronicle.weekly import history

        return getattr(history, name)
    raise AttributeError(f"module 'chronicle.weekly' has no attribute {name!r}")
