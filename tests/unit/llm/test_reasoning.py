"""Reasoning blocks are cut off before anything parses or stores an answer (pure part)."""

from __future__ import annotations

import pytest

from chronicle.llm.reasoning import strip_reasoning


@pytest.mark.parametrize(("reply", "answer"), [
    ("<think>\n先想一想……\n</think>\n\n## 周报\n- 入组 2 例", "## 周报\n- 入组 2 例"),
    ("<thinking>plan</thinking>[1, 2]", "[1, 2]"),
    ("<THINK>a</THINK> x <think>b</think> y", "x y"),
    ("the template opened it in the prompt</think>\nanswer", "answer"),
    ("<think>cut off while thinking, no answer", ""),
    ("plain answer\n", "plain answer\n"),
    ("a report that mentions the word think and <b>tags</b>", "a report that mentions the word think and <b>tags</b>"),
])
def test_strip_reasoning(reply: str, answer: str) -> None:
    got, thinking = strip_reasoning(reply)
    assert got == answer
    assert (thinking == "") == (reply == answer)
