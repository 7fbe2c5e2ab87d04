"""No regular expression of Chronicle backtracks catastrophically: a log line, a note or a model's reply must not
be able to stall a run.

Every gate on untrusted text is a set of regular expressions (the redactor, the pseudonymiser, the orders and
injection rules, the note and reply parsers, the faithfulness guard). Python's `re` backtracks, so a pattern with
two ways of matching the same run of characters takes exponential or cubic time on a line built to fail after
that run: `v?\\d+(?:[._\\-/:]\\d+)+(?:[-+.]?[A-Za-z0-9][A-Za-z0-9.]*)*`, the redactor's "declared safe" version
shape, took 7 s on `1.2-` followed by 24 letters and `_`, and a heading pattern took 9.5 s on a heading holding
1,000 blanks. A week with one such line never finished.

The static check is regexploit's (Doyensec), over every pattern the package holds at run time (module and class
attributes, the built redactor, the containers they sit in) and every literal in its source. A pattern is judged
as `fullmatch` sees it, the end carried into each alternative of a trailing alternation: the tool does not carry
one there itself. Python's possessive repeats and atomic groups take no choice back, so they are left out
of the analysis and their bodies are judged alone. The tool flags few quadratic shapes, so the lines that stalled
a gate, quadratic ones included, also run through the gates at a length no quadratic pattern answers in time.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # regexploit parses with `sre_parse`, deprecated since Python 3.11
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_parse

    import regexploit.ast.char
    from regexploit.ast.categories import list_category
    from regexploit.ast.sre import SreOpParser
    from regexploit.languages.python_node_visitor import PythonNodeVisitor
    from regexploit.redos import find

# regexploit lists the characters of `\w` or `\s` afresh (256 `unicodedata` calls) each time it intersects one with
# another character class; its own cache of them is never filled. Listed once here: nine tenths of this file's CPU.
regexploit.ast.char.list_category = functools.cache(lambda category: tuple(list_category(category)))


CUBIC = 3
"""regexploit's starriness: 1-2 is at most quadratic (a `\\s*` either side of a word, tried at every start), 3
cubic, 11 and more exponential."""


class _Parser(SreOpParser):
    """regexploit's parser, taught Python 3.11's possessive repeats and atomic groups (it predates them)."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[list[Any]] = []

    def from_MAX_REPEAT(self, data: Any) -> Any:
        """A bounded repeat of a starry body (`(?:\\w+\\s*){0,3}`) is as starry as that many copies in a row: a run
        of word characters splits three ways. regexploit judges it as one copy; it is unrolled here (three copies
        are enough to show a cubic shape), the copies past the minimum optional."""
        minimum, maximum, body = data
        if maximum is sre_parse.MAXREPEAT or maximum < 2:
            return super().from_MAX_REPEAT(data)
        copies = [list(body) if i < minimum else [(sre_parse.MAX_REPEAT, (0, 1, body))] for i in range(min(maximum, 3))]
        return self.sequence_or_singleton([op for copy in copies for op in copy])

    def from_MIN_REPEAT(self, data: Any) -> Any:
        return self.from_MAX_REPEAT(data)

    def from_POSSESSIVE_REPEAT(self, data: Any) -> None:
        self.bodies.append(data[2])

    def from_ATOMIC_GROUP(self, data: Any) -> None:
        self.bodies.append(data)


def _ended(ops: list[Any]) -> list[Any]:
    """`ops` followed by the end of the text, as `fullmatch` reads them. regexploit does not carry an end into an
    alternation, so it is put at the end of each alternative of a trailing one, and inside a trailing group."""
    if ops and ops[-1][0] is sre_parse.BRANCH:
        return [*ops[:-1], (sre_parse.BRANCH, (None, [_ended(list(alt)) for alt in ops[-1][1][1]]))]
    if ops and ops[-1][0] is sre_parse.SUBPATTERN:
        group, add, remove, body = ops[-1][1]
        return [*ops[:-1], (sre_parse.SUBPATTERN, (group, add, remove, _ended(list(body))))]
    return [*ops, (sre_parse.AT, sre_parse.AT_END)]


