"""Daily notes (`memory/YYYY-MM-DD.md`): one entry per bullet or paragraph, with its heading path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")


@dataclass
class NoteBlock:
    """A bullet, paragraph, table or code block of a note."""

    line_no: int
    kind: str
    text: str
    heading_path: list[str] = field(default_factory=list)
    parent: str | None = None


def parse_note(text: str) -> list[NoteBlock]:
    """Split Markdown into blocks; headings become the path of what follows them."""
    blocks: list[NoteBlock] = []
    headings: list[tuple[int, str]] = []
    bullet_stack: list[tuple[int, str]] = []  # (indent, text) of open bullets, for nested context
    para: list[str] = []
    para_start = 0
    fence: list[str] | None = None
    fence_start = 0

    def path() -> list[str]:
        return [h for _, h in headings]

    def flush(kind: str = "paragraph") -> None:
        nonlocal para
        if para:
            blocks.append(NoteBlock(para_start, kind, "\n".join(para).strip(), path()))
            para = []

    for no, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            if line.strip().startswith("```"):
                blocks.append(NoteBlock(fence_start, "code", "\n".join(fence).strip(), path()))
                fence = None
            else:
                fence.append(line)
            continue
        if line.strip().startswith("```"):
            flush()
            fence, fence_start = [], no
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            bullet_stack.clear()
            level = len(heading.group(1))
            headings = [(lv, h) for lv, h in headings if lv < level] + [(level, heading.group(2))]
            continue
        if not line.strip() or _RULE.match(line):
            flush()
            continue
        bullet = _BULLET.match(line)
        if bullet and not para:
            indent, body = len(bullet.group(1).expandtabs(4)), bullet.group(2).strip()
            while bullet_stack and bullet_stack[-1][0] >= indent:
                bullet_stack.pop()
            parent = bullet_stack[-1][1] if bullet_stack else None
            if body:
                blocks.append(NoteBlock(no, "bullet", body, path(), parent))
            bullet_stack.append((indent, body))
            continue
        if line.lstrip().startswith("|"):
            if para and not para[-1].lstrip().startswith("|"):
                flush()
            if not para:
                para_start = no
            para.append(line)
            continue
        if bullet_stack and line.startswith((" ", "\t")) and blocks and blocks[-1].kind == "bullet":
            # A wrapped bullet line continues that bullet.
            blocks[-1].text += " " + line.strip()
            continue
        bullet_stack.clear()
        if not para:
            para_start = no
        para.append(line)
    if fence is not None:
        blocks.append(NoteBlock(fence_start, "code", "\n".join(fence).strip(), path()))
    flush()
    return [b for b in blocks if b.text]
