"""Fail-closed token rules (pure): a token with the statistics of a credential is hidden unless it is declared safe.

Shapes listed one by one leak the next shape nobody listed. These rules judge every token by its statistics —
length, character classes, how often the class changes, Shannon entropy; `eyJ` JWT parts; long hex and
base64 runs, and what a base64 run decodes to — whatever label stands before it. What survives is what the
project declares safe (`SafeShapes`): subject ids by the project's pattern, dates, times, versions, CTCAE
grades, lot numbers, UUIDs, and commit hashes where configured.

Also here, because they are shapes no label announces: `0x` + 64 hex (a wallet's private key), a 12+-word
run of the BIP-39 list (a recovery phrase; the list from the `mnemonic` package, the reference
implementation's), URL query values and webhook path segments, and vendor formats recognised by
detect-secrets' plugins used as a library.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise

from chronicle.redaction.checks import entropy
from chronicle.redaction.operator_patterns import OperatorPattern

Span = tuple[int, int, str]

_DONE = r"(?!\[REDACTED:)"
DEFAULT_SUBJECT_ID = r"[A-Z]{2,6}\d{2,4}(?:-\d{2,4}){1,3}"
"""A study subject id (`XH201-01-003`): sponsor letters, protocol digits, site and sequence."""


@dataclass(frozen=True)
class SafeShapes:
    """What the project declares safe: never redacted by the statistical rules (a label's value still is)."""

    subject_id: str = DEFAULT_SUBJECT_ID
    commit_hashes: bool = True

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The built-in safe shapes, on `re` (with the default subject-id pattern unless the project has its own)."""
        parts = [*([DEFAULT_SUBJECT_ID] if self._subject is None else []),
                 r"v?\d++(?:[._\-/:]\d++)++(?:[-+.]?[A-Za-z0-9][A-Za-z0-9.]*+)*+", r"\d{4}-W\d{2}", r"\d{8}T\d{6}Z?",
                 r"(?:CTCAE|grade|G)[-_ ]?v?\d(?:\.\d+)?",
                 r"(?:LOT|Lot|lot|BATCH|Batch|batch)[-_#]?\d[A-Za-z0-9-]*",
                 r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}",
                 # LanceDB's own data-file names (24 binary digits, then 26 hex), which a damaged store's repair
                 # message must name; no generated secret starts with 24 characters of 0 and 1.
                 r"[01]{24}[0-9a-f]{26}(?:\.lance)?"]
        if self.commit_hashes:
            parts.append(r"[0-9a-f]{7,12}|[0-9a-f]{40}")
        return re.compile("|".join(f"(?:{p})" for p in parts))

    @cached_property
    def _subject(self) -> OperatorPattern | None:
        """A subject-id pattern of the project's own: bounded, as every pattern an operator writes."""
        return None if self.subject_id == DEFAULT_SUBJECT_ID else OperatorPattern.of(self.subject_id)

    def safe(self, token: str) -> bool:
        return self.pattern.fullmatch(token) is not None or (self._subject is not None
                                                             and self._subject.fullmatch(token))


def _cls(c: str) -> int:
    return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3


def _switch_rate(token: str) -> float:
    """How often the character class changes (lower, upper, digit, symbol): ~0.6 in a generated string,
    under 0.3 in an identifier or a word with a number (`getUserById2`, `release_2026_final`)."""
    alnum = [c for c in token if c.isalnum()]  # a separator (`_`, `-`) is no change of class
    return sum(_cls(a) != _cls(b) for a, b in pairwise(alnum)) / max(1, len(alnum) - 1)


_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]+")
_B64_CHARS = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_SECRET_IN_DECODED = re.compile(r"pass(?:word|wd)?|pwd|secret|token|api[_-]?key|密码|^[^\s:]{1,40}:[^\s:]{4,}$",
                                re.I)


def _decodes_to_secret(token: str) -> bool:
    """A base64 run that decodes to `password=…`, `user:pass` or a JSON secret: base64 hides no secret."""
    if len(token) < 12 or not _B64_CHARS.fullmatch(token):
        return False
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return text.isprintable() and _SECRET_IN_DECODED.search(text) is not None


