"""What the model's add / update / no-op decisions cost a distillation (`CHRONICLE_MEMORY_LLM_DECISIONS`).

The same notes through the LLM path twice, in fresh homes, decisions on and off (the baseline, same run): 20
daily notes, each a chunk from which the model "extracts" 6 memories about 3 people; days 1-10 are distilled
first (nothing to decide against), then days 11-20 are timed — every one of their memories has stored
neighbours, so every chunk makes its decision call. The model is the local OpenAI-compatible test server
answering after `--latency` seconds (a real model takes ~0.5-5 s); embeddings are the packaged local model.
Figure: wall time of the timed run, decisions on / off, and the LLM calls of each. Goal: ≤ 2x (a decision is
one more call per chunk, as long as the extraction's). `python -m bench.memory_decisions [--latency 0.5]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench._util import load_sampler, result

PEOPLE = ["李娜", "Tom", "王峰"]
FACTS = ["每天{h}点起床", "住在{c}", "喜欢{f}", "在{c}工作", "养了一只猫", "周末去{c}爬山"]
CITIES, FOODS = ["上海", "杭州", "成都", "北京"], ["火锅", "咖啡", "饺子", "拉面"]
FIRST = date(2026, 1, 5)


def _memories(day: int) -> list[dict[str, Any]]:
    out = []
    for k in range(6):
        person = PEOPLE[k % 3]
        fact = FACTS[(day + k) % len(FACTS)].format(h=6 + (day + k) % 4, c=CITIES[(day * k) % 4],
                                                    f=FOODS[(day + 2 * k) % 4])
        text = f"{person}{fact}（第{day}天）"
        out.append({"content": text, "summary": text, "keyInfo": [], "tags": ["bench"], "importance": 0.7,
                    "targetFile": "MEMORY.md", "action": "append", "subject": person})
    return out


def _responder(latency: float):
    def answer(request: dict[str, Any]) -> str:
        time.sleep(latency)
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if "NEW about" in user:
            return json.dumps({"decisions": [{"memory": int(n), "decision": "add"}
                                             for n in re.findall(r"\[(\d+)\] NEW about", user)]})
        day = (date.fromisoformat(re.search(r"Daily notes of (\S+) ", user).group(1)) - FIRST).days
        return json.dumps(_memories(day), ensure_ascii=False)
    return answer


def _run(base_url: str, decisions: bool) -> dict[str, Any]:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings, using

    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "memory"
        notes.mkdir()
        for d in range(20):
            day = FIRST + timedelta(days=d)
            (notes / f"{day}.md").write_text(f"# {day}\n\n- 今天和李娜、Tom、王峰聊了近况（{d}）\n", encoding="utf-8")
        settings = Settings(home=Path(tmp) / "home", llm_url=base_url, llm_model="fake-model", embedding_url=None,
                            input_roots=[tmp], memory_llm_decisions=decisions)
        with using(settings):
            ingest_logs([str(notes)], "bench")
            distill_memory(days=10, until=str(FIRST + timedelta(days=9)))
            t0 = time.perf_counter()
            timed = distill_memory(days=10, until=str(FIRST + timedelta(days=19)))
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "llm_calls": timed.tally.llm_calls, "chunks": timed.tally.chunks,
                "invalid": timed.tally.warnings.get("decision_invalid", 0)}


def main() -> None:
    from tests.fakellm import FakeLLMServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake model takes per call")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name in ("LLM_URL", "EMBEDDING_URL", "CHRONICLE_HOME"):
        os.environ.pop(name, None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    with FakeLLMServer() as fake, load_sampler() as load:
        fake.responder = _responder(args.latency)
        for _ in range(args.repeat):
            for decisions in (False, True):  # alternated: load that comes and goes hits both alike
                runs[decisions].append(_run(fake.base_url, decisions))
    on = statistics.median(r["seconds"] for r in runs[True])
    off = statistics.median(r["seconds"] for r in runs[False])
    extra = {"latency_s": args.latency, "on": runs[True], "off": runs[False], **load.record()}
    result("memory_decisions", measure=f"distill of 10 chunks (60 memories about 3 people with stored neighbours), "
                                       f"model latency {args.latency} s: decisions on",
           ours=on, baseline=off, baseline_name="the same distill, decisions off (same run)", unit="s",
           goal="<= 2x the distill without decisions", ok=on <= 2 * off, extra=extra)
    print(f"  llm calls on/off: {runs[True][0]['llm_calls']}/{runs[False][0]['llm_calls']}; "
          f"chunks {runs[True][0]['chunks']}")


if __name__ == "__main__":
    main()