def starriness(pattern: str | bytes, flags: int = 0) -> int:
    """The worst backtracking regexploit finds in `pattern` as fully matched (an end adds a place to fail, so what
    `search` would show is among it)."""
    if isinstance(pattern, bytes):
        pattern = pattern.decode("latin-1")
    parser = _Parser()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = [parser.sequence_or_singleton(_ended(list(sre_parse.parse(pattern, flags))))]
    while parser.bodies:  # a possessive body is still matched by backtracking inside itself
        ops.append(parser.sequence_or_singleton(_ended(list(parser.bodies.pop()))))
    return max([0, *(r.starriness for op in ops if op is not None for r in find(op))])


def _patterns_in(obj: Any, where: str, depth: int, seen: set[int]) -> Iterator[tuple[str, re.Pattern[str]]]:
    if id(obj) in seen or depth > 4:
        return
    seen.add(id(obj))
    if isinstance(obj, re.Pattern):
        yield where, obj
        return
    if isinstance(obj, dict):
        items: list[tuple[Any, Any]] = list(obj.items())
    elif isinstance(obj, list | tuple | set | frozenset):
        items = list(enumerate(obj))
    elif type(obj).__module__.startswith("chronicle") and hasattr(obj, "__dict__"):
        items = list(vars(obj).items())
    else:
        return
    for key, value in items:
        yield from _patterns_in(value, f"{where}.{key}", depth + 1, seen)


ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "desk", "deployments", "flows", "tasks", "services", "storage")
PARTS = sorted([*(f"chronicle.{d.name}" for d in (ROOT / "chronicle").iterdir() if (d / "__init__.py").exists()),
                *(f"chronicle.{layer}" for layer in LAYERS), "chronicle"])
"""The core's subpackages, the layers (folders at the top of the repository) and the core's own modules: one test
each, so that the workers share the analysis."""


def _source(part: str) -> tuple[Path, bool]:
    name = part.removeprefix("chronicle").lstrip(".")
    if name in LAYERS:
        return ROOT / name, True
    return (ROOT / "chronicle" / name, True) if name else (ROOT / "chronicle", False)


def patterns_of(part: str) -> dict[tuple[str, int], str]:
    """{(pattern, flags): where} for every pattern `part` holds at run time or writes as a literal."""
    folder, recursive = _source(part)
    package = importlib.import_module(part)
    names = [part] + ([m.name for m in pkgutil.walk_packages(package.__path__, f"{part}.")] if recursive
                      else [f"chronicle.{f.stem}" for f in folder.glob("*.py") if f.stem != "__init__"])
    roots: list[tuple[str, Any]] = []
    if part == "chronicle.redaction":
        from chronicle.redaction.redactor import Redactor
        from chronicle.redaction.tokens import SafeShapes

        roots += [("Redactor.build()", Redactor.build()), ("SafeShapes().pattern", SafeShapes().pattern)]
    for name in names:
        module = importlib.import_module(name)
        roots += [(f"{name}.{k}", vars(v) if isinstance(v, type) else v) for k, v in vars(module).items()
                  if not (isinstance(v, type) and v.__module__ != name)]
    found: dict[tuple[str, int], str] = {}
    seen: set[int] = set()
    for where, root in roots:
        for at, pattern in _patterns_in(root, where, 0, seen):
            found.setdefault((pattern.pattern, pattern.flags), at)
    for path in sorted(folder.rglob("*.py") if recursive else folder.glob("*.py")):
        visitor = PythonNodeVisitor()
        visitor.visit(ast.parse(path.read_bytes()))
        for literal in visitor.patterns:
            try:
                re.compile(literal.pattern, literal.flags)
            except (re.error, TypeError):
                continue  # a string that is not a pattern
            found.setdefault((literal.pattern, literal.flags), f"{path.relative_to(ROOT)}:{literal.lineno}")
    return found


