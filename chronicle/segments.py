"""Text in pieces that jieba segments in linear time (pure).

jieba's hidden Markov model for characters its dictionary does not know copies its path at every character
(`finalseg.viterbi`, and `posseg`'s), so a run of such characters costs the square of its length: 96,000 of one
character took 80 s in one call, and a log line may hold a megabyte. jieba cuts a text into blocks (runs of CJK
letters and digits, `re_han_default`) and each block without regard to its neighbours, so a block longer than
`PIECE` characters is cut here into pieces of that length first. Ordinary text, whose blocks end at
punctuation long before that, is given to jieba whole, and segmented exactly as before.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import chain
from typing import TypeVar

T = TypeVar("T")

PIECE = 256
_BLOCK_CHAR = r"[\u4E00-\u9FD5a-zA-Z0-9+#&._%\-]"
_LONG_BLOCK = re.compile(rf"(?<!{_BLOCK_CHAR}){_BLOCK_CHAR}{{{PIECE + 1},}}")


def pieces(text: str) -> Iterator[str]:
    """`text` in pieces, in order: they join to `text`, and only a block of over `PIECE` characters is cut (every
    `PIECE` characters)."""
    at = 0
    for block in _LONG_BLOCK.finditer(text):
        if block.start() > at:
            yield text[at:block.start()]
        for start in range(block.start(), block.end(), PIECE):
            yield text[start:min(start + PIECE, block.end())]
        at = block.end()
    if at < len(text) or not text:
        yield text[at:]


@lru_cache(maxsize=1)
def segmenter():  # type: ignore[no-untyped-def]
    """jieba with its dictionary loaded, once for every caller (building the prefix dictionary takes ~1 s and logs
    to stderr; jieba's own lock makes a concurrent first call wait for it). `.posseg` tags parts of speech."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def segmented(cut: Callable[[str], Iterable[T]], text: str) -> Iterator[T]:
    """What jieba's `cut` (or `lcut`, `cut_for_search`, posseg's `cut`) gives for `text`, piece by piece."""
    return chain.from_iterable(map(cut, pieces(text)))
