"""DuckDB parameter binding without pandas installed: no import walk per bound value."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest


class _Counting:
    """A meta-path finder behind the absent-pandas one: counts the imports of pandas that got past it."""

    def __init__(self) -> None:
        self.seen = 0

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            self.seen += 1
        return None


@pytest.mark.skipif(importlib.util.find_spec("pandas") is not None, reason="pandas is installed here")
def test_bound_values_do_not_search_for_pandas_each_time() -> None:
    import duckdb
    import pyarrow as pa

    import chronicle.storage.db  # noqa: F401  (installs the absent-pandas finder)

    counting = _Counting()
    # Right behind the absent-pandas finder: other finders (pytest's, the checkout's) may sit in front of it.
    ours = next(i for i, f in enumerate(sys.meta_path) if type(f).__name__ == "_AbsentPandas")
    sys.meta_path.insert(ours + 1, counting)
    try:
        with duckdb.connect() as conn:
            rows = conn.execute("SELECT ?, ?, ?", [1, "x", 2.5]).fetchall()
    finally:
        sys.meta_path.remove(counting)
    assert rows == [(1, "x", 2.5)]
    assert counting.seen == 0  # before: two full import searches per bound value
    # Optional-pandas code sees what it saw before: a failed import, a probe answering None.
    with pytest.raises(ModuleNotFoundError):
        import pandas  # noqa: F401
    assert importlib.util.find_spec("pandas") is None
    assert pa.Table.from_pylist([{"a": 1}]).num_rows == 1
