"""Secret canaries of every redaction kind, and the daily note / trial log that carry them.

Every canary string is unique to these tests, so finding one anywhere Chronicle wrote means it leaked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cn_id(body17: str) -> str:
    """A Chinese resident ID number (GB 11643) with its valid check digit."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return body17 + "10X98765432"[sum(int(d) * w for d, w in zip(body17, weights, strict=True)) % 11]


CN_ID = cn_id("11010519800307123")
CN_ID_TRIAL = cn_id("31010419761120456")  # a patient's, in the trial log
assert cn_id("11010519491231002") == "11010519491231002X"  # the standard's worked example

# kind -> the secret values (the part that must vanish; the surrounding text may stay).
CANARIES: dict[str, list[str]] = {
    "api_key": ["sk-SECCANARYopenai0123456789abcd", "sk-proj-SECCANARYproj0123456789ab",
                "ghp_SECCANARYgithub0123456789abcdefAB", "AKIASECCANARY0123456", "xoxb-SECCANARYslack-0123456789"],
    "jwt": ["eyJhbGciOiJIUzI1NiJ9.eyJTRUNDQU5BUlkiOiIxIn0.SECCANARYjwtSig0123456"],
    "bearer_token": ["SECCANARYbearer0123456789"],
    "private_key": ["MIISECCANARYpemLine1", "SECCANARYpemLine2"],
    "password": ["SECCANARYpw123"],
    "secret": ["SECCANARYsecret456", "SECCANARYfoo789"],
    "email": ["seccanary.person@example.org", "seccanary.actor@example.org"],
    "phone": ["13822334455", "159 1234 5670"],
    "cn_id": [CN_ID, CN_ID_TRIAL],
}
ALL = [c for values in CANARIES.values() for c in values]
# Parts of canaries that must not survive either (a partial redaction would leave these).
FRAGMENTS = ["SECCANARY", "seccanary", "22334455", "1234 5670", CN_ID[6:14], CN_ID_TRIAL[6:14]]

NOTE_DAY = "2026-03-02"
NOTE = f"""# {NOTE_DAY} 会话记录

## 工具与配置 / Tools

- 用户把 OpenAI key sk-SECCANARYopenai0123456789abcd 贴进了聊天，项目 key 是 sk-proj-SECCANARYproj0123456789ab
- GitHub token ghp_SECCANARYgithub0123456789abcdefAB, AWS key AKIASECCANARY0123456, Slack xoxb-SECCANARYslack-0123456789
- The webhook calls the API with `Authorization: Bearer SECCANARYbearer0123456789` on port 8443
- Dashboard session JWT: eyJhbGciOiJIUzI1NiJ9.eyJTRUNDQU5BUlkiOiIxIn0.SECCANARYjwtSig0123456
- 配置：password=SECCANARYpw123 secret: SECCANARYsecret456 FOO_SECRET=SECCANARYfoo789

```
-----BEGIN RSA PRIVATE KEY-----
MIISECCANARYpemLine1
SECCANARYpemLine2
-----END RSA PRIVATE KEY-----
```

## 用户偏好 / 作息

- 王老师习惯早上 7:30 前看消息，手机 13822334455，晚上 22:30 以后不要推送通知
- The user prefers e-mail to seccanary.person@example.org
- 王老师的身份证号 {CN_ID} 只能存在本地

## 行为规则 / Rules

- 对外发邮件前必须先把草稿给王老师确认，不能直接发送
"""