@pytest.mark.slow  # ~40 s of CPU in all (regexploit multiplies out every alternation): CI and `make test`
@pytest.mark.parametrize("part", PARTS)
def test_no_pattern_backtracks_cubically_or_worse(part: str) -> None:
    patterns = patterns_of(part)
    worst = {where: (starriness(pattern, flags), pattern) for (pattern, flags), where in patterns.items()}
    assert {where: found for where, found in worst.items() if found[0] >= CUBIC} == {}


def test_every_part_of_the_package_is_checked() -> None:
    """The parts cover every source file, and the walk reaches the gates' patterns (the redactor's own list)."""
    def files(folder: Path, recursive: bool) -> set[Path]:
        return set(folder.rglob("*.py") if recursive else folder.glob("*.py"))

    assert set().union(*(files(*_source(part)) for part in PARTS)) == set().union(
        files(ROOT / "chronicle", True), *(files(ROOT / layer, True) for layer in LAYERS))
    assert sum(where.startswith("Redactor.build()") for where in patterns_of("chronicle.redaction").values()) > 20


@pytest.mark.parametrize(("pattern", "worst"), [
    (r"v?\d+(?:[._\-/:]\d+)+(?:[-+.]?[A-Za-z0-9][A-Za-z0-9.]*)*", 11),  # the version shape, exponential
    (r"^(#{1,6})\s+(.*?)\s*#*\s*$", 4),  # a Markdown heading without its closing #s
    (r"^\s*(\d{4})\s*-?\s*[Ww]?\s*(\d{1,2})\s*$", 3),  # an ISO week typed loosely
    (r"(?:x|(?:a[a.]*)*)", 11),  # only an alternative, ended, shows it
    (r"(?:(?:a+)+b)*+", 11),  # inside a possessive repeat
    (r"^((?:\w+\s*){0,3}),\s*[A-Z][a-z]+", 3),  # a bounded repeat of a starry body: a vocative, cubic
])
def test_the_check_finds_the_shapes_this_package_once_had(pattern: str, worst: int) -> None:
    assert starriness(pattern) >= worst


@pytest.mark.parametrize("pattern", [
    r"v?\d++(?:[._\-/:]\d++)++(?:[-+.]?[A-Za-z0-9][A-Za-z0-9.]*+)*+",
    r"^\s*+(\d{4})\s*+-?\s*+[Ww]?\s*+(\d{1,2})\s*+$",
    r"(?>\s*)x\s*",
])
def test_possessive_repeats_and_atomic_groups_pass(pattern: str) -> None:
    assert starriness(pattern) < CUBIC


