"""chronicle/segments.py: what jieba is given is cut only where a block is too long to segment in linear time."""

from __future__ import annotations

import pytest

from chronicle.segments import PIECE, pieces, segmented


@pytest.mark.parametrize("text", ["", "正常的中文句子，没有很长的块。", "abc " * 200, "入" * (PIECE * 3 + 7),
                                  "a，" + "入" * 600 + "。b" + "x" * 300, "王" * PIECE, "王" * (PIECE + 1)])
def test_the_pieces_join_to_the_text_in_order(text: str) -> None:
    assert "".join(pieces(text)) == text
    assert list(segmented(list, text)) == list(text)  # what a segmenter gives, piece after piece, in order


def test_only_a_block_longer_than_a_piece_is_cut() -> None:
    ordinary = "；".join(["受试者完成随访并签署知情同意书"] * 100)  # 1,500 characters, no block near a piece long
    assert list(pieces(ordinary)) == [ordinary]
    assert [len(piece) for piece in pieces("入" * PIECE)] == [PIECE]
    assert [len(piece) for piece in pieces("x，" + "入" * (PIECE * 2 + 1))] == [2, PIECE, PIECE, 1]