TRIAL_PROJECT = "SECTRIAL"
_TRIAL_LINES = [
    ("CRC-王敏", "enrollment", f"SEC-01-001 签署知情同意书，身份证 {CN_ID_TRIAL}，联系电话 159 1234 5670，今日随机"),
    ("seccanary.actor@example.org", "message", "EDC 导出脚本的 key 是 sk-SECCANARYopenai0123456789abcd，别外传"),
    ("DM-赵磊", "message", "接口调试：Authorization: Bearer SECCANARYbearer0123456789，"
                          "JWT eyJhbGciOiJIUzI1NiJ9.eyJTRUNDQU5BUlkiOiIxIn0.SECCANARYjwtSig0123456"),
    ("DM-赵磊", "query", "数据库 password=SECCANARYpw123，FOO_SECRET=SECCANARYfoo789，secret: SECCANARYsecret456"),
    ("CRA-刘洋", "ae", "SEC-01-001 出现 2 级皮疹，已联系 seccanary.person@example.org 和 13822334455"),
    ("PI-马骁", "decision", "同意继续给药；AWS AKIASECCANARY0123456 与 ghp_SECCANARYgithub0123456789abcdefAB 已轮换，"
                         "xoxb-SECCANARYslack-0123456789 与 sk-proj-SECCANARYproj0123456789ab 作废"),
    ("DM-赵磊", "message", "-----BEGIN RSA PRIVATE KEY-----\nMIISECCANARYpemLine1\nSECCANARYpemLine2\n"
                          "-----END RSA PRIVATE KEY-----"),
    ("CRC-王敏", "message", "本周例会照常"),
]


def write_inputs(root: Path, extra_trial: list[tuple[str, str, str]] = (), extra_note: str = "") -> Path:
    """`root/memory/<NOTE_DAY>.md` and `root/logs/sectrial.jsonl` (week 2026-W10); returns `root`."""
    (root / "memory").mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    (root / "memory" / f"{NOTE_DAY}.md").write_text(NOTE + extra_note, encoding="utf-8")
    with (root / "logs" / "sectrial.jsonl").open("w", encoding="utf-8") as fh:
        for i, (actor, kind, content) in enumerate([*_TRIAL_LINES, *extra_trial]):
            fh.write(json.dumps({"project_id": TRIAL_PROJECT, "ts": f"2026-03-0{2 + i % 5}T1{i % 10}:00:00+08:00",
                                 "actor": actor, "type": kind, "content": content}, ensure_ascii=False) + "\n")
    return root


def leaks(blob: str | bytes) -> list[str]:
    """The canaries (and canary fragments) found in `blob`."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    return [c for c in [*ALL, *FRAGMENTS] if c in text]


def user_message(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def quoting_model(*, target_file: str = "MEMORY.md", width: int = 90, lines: int = 4, own_secret: str | None = None
                  ) -> Callable[[dict[str, Any]], str]:
    """A fake model that quotes its input back (distill: one memory per note entry aimed at `target_file`;
    weekly: the first `lines` log lines cut at `width`), so whatever the prompt held reaches every sink after
    it. With `own_secret` it also adds a credential of its own (`DB_PASS=…`), which must be gone too."""

    def reply(request: dict[str, Any]) -> str:
        user = user_message(request)
        if request["messages"][0]["content"].startswith("You distill"):
            entries = re.findall(r"^\[\d+\] (.*)$", user, flags=re.M)
            memories = [{"content": text, "summary": text[:60], "tags": ["t"], "importance": 0.7,
                         "targetFile": target_file, "action": "append"} for text in entries]
            if own_secret:
                memories.append({"content": f"The model adds DB_PASS={own_secret} for later.", "summary": "x",
                                 "tags": ["t"], "importance": 0.5, "targetFile": "MEMORY.md", "action": "append"})
            return json.dumps(memories, ensure_ascii=False)
        quoted = [line for line in user.splitlines() if line.startswith("[E")]
        extra = f"\n- 附：DB_PASS={own_secret}\n" if own_secret else ""
        return "## 周报\n\n" + "\n".join(f"- {line[:width]}" for line in quoted[:lines]) + extra

    return reply


def use_distill_engine(monkeypatch: Any, fake_llm: Any, engine: str, *, target_file: str) -> None:
    """Embeddings from the fake server; with `engine == "llm"` the chat model too, quoting every note entry
    back aimed at `target_file` (the offline engine needs no model)."""
    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    if engine == "llm":
        monkeypatch.setenv("LLM_URL", fake_llm.base_url)
        monkeypatch.setenv("LLM_MODEL", "fake-distill")
        fake_llm.responder = quoting_model(target_file=target_file)