def _gates() -> dict[str, Any]:
    from chronicle.distill.gate import carries_knowledge
    from chronicle.distill.offline import clean, key_info
    from chronicle.distill.parse import extract_json
    from chronicle.distill.speaker import speech
    from chronicle.ingest.notes import parse_note
    from chronicle.memory.search import jieba_words, tokenize
    from chronicle.memory.subjects import heading_person, line_person, reply_target, user_name
    from chronicle.redaction.pseudonyms import Pseudonyms
    from chronicle.redaction.redactor import Redactor
    from chronicle.weekly.faithfulness import check_report, count_claims
    from chronicle.weekly.search import affirmed
    from chronicle.weeks import IsoWeek
    from tests.weekly.helpers import ZH_WEEK, week_input

    def week(text: str) -> None:
        with pytest.raises(ValueError):
            IsoWeek.parse(text)

    def reply(text: str) -> None:
        with pytest.raises(ValueError):
            extract_json(text)

    def guard(text: str) -> None:  # the faithfulness guard on a model's reply or a clinician's correction
        check_report(text, week_input(ZH_WEEK))

    def split_secret(text: str) -> None:  # the next entry of a note, read as the value of a clause left open
        Redactor.build().continuation(text, "x." * (LONG // 2))

    return {"guard": guard, "split_secret": split_secret,
            "redact": Redactor.build().redact, "pseudonymise": Pseudonyms().apply, "note": parse_note,
            "speech": speech, "subject": line_person, "claims": count_claims, "week": week, "reply": reply,
            "knowledge": carries_knowledge, "key_info": key_info, "markdown": clean, "user_md": user_name,
            "reply_label": reply_target, "heading": heading_person, "affirmed": affirmed, "search_terms": tokenize,
            "words": jieba_words}


LONG = 300_000
"""A run this long takes a linear gate a fraction of a second and a quadratic one minutes (the id label's 6,000
blanks took 1.4 s, a line of 20,000 slashes 2.1 s in detect-secrets' npm pattern)."""


@pytest.mark.timeout(60)  # a hang guard, not a measurement
@pytest.mark.parametrize(("gate", "line"), [
    ("redact", "upgraded to 1.2-" + "a" * LONG + "_x"),  # the version shape: exponential
    ("redact", "v1.2.3" + "0" * LONG + "!"),
    ("note", "# plan" + " " * LONG + "x"),  # a heading: cubic
    ("pseudonymise", "身份证 " + "\t" * LONG + "!"),  # an id number's label: quadratic
    ("pseudonymise", "a1 " * (LONG // 3)),
    ("redact", "x " * (LONG // 2)),
    ("redact", "AKIA" + "/" * LONG + "!"),  # a vendor pattern of detect-secrets: quadratic
    ("speech", "AKIA" + "a" * LONG + "!"),  # a name, then a verb ending in -ed: quadratic
    ("speech", "12:00" + " " * LONG + "]"),
    ("subject", " " * LONG + "x"),
    ("claims", "累计" + " " * LONG + "x"),
    ("claims", "入组 " + "1" * LONG + "x"),  # a number tried from inside its own digits: quadratic
    ("guard", "." * LONG + "x"),  # a code's lookaheads tried at every separator: quadratic
    ("guard", "AE " + "-" * LONG),
    ("guard", "a" * LONG + " 3"),
    ("knowledge", "1" * LONG + "x!"),  # a vocative's bounded repeat of words: cubic
    ("user_md", "\n" * LONG + "x"),  # `^\s*` at every line start of a file of blank lines: cubic
    ("reply_label", " " * LONG + "x"),
    ("heading", "## a" + " " * LONG + "x"),
    ("key_info", "1" * LONG + "x"),  # a quantity tried from every digit
    ("key_info", "1," * (LONG // 2) + "x"),
    ("markdown", "[" * LONG),  # a link's text scanned to the end from every bracket
    ("markdown", "[a](" * (LONG // 4)),
    ("affirmed", "a" * LONG + "x"),
    ("redact", "password " * (LONG // 9)),  # a copula searched to the clause's end from every noun of it
    ("redact", "x." * (LONG // 2)),  # a URL's scheme tried from every letter of a dotted run
    ("redact", "password\n" + "x." * (LONG // 2)),  # a pair's name prefix scanned to the run's end from every dot
    ("split_secret", "password " * (LONG // 9)),  # a clause's end read again for every noun of it
    ("pseudonymise", "DOB " + " " * LONG + "x"),  # a label's two runs of blanks
    ("pseudonymise", "1" * LONG + "x"),  # a subject's age tried from every digit
    ("search_terms", "入" * LONG),  # jieba's model of unknown characters copies its path at each: quadratic
    ("words", "王" * LONG),
    ("week", "2026" + " " * LONG + "x"),
    ("reply", "```" + " " * LONG),
])
def test_the_lines_that_stalled_a_gate_are_answered(gate: str, line: str) -> None:
    _gates()[gate](line)