def credential_like(token: str, safe: SafeShapes) -> bool:
    """True when `token` has the statistics of a generated credential and is not a declared-safe shape."""
    core = token.rstrip("=")
    n = len(core)
    if n < 12 or safe.safe(token) or safe.safe(core):
        return False
    if core.startswith("eyJ") and n >= 16:
        return True
    if _HEX.fullmatch(core):
        digits = core[2:] if core[:2] in ("0x", "0X") else core
        return len(digits) >= 32 and not (safe.commit_hashes and len(digits) == 40)
    if _decodes_to_secret(token):
        return True
    letters, digits = any(c.isalpha() for c in core), any(c.isdigit() for c in core)
    if n < 16 or not letters:
        return False
    rate, bits = _switch_rate(core), entropy(core)
    if not digits:  # letters only: long, mixed case, changing case like a generated string
        return n >= 24 and rate >= 0.4 and bits >= 4.0
    return rate >= 0.3 and bits >= min(3.6, math.log2(n) - 0.6)


# A token: a run of base64/base64url characters (dots join JWT parts), not glued to more of them.
_TOKEN_RUN = re.compile(rf"(?<![A-Za-z0-9+/_\-.]){_DONE}[A-Za-z0-9+/_\-.]{{12,}}={{0,2}}(?![A-Za-z0-9+/_\-.=])")
# A scheme from its first letter only: tried from every letter of a long dotted run, it was quadratic.
_URL = re.compile(r"\b(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s\"'<>`，。；）]+", re.I)
_QUERY = re.compile(r"[?&](?P<name>[^=&#\s]+)=(?P<value>[^&#\s\"'<>]+)")
_SECRET_PARAM = re.compile(r"(?:^|[_.-]|api|access|secret|session|auth|security|client)(?:sig|signature|token|key"
                           r"|secret|password|passwd|pwd|auth|credential|code)$", re.I)
_WEBHOOK_HOSTS = re.compile(
    r"(?:open\.feishu\.cn|open\.larksuite\.com|oapi\.dingtalk\.com|qyapi\.weixin\.qq\.com|hooks\.slack\.com"
    r"|discord(?:app)?\.com|[a-z0-9.-]*webhook\.office\.com|chat\.googleapis\.com|api\.telegram\.org"
    r"|hooks\.zapier\.com|maker\.ifttt\.com)", re.I)
_WEBHOOK_PATH = re.compile(r"(?:/(?:hook|webhooks?|services|workflows|triggers|send|bot[^/]*|robot|trigger"
                           r"|hooks)/)(?P<rest>[^?#\s]+)", re.I)


def url_spans(text: str, safe: SafeShapes) -> list[Span]:
    """Secret query values (named like one, or credential-like whatever their name) and a webhook host's
    path after its hook segment."""
    spans: list[Span] = []
    for url in _URL.finditer(text):
        base = url.start()
        body = url.group(0)
        host = re.match(r"[^:]+://(?:[^@/]*@)?(?P<host>[^/:?#]+)", body)
        if host and _WEBHOOK_HOSTS.fullmatch(host.group("host")):
            path = _WEBHOOK_PATH.search(body, host.end())
            rest = path.group("rest") if path else ""
            if path and "[REDACTED:" not in rest and (len(rest) >= 16 or any(c.isdigit() for c in rest)):
                spans.append((base + path.start("rest"), base + path.end("rest"), "webhook"))
        for q in _QUERY.finditer(body):
            value = q.group("value").rstrip(".,;:!?)")
            if "[REDACTED:" in value or len(value) < 6:
                continue
            secret_name = _SECRET_PARAM.search(q.group("name")) is not None
            if secret_name or credential_like(value, safe):
                spans.append((base + q.start("value"), base + q.start("value") + len(value), "secret"))
    return spans


_PARTS = re.compile(r"[./]")
_SEGMENT = re.compile(r"[^/?#&=:@]{12,}")
_DIGEST_BEFORE = re.compile(r"(?:sha\d{0,3}|md5|digest|checksum|hash|(?:trace|span|request|correlation)[_-]?id)"
                            r"[ \t]*[:=@]?[ \t]*$", re.I)
"""A content digest or a trace id names data, it opens nothing."""


