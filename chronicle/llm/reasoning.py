"""Reasoning models' habits, stripped before anything parses, stores or length-checks an answer (pure).

- Ollama and vLLM (without a reasoning parser) serve DeepSeek-R1 / Qwen3 / QwQ with the chain of thought
  inline: `<think>…</think>` (sometimes `<thinking>`, `<reasoning>`) before the answer.
- DeepSeek's API, and vLLM with `--reasoning-parser`, return it beside the answer as `reasoning_content`
  (some gateways: `reasoning`). That field is never the answer.

The thinking is not kept (a weekly report would otherwise store it as the report); its tokens are still
in the endpoint's `completion_tokens`, which `llm_calls.tokens_out` records.
"""

from __future__ import annotations

import re

_TAGS = "think|thinking|reasoning|reflection"
_BLOCK = re.compile(rf"<(?P<tag>{_TAGS})>.*?</(?P=tag)>\s*", re.S | re.I)
# An opened block that never closes (the reply was cut inside it): everything after it is thinking.
_OPEN = re.compile(rf"<(?:{_TAGS})>.*\Z", re.S | re.I)
# vLLM/Ollama templates that open the block in the prompt leave only the closing tag in the reply.
_CLOSE_ONLY = re.compile(rf"\A.*?</(?:{_TAGS})>\s*", re.S | re.I)


def strip_reasoning(text: str) -> tuple[str, str]:
    """(answer, thinking) of a reply's content; a reply without reasoning comes back unchanged."""
    thinking: list[str] = []

    def keep(match: re.Match[str]) -> str:
        thinking.append(match.group(0))
        return ""

    answer = _BLOCK.sub(keep, text)
    if not thinking and _CLOSE_ONLY.match(answer) and not re.search(rf"<(?:{_TAGS})>", answer, re.I):
        answer = _CLOSE_ONLY.sub(keep, answer, count=1)
    answer = _OPEN.sub(keep, answer)
    return (answer.strip(), "".join(thinking)) if thinking else (text, "")
