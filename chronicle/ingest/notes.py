"""Daily notes (`memory/YYYY-MM-DD.md`): one entry per bullet or paragraph, with its heading path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# An ATX heading. Its closing `#`s and blanks are stripped in Python: a pattern that strips them (`(.*?)\s*#*\s*$`)
# backtracks cubically over a long run of blanks inside the heading.
_HEADING = re.compile(r"^(#{1,6})\s++(.*)$")
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
    parser = _NoteParser()
    for no, line in enumerate(text.splitlines(), start=1):
        parser.feed(no, line)
    return parser.finish()


class _NoteParser:
    """One pass over a note, line by line: the blocks so far and what is open (headings, bullets, a paragraph or
    table, a code fence)."""

    def __init__(self) -> None:
        self.blocks: list[NoteBlock] = []
        self.headings: list[tuple[int, str]] = []
        self.bullet_stack: list[tuple[int, str]] = []  # (indent, text) of open bullets, for nested context
        self.para: list[str] = []
        self.para_start = 0
        self.fence: list[str] | None = None
        self.fence_start = 0

    def path(self) -> list[str]:
        return [h for _, h in self.headings]

    def flush(self) -> None:
        if self.para:
            self.blocks.append(NoteBlock(self.para_start, "paragraph", "\n".join(self.para).strip(), self.path()))
            self.para = []

    def feed(self, no: int, line: str) -> None:
        if self.fence is not None:
            if line.strip().startswith("```"):
                self._close_fence()
            else:
                self.fence.append(line)
        elif line.strip().startswith("```"):
            self.flush()
            self.fence, self.fence_start = [], no
        elif heading := _HEADING.match(line):
            self.flush()
            self.bullet_stack.clear()
            level, text = len(heading.group(1)), heading.group(2).rstrip().rstrip("#").rstrip()
            self.headings = [(lv, h) for lv, h in self.headings if lv < level] + [(level, text)]
        elif not line.strip() or _RULE.match(line):
            self.flush()
        elif (bullet := _BULLET.match(line)) and not self.para:
            self._bullet(no, bullet)
        elif line.lstrip().startswith("|"):
            if self.para and not self.para[-1].lstrip().startswith("|"):
                self.flush()
            self._para_line(no, line)
        elif self.bullet_stack and line.startswith((" ", "\t")) and self.blocks and self.blocks[-1].kind == "bullet":
            # A wrapped bullet line continues that bullet.
            self.blocks[-1].text += " " + line.strip()
        else:
            self.bullet_stack.clear()
            self._para_line(no, line)

    def _close_fence(self) -> None:
        self.blocks.append(NoteBlock(self.fence_start, "code", "\n".join(self.fence or []).strip(), self.path()))
        self.fence = None

    def _bullet(self, no: int, bullet: re.Match[str]) -> None:
        indent, body = len(bullet.group(1).expandtabs(4)), bullet.group(2).strip()
        while self.bullet_stack and self.bullet_stack[-1][0] >= indent:
            self.bullet_stack.pop()
        parent = self.bullet_stack[-1][1] if self.bullet_stack else None
        if body:
            self.blocks.append(NoteBlock(no, "bullet", body, self.path(), parent))
        self.bullet_stack.append((indent, body))

    def _para_line(self, no: int, line: str) -> None:
        if not self.para:
            self.para_start = no
        self.para.append(line)

    def finish(self) -> list[NoteBlock]:
        if self.fence is not None:  # a fence left open runs to the end of the note
            self._close_fence()
        self.flush()
        return [b for b in self.blocks if b.text]