def token_spans(text: str, safe: SafeShapes) -> list[Span]:
    """Credential-like tokens; inside a URL each path segment is judged alone (a path is no token). A run is hidden
    whole when it, or one of its parts between dots (a JWT's) or slashes (a key that names a folder), is
    credential-like: a key is not diluted by the ordinary path around it, and a path is not half shown."""
    urls = [u.span() for u in _URL.finditer(text)] if "://" in text else []
    spans: list[Span] = []
    for start, end in urls:
        for seg in _SEGMENT.finditer(text, start, end):
            if "[REDACTED:" not in seg.group(0) and credential_like(seg.group(0), safe):
                spans.append((seg.start(), seg.end(), "secret"))
    for m in _TOKEN_RUN.finditer(text):
        if any(s <= m.start() < e for s, e in urls) or _DIGEST_BEFORE.search(text, max(0, m.start() - 24), m.start()):
            continue
        token = m.group(0).rstrip(".")
        if credential_like(token, safe) or any(credential_like(p, safe) for p in _PARTS.split(token) if len(p) >= 16):
            spans.append((m.start(), m.start() + len(token), "jwt" if token.startswith("eyJ") else "secret"))
    return spans


@lru_cache(maxsize=1)
def _bip39() -> frozenset[str]:
    from mnemonic import Mnemonic

    return frozenset(Mnemonic("english").wordlist)


_WORD_RUN = re.compile(r"(?<![A-Za-z])[a-z]{3,8}(?:[ \t\r\n,]+[a-z]{3,8}){11,}(?![A-Za-z])")


def mnemonic_spans(text: str) -> list[Span]:
    """12 or more consecutive words of the BIP-39 list: a wallet's recovery phrase."""
    if text.count(" ") + text.count("\n") < 11:
        return []
    words = _bip39()
    spans: list[Span] = []
    for m in _WORD_RUN.finditer(text):
        run: list[re.Match[str]] = []
        for w in re.finditer(r"[a-z]+", m.group(0)):
            if w.group(0) in words:
                run.append(w)
                continue
            if len(run) >= 12:
                spans.append((m.start() + run[0].start(), m.start() + run[-1].end(), "secret"))
            run = []
        if len(run) >= 12:
            spans.append((m.start() + run[0].start(), m.start() + run[-1].end(), "secret"))
    return spans


_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16}")
"""Every vendor format holds a run this long: a text without one skips the plugins."""


@lru_cache(maxsize=1)
def _vendor_regexes() -> tuple[tuple[re.Pattern[str], str | None], ...]:
    """detect-secrets' regex plugins (the vendor formats), without the IP one (an address is no secret), each with
    the text every match of it holds (`_required`)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    skip = {"Public IP (ipv4)"}
    patterns: list[re.Pattern[str]] = []
    for name, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if name not in skip and issubclass(cls, RegexBasedDetector):
            patterns += list(cls().denylist)
    return tuple((pattern, _required(pattern)) for pattern in patterns)


def _required(pattern: re.Pattern[str]) -> str | None:
    """The longest run of plain characters at the pattern's top level (so in every match), or None. A pattern is
    skipped on a text without it: npm's `//.+/:_authToken=` tried `.+` from every `//` of a line of slashes,
    quadratic in the line. None under IGNORECASE, whose letters match more than themselves."""
    if pattern.flags & re.IGNORECASE:
        return None
    from re import _constants, _parser  # the stdlib's own parser: what `re.compile` reads the pattern with

    best, run = "", ""
    for op, arg in _parser.parse(pattern.pattern, pattern.flags):
        run = run + chr(arg) if op is _constants.LITERAL else ""
        best = max(best, run, key=len)
    return best if len(best) >= 4 else None


def vendor_spans(text: str) -> list[Span]:
    """Vendor formats (AWS, Azure, Stripe, Twilio, Mailchimp, …) as detect-secrets' plugins find them."""
    if _LONG_RUN.search(text) is None:
        return []
    spans: list[Span] = []
    for pattern, required in _vendor_regexes():
        if required is not None and required not in text:
            continue
        for m in pattern.finditer(text):
            groups = [i for i in range(1, (pattern.groups or 0) + 1) if m.group(i)]
            start, end = m.span(groups[-1]) if groups else m.span()
            if end - start >= 8 and "[REDACTED:" not in text[start:end]:
                spans.append((start, end, "api_key"))
    return spans
