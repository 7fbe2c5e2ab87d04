"""Secret and personal-data redaction (pure): applied before text reaches the LLM or any store.

Each match becomes `[REDACTED:<kind>]`; callers get per-kind counts (never the matched text) so a run can
report *how much* it hid without repeating it. Patterns run in a fixed order: multi-line PEM keys, URLs and
structured tokens first, so a later, looser pattern (e-mail, phone) never sees half of a key, and a value
already replaced is never counted twice.

It covers the forms people actually write, not only `key=value`: HTTP headers (`Authorization: Basic`,
`Cookie:`, `X-Api-Key:`), credentials inside URLs whatever the host, webhook URLs, vendor key prefixes,
`*_PASS` / `*_PWD` / `*_TOKEN` / `*_KEY` assignments, full-width forms (`password＝…`), plain language
(`密码是 X`, `password is X`), IDs and phones written with spaces or dots, and a key split over two lines.
`tests/data/redaction/corpus.jsonl` holds labelled positive AND negative examples (dates, versions, order
numbers, UUIDs, SHAs, IPs, prices must survive); `bench/redaction.py` prints precision and recall per kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any

from chronicle.redaction import checks, shapes
from chronicle.redaction.clauses import clause_spans, open_clause
from chronicle.redaction.operator_patterns import OperatorPattern
from chronicle.redaction.text import Redacted
from chronicle.redaction.tokens import SafeShapes, Span, mnemonic_spans, token_spans, url_spans, vendor_spans

_A = "A-Za-z0-9"  # ASCII only: `\w` would also match CJK text glued to a token
_NOT_DONE = r"(?!\[REDACTED:)"
_TOKEN = "A-Za-z0-9_\\-"
# A token continued on the next line ("a key split over two lines"): the line ends right after the token, and
# the next line is nothing but token characters with a digit in them, or starts with a random-looking run
# (digits, upper and lower case, 12+ characters) that text may follow — so an ordinary word or a date is not
# eaten. (`=` only as base64 padding: a next line `NAME=value` is an assignment of its own.)
_CONT = (rf"(?:\\?[ \t]*\r?\n[ \t]*(?:(?=[A-Za-z_\-+/]*\d)[{_TOKEN}+/]{{8,}}={{0,2}}(?=[`'\"]|[ \t]*(?:\r?\n|\Z))"
         rf"|(?=[{_TOKEN}+/]*\d)(?=[{_TOKEN}+/]*[A-Z])(?=[{_TOKEN}+/]*[a-z])[{_TOKEN}+/]{{12,}}={{0,2}}(?=[ \t])))")
# The value of a `name=value` pair: a quoted string, or a bare run up to whitespace / quotes / CJK punctuation,
# possibly continued on the next line.
_PAIR_VALUE = (rf"""(?:(?P<q>["'])(?P<qv>{_NOT_DONE}[^"'\n]+)|(?P<v>{_NOT_DONE}[^\s"'`<>，。；、（）]+"""
               rf"""{_CONT}*))""")
_SEP = r"""["']?[ \t]*[:=：][ \t]*"""
# A name's prefix (`DB_`, `app.db.`) is bounded: a name is tried after every dot of a dotted run, and an unbounded
# prefix scanned the rest of the run each time (quadratic). A longer prefix gives the same value, from a later dot.
_PREFIX = r"(?:[A-Za-z0-9_.-]{0,32}[_.-])?"

_PASSWORD_NAMES = r"password|passwd|passphrase|pass_word|pwd|密码|口令"
_SECRET_NAMES = (r"secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret"
                 r"|[A-Za-z0-9]*_key|密钥|令牌")

_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^<>]*>|\{\{.*\}\}|\*+|[xX]+|\.\.\.|…|"
                          r"null|none|nil|true|false|undefined|redacted|\[REDACTED:[a-z_]+\]|"
                          r"your[_-][A-Za-z0-9_-]+|see|n/?a|tbd|todo|same|below|above|unknown|empty|required", re.I)


def _value(match: re.Match[str]) -> str:
    groups = match.re.groupindex
    for name in ("qv", "v", "val", "w"):
        if name in groups and match.group(name) is not None:
            return match.group(name)
    return match.group(0)


def _not_placeholder(match: re.Match[str]) -> bool:
    """`password=${DB_PASSWORD}`, `<your-key>`, `***` name no secret; redacting them only adds noise."""
    value = _value(match).strip()
    return "[REDACTED:" not in value and not _PLACEHOLDER.fullmatch(value)


def _password_value(match: re.Match[str]) -> bool:
    """Any non-placeholder value of a password field — except the shell's `PWD=/home/user`, a path."""
    if not _not_placeholder(match):
        return False
    return not (_value(match).startswith(("/", "~")) and re.search(r"pwd\W*$", _name_of(match), re.I))


# Names ending in _key / _token that hold no secret (settings, schema words, counters).
_NOT_SECRET_NAME = re.compile(
    r"(?:sort|primary|foreign|partition|cache|group|dedup|idempotency|lookup|hash|shard|routing|row|unique|index"
    r"|cluster|order|join|dict|map|hot|public|shortcut|sort_by|next|page|cursor|state|object|s3|bucket|i18n"
    r"|translation|message|locale|label|setting|config|field|column|table|metric|event|task|job|queue|redis"
    r"|registry|env)[_.-]?key\b|(?:max|num|min|total|n|input|output|prompt|completion)[_.-]?tokens?\b"
    r"|\btokens?[_.-]?(?:count|limit|in|out|used|budget)\b|\bpublic[_.-]?key\b|\bkey[_.-]?id\b", re.I)


def _name_of(match: re.Match[str]) -> str:
    span = _keep_span(match)
    return match.string[span[0]:span[1]] if span else ""


def _secret_like(match: re.Match[str]) -> bool:
    """A `*_TOKEN` / `*_KEY` / `secret:` value is a secret unless it is a placeholder, a small number, a
    setting's name (`sort_key`, `max_tokens`, `public_key`) — or, after a lower-case prose name (`secret:`,
    `token:`), a plain word: `Secret: ship small PRs` is advice, `secret: s3cr3tValue` is not."""
    value = _value(match).strip()
    if not _not_placeholder(match) or len(value) < 4 or (value.isdigit() and len(value) < 8):
        return False
    name = _name_of(match)
    if _NOT_SECRET_NAME.search(name):
        return False
    bare = re.sub(r"[^A-Za-z_]", "", name)
    if (bare.isupper() and "_" in bare) or ("q" in match.re.groupindex and match.group("q")):
        return True  # an env-style assignment (SIGNING_KEY=...) or a quoted config value
    return len(value) >= 6 and _tokenish_text(value)


def _tokenish_text(value: str) -> bool:
    return (any(c.isdigit() for c in value) or any(c in "+/=_-." for c in value)
            or (any(c.isupper() for c in value) and any(c.islower() for c in value)))


def _password_like(match: re.Match[str]) -> bool:
    """`password is X` in prose: X must look like a password (a digit, a symbol or inner capitals), so
    "the password is required" or "password is stored in Vault" stay as they are."""
    value = _value(match)
    if not _not_placeholder(match) or len(value) < 4:
        return False
    return (any(c.isdigit() for c in value) or any(c in "!@#$%^&*_+=?~" for c in value)
            or sum(c.isupper() for c in value[1:]) >= 1)


def _cn_id_checksum(match: re.Match[str]) -> bool:
    """An ID written in arbitrary groups is redacted only with a valid GB 11643 check digit (python-stdnum; a run
    of digit groups is otherwise too common); the plain and 6-8-4 forms need no checksum (a mistyped ID is
    still one)."""
    return checks.cn_resident_id(match.group(0))


_ID_WORDS = re.compile(r"身份证|证件|公民身份|id\s*(?:card|no|number)|resident", re.I)


def _cn_id_plain(match: re.Match[str]) -> bool:
    """The plain and 6-8-4 forms: a valid check digit, or an ID word just before (a mistyped ID number is still
    someone's ID number; a lot number with a date in it is not)."""
    before = match.string[max(0, match.start() - 24):match.start()]
    return _cn_id_checksum(match) or _ID_WORDS.search(before) is not None


_DATE8 = r"(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"


_SPREAD_ID = r"[ -]?".join([r"\d"] * 17) + r"[ -]?[\dXx]"
"""18 ID characters with at most one space or hyphen between any two."""


def _tokenish(match: re.Match[str]) -> bool:
    """A credential, not a word: a digit, mixed case or base64/URL punctuation (`Authorization: required`
    is prose; `Authorization: Basic dXNlcjpwYXNz` is not)."""
    return _tokenish_text(_value(match))


# Trigger words (lower-case): a pattern runs only on text holding one of them — `in` on a string costs next to
# nothing, a regex scan does not. `()` = always run.
_T_VENDOR = ("sk-", "sk_", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat", "glpat-", "akia",
             "asia", "xox", "xapp-", "aiza", "hf_", "npm_", ":aa")
_T_PASSWORD = ("pass", "pwd", "密码", "口令")
_T_SECRET = ("secret", "token", "key", "password", "密钥", "令牌")
_T_WEBHOOK = ("hooks.slack", "discord", "webhook.office")
_AUTH = r"""\b(?:Proxy-)?Authorization["']?[ \t]*[:=][ \t]*["']?"""
_AUTH_SCHEMES = r"(?:Bearer|Basic|Digest|Token|ApiKey|Bot)\b"

# (kind, pattern, flags, check, triggers). A `keep` group (keep2.. in alternatives) stays in the text, as does a
# `q` group (an opening quote); a `check` can veto a match (a placeholder, a word that is no password).
_PATTERNS: list[tuple[str, str, int, Callable[[re.Match[str]], bool] | None, tuple[str, ...]]] = [
    # A truncated key (no END line) is redacted to the end of the text rather than leaked.
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", re.S, None, ("-----begin",)),
    ("jwt", rf"(?<![{_A}_-])eyJ[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}{_CONT}*", 0, None, ("eyj",)),
    # Credentials inside any URL (`postgres://admin:pw@db-host/prod`, `redis://:pw@cache`): the password goes,
    # the scheme, user and host stay readable.
    ("password", rf"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\[\]]*:){_NOT_DONE}(?P<v>[^\s@/]+)(?=@)", 0,
     _not_placeholder, ("://",)),
    # Webhook URLs are bearer credentials in themselves.
    ("webhook", rf"(?P<keep>https?://hooks\.slack\.com/(?:services|workflows|triggers)/){_NOT_DONE}[{_TOKEN}/]+"
                rf"|(?P<keep2>https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/){_NOT_DONE}[{_TOKEN}/]+"
                rf"|(?P<keep3>https?://[A-Za-z0-9.-]+\.webhook\.office\.com/){_NOT_DONE}\S+", re.I, None, _T_WEBHOOK),
    # Secrets in URL query strings (`?access_token=…`, `&sig=…`).
    ("secret", rf"(?P<keep>[?&](?:access_token|token|api_?key|apikey|key|sig|signature|secret|password|auth)=)"
               rf"{_NOT_DONE}(?P<v>[^&\s#\"']{{6,}})", re.I, _secret_like, ("=",)),
    ("bearer_token", rf"(?P<keep>\bBearer\s+){_NOT_DONE}[{_A}._~+/=-]{{8,}}{_CONT}*", re.I, None, ("bearer",)),
    # Other Authorization schemes: multi-field ones (Digest ...) to the end of the line, else one credential
    # token after an optional scheme word (Basic, Token, ApiKey, none).
    ("auth_header", rf"(?P<keep>{_AUTH}(?:Digest|AWS4-HMAC-SHA256|OAuth|Signature|Negotiate|NTLM|HOBA)[ \t]+)"
                    rf"{_NOT_DONE}(?P<val>[^\s][^\r\n]{{6,}})"
                    rf"|(?P<keep2>{_AUTH}(?:(?!Bearer\b)[A-Za-z][A-Za-z0-9-]*[ \t]+)?){_NOT_DONE}(?!{_AUTH_SCHEMES})"
                    rf"(?P<v>[^\s\"',;]{{6,}}{_CONT}*)", re.I, _tokenish, ("authorization",)),
    # A Cookie header: every name=value pair of it (session ids are credentials).
    ("cookie", rf"(?P<keep>\b(?:Set-)?Cookie[\"']?[ \t]*:[ \t]*[\"']?){_NOT_DONE}(?=[^\s=;:]+=)[^\r\n\"']+", re.I,
     None, ("cookie",)),
    # (A hyphen may precede a key: `memory/2026-03-12-ghp_….md` puts one in a file name.)
    ("api_key", rf"(?<![{_A}_])(?:sk-(?:proj-|ant-|live-)?(?:[{_TOKEN}]{{16,}}|[{_TOKEN}]{{4,}}(?={_CONT}))"
                rf"|(?:sk|rk)_(?:live|test)_[{_A}]{{16,}}|whsec_[{_A}]{{24,}}"
                rf"|gh[pousr]_[{_A}]{{20,}}|github_pat_[{_A}_]{{20,}}|glpat-[{_TOKEN}]{{20,}}"
                rf"|(?:AKIA|ASIA)[0-9A-Z]{{16}}|xox[abposre]-[{_A}-]{{10,}}|xapp-[{_A}-]{{10,}}"
                rf"|AIza[{_TOKEN}]{{30,}}|hf_[{_A}]{{30,}}|npm_[{_A}]{{36}}"
                rf"|(?<=\d:)AA[{_TOKEN}]{{30,}})(?![{_TOKEN}]){_CONT}*", 0, None, _T_VENDOR),
    *shapes.VENDOR,
    *shapes.WRAPPED,
    # `password=…`, `DB_PASSWORD: …`, `*_PASS=…`, `*_PWD=…`, `密码：…` (full-width `＝` is folded to `=`).
    ("password", rf"(?P<keep>(?<![{_A}])(?:{_PREFIX}(?:{_PASSWORD_NAMES})"
                 rf"|[A-Za-z0-9]+(?:[_.-][A-Za-z0-9]+){{0,16}}[_.-]pass){_SEP}){_PAIR_VALUE}", re.I, _password_value,
     _T_PASSWORD),
    # Command lines: `--password X`, `mysql -uroot -pX`, `sshpass -p 'X'`, `curl -u user:X`.
    ("password", rf"(?P<keep>(?<![\w-])--(?:[a-z]+-)?(?:password|passwd|pass)(?:=|[ \t]+)[\"']?){_NOT_DONE}"
                 rf"(?P<val>[^\s\"']+)|(?P<keep2>\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?[ \t]-p){_NOT_DONE}"
                 rf"(?P<v>[^\s\"']+)|(?P<keep3>\bsshpass[ \t]+-p[ \t]*[\"']?){_NOT_DONE}(?P<qv>[^\s\"']+)"
                 rf"|(?P<keep4>\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*[\"']?[^:\s\"']+:){_NOT_DONE}(?P<w>[^\s\"']+)", 0,
     _not_placeholder, ("pass", "mysql", "mariadb", "curl")),
    # Plain language: `the password is Hunter2!`, `pw: s3cret`, `password - X`, `passwd X`: the value must look
    # like a password (`password is required`, `password policy: ...` stay).
    ("password", rf"(?P<keep>\b(?:password|passwd|passcode|pwd|pw)(?:[ \t]*(?:is|was|=|:|-|–)[ \t]*|[ \t]+)"
                 rf"[\"']?){_NOT_DONE}(?P<val>[^\s\"'，。；、]+)", re.I, _password_like, ("pass", "pwd", "pw")),
    # `密码是 abc123`, `口令为 X`, `wifi 密码改成 X`: after an explicit verb any value; bare `登录密码 X` must look
    # like a password.
    ("password", rf"(?P<keep>(?:{_PASSWORD_NAMES})[ \t]*(?:是|为|為|改成|改为|设为|设置为|设置成|換成|换成)"
                 rf"[:：]?[ \t]*){_NOT_DONE}(?P<val>[!-~]{{3,}})", re.I, _not_placeholder, ("密码", "口令")),
    ("password", rf"(?P<keep>(?:密码|口令)[ \t]*[:：]?[ \t]*){_NOT_DONE}(?P<val>[!-~]{{4,}})", 0, _password_like,
     ("密码", "口令")),
    # `*_TOKEN=…`, `*_KEY=…`, `FOO_SECRET=…`, `X-Api-Key: …`, `client_secret: …`, `密钥：…`.
    ("secret", rf"(?P<keep>(?<![{_A}]){_PREFIX}(?:{_SECRET_NAMES}){_SEP}){_PAIR_VALUE}", re.I, _secret_like,
     _T_SECRET),
    # `AccountKey=...;` in connection strings (Azure, Service Bus): CamelCase names ending in Key/Secret/Token.
    ("secret", rf"(?P<keep>(?<![{_A}])[A-Z][A-Za-z0-9]*(?:Key|Secret|Token|Password)[ \t]*=[ \t]*){_NOT_DONE}"
               rf"(?P<v>[^\s;,\"']+)", 0, _secret_like, _T_SECRET),
    # Plain language: `API key 是 X`, `token 为 X`, `secret access key X` (a long token right after the name).
    ("secret", rf"(?P<keep>\b(?:api[ _-]?key|access[ _-]?key|secret(?:[ _-]access)?[ _-]?key|token|secret|密钥|令牌)"
               rf"[ \t]*(?:是|为|為)[:：]?[ \t]*){_NOT_DONE}(?P<val>[!-~]{{6,}})"
               rf"|(?P<keep2>\b(?:api|access|secret|private|signing)(?:[ _-]access)?[ _-]?key[ \t]+){_NOT_DONE}"
               rf"(?P<v>[A-Za-z0-9+/=_-]{{16,}})", re.I, _secret_like, _T_SECRET),
    *shapes.LABELLED,
    *shapes.ENTROPY,
    # (`git@github.com:org/repo` is an SSH remote, not someone's address.)
    ("email", rf"(?<![{_A}._%+-])(?!git@)[{_A}._%+-]+@[{_A}-]+(?:\.[{_A}-]+)*\.[A-Za-z]{{2,}}", 0, None, ("@",)),
    # 6-digit region, birth date 19xx/20xx, 3-digit sequence, check digit (0-9 or X); also written 6-8-4 with
    # spaces or hyphens. The checksum is not required there: a mistyped ID number is still someone's ID number.
    ("cn_id", rf"(?<![\d-])\d{{6}}([ -]?){_DATE8}\1\d{{3}}[\dXx](?![\dA-Za-z])", 0, _cn_id_plain, ()),
    # Any other grouping of the 18 characters: only with a valid check digit.
    ("cn_id", rf"(?<![\d-]){_SPREAD_ID}(?![\dA-Za-z])", 0, _cn_id_checksum, ()),
    *shapes.STRUCTURED,
    *shapes.PHONE,
]

_CONT_LINE = re.compile(rf"(?=[{_TOKEN}+/]*\d)[{_TOKEN}+/]{{8,}}={{0,2}}")
"""A line that may be the second half of a split key: token characters only, with a digit."""

# Full-width forms (`ｐａｓｓｗｏｒｄ＝…`, `１３５…`) are matched as their ASCII twins. The mapping is one
# character to one, so spans found in the folded text are spans of the original. CJK punctuation that ends a
# value (，；（）！？ and quotes) is NOT folded: it would otherwise become part of the secret.
_KEEP_WIDE = set("，；（）！？＂＇")
_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F) if chr(c) not in _KEEP_WIDE} | {0x3000: 0x20}
_WIDE = re.compile("[\uff01-\uff5e\u3000]")


# The patterns that run on every text (ID numbers, CN mobiles and landlines) all need seven digits with at most
# one space, dot or hyphen between two of them: a text without such a run skips them with this one scan.
_DIGIT_RUN = re.compile(r"\d(?:[ .\-]?\d){6}")
_ALWAYS_GATED = ("cn_id", "phone", "iban", "bank_card", "id_number")

_CACHE_MAX = 8192
"""Texts remembered per redactor (actor names and template lines repeat: a week's 70 entries have few actors)."""


@dataclass(frozen=True)
class Redactor:
    """Compiled built-in patterns plus the user's `settings.redact.extra_patterns` (kind `custom`)."""

    patterns: tuple[tuple[str, re.Pattern[str] | OperatorPattern, Callable[[re.Match[str]], bool] | None,
                          tuple[str, ...]], ...]
    safe: SafeShapes = field(default_factory=SafeShapes)
    _cache: dict[str, Redacted] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def build(cls, extra: Iterable[str] = (), safe: SafeShapes | None = None) -> Redactor:
        return _build(tuple(extra), safe or SafeShapes())

    @cached_property
    def _plan(self) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
        """(every trigger word, patterns with their gate: a frozenset of triggers, `_DIGIT_RUN`, or None = always).

        A gate only skips a pattern that could not match: a trigger word is in every text the pattern matches,
        and redacting never creates a digit run (a marker holds no digit)."""
        words = tuple(sorted({t for _, _, _, triggers in self.patterns for t in triggers}))
        plan = []
        for i, (kind, pattern, check, triggers) in enumerate(self.patterns):
            gate: Any = frozenset(triggers) if triggers else None
            if gate is None and kind in _ALWAYS_GATED and i < len(_PATTERNS):
                gate = _DIGIT_RUN
            plan.append((kind, pattern, check, gate))
        return words, tuple(plan)

    def redact(self, text: str, counts: Counter[str] | None = None,
               found: list[tuple[str, str]] | None = None) -> Redacted:
        """`text` with every match replaced by `[REDACTED:kind]`; `counts` (if given) gets +1 per match and
        `found` (if given) the (kind, hidden text) of each — for measuring the redactor, never for logs."""
        remember = counts is None and found is None
        if remember and (hit := self._cache.get(text)) is not None:
            return hit
        original = text
        folded = text.translate(_FOLD) if _WIDE.search(text) else None
        lowered = (folded or text).lower()
        words, plan = self._plan
        present = {t for t in words if t in lowered}
        digits = _DIGIT_RUN.search(folded or text) is not None
        for kind, pattern, check, gate in plan:
            if gate is not None:
                if gate is _DIGIT_RUN:
                    if not digits:
                        continue
                elif gate.isdisjoint(present):
                    continue
            text, folded = _apply(kind, pattern, check, text, folded, counts, found)
        text = _fail_closed(text, folded, self.safe, counts, found)
        out = Redacted(text)
        if remember:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[original] = out
        return out

    def redact_all(self, texts: Iterable[str], counts: Counter[str] | None = None) -> list[Redacted]:
        return [self.redact(t, counts) for t in texts]

    def continuation(self, first: str, second: str) -> str | None:
        """The marker hiding `second` when it continues a secret that ends `first` — a key split over two
        lines that a note parser read as two entries (`sk-proj-abc…` / `def…`), a PEM key whose body is the
        next entry, a secret noun whose clause ends without its value (`数据库密码` / `X`); None otherwise."""
        line = second.strip()
        pem_open = "PRIVATE KEY" in first and "-----BEGIN" in first and "-----END" not in first
        if not (_CONT_LINE.fullmatch(line) or pem_open or open_clause(first)):
            return None
        found: list[tuple[str, str]] = []
        out = self.redact(f"{first}\n{line}", found=found)
        whole = next((f"[REDACTED:{kind}]" for kind, hidden in found if hidden.endswith(line)), None)
        tail = out.rsplit("\n", 1)[-1] if "\n" in out else ""  # the value alone hidden: `= [REDACTED:password]`
        return whole or (tail if "[REDACTED:" in tail and tail != self.redact(line) else None)


@lru_cache(maxsize=16)
def _build(extra: tuple[str, ...], safe: SafeShapes) -> Redactor:
    compiled = [(kind, re.compile(pattern, flags), check, triggers)
                for kind, pattern, flags, check, triggers in _PATTERNS]
    compiled += [("custom", OperatorPattern.of(p), None, ()) for p in extra]
    return Redactor(tuple(compiled), safe)


def _fail_closed(text: str, folded: str | None, safe: SafeShapes, counts: Counter[str] | None,
                 found: list[tuple[str, str]] | None) -> str:
    """After the named shapes: every clause value of a secret noun, URL secret, recovery phrase, vendor
    format and credential-like token left (spans of the folded text are spans of the text)."""
    source = folded or text
    spans = [*clause_spans(source, safe), *url_spans(source, safe), *mnemonic_spans(source),
             *vendor_spans(source), *token_spans(source, safe)]
    if not spans:
        return text
    merged: list[Span] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
        else:
            merged.append((start, end, kind))
    pieces, last = [], 0
    for start, end, kind in merged:
        if counts is not None:
            counts[kind] += 1
        if found is not None:
            found.append((kind, text[start:end]))
        pieces += [text[last:start], f"[REDACTED:{kind}]"]
        last = end
    return "".join([*pieces, text[last:]])


def _apply(kind: str, pattern: re.Pattern[str] | OperatorPattern, check: Callable[[re.Match[str]], bool] | None,
           text: str, folded: str | None, counts: Counter[str] | None,
           found: list[tuple[str, str]] | None) -> tuple[str, str | None]:
    source = text if folded is None else folded
    pieces: list[str] = []
    last = 0
    for match in pattern.finditer(source):
        if check is not None and not check(match):
            continue
        start, end = match.span()
        keep_span = _keep_span(match)
        quote = (match.group("q") or "") if "q" in match.re.groupindex else ""
        keep = text[keep_span[0]:keep_span[1]] if keep_span else ""
        hidden_from = keep_span[1] if keep_span else start
        if counts is not None:
            counts[kind] += 1
        if found is not None:
            found.append((kind, text[hidden_from + len(quote):end]))
        pieces += [text[last:start], text[start:keep_span[0]] if keep_span else "", keep, quote,
                   f"[REDACTED:{kind}]"]
        last = end
    if not pieces:
        return text, folded
    pieces.append(text[last:])
    out = "".join(pieces)
    return out, (out.translate(_FOLD) if folded is not None else None)


def _keep_span(match: re.Match[str]) -> tuple[int, int] | None:
    for name in ("keep", "keep2", "keep3", "keep4"):
        if name in match.re.groupindex and match.group(name) is not None:
            return match.span(name)
    return None


def split_secret_markers(redactor: Redactor,
                         entries: Iterable[tuple[Hashable, str | None, int | None, str]]) -> dict[Hashable, str]:
    """{key: marker} for entries that are the second half of a secret split over two lines.

    `entries` are (key, source file, line number, text). A note parser makes two entries of a key wrapped
    onto an unindented next line; each entry is redacted alone, so the second half would pass as a word. The
    previous entry of the same file (by line number) is what it continues.
    """
    by_file: dict[str | None, list[tuple[int, Hashable, str]]] = {}
    for key, source, line_no, text in entries:
        if line_no is not None:
            by_file.setdefault(source, []).append((line_no, key, text))
    markers: dict[Hashable, str] = {}
    for items in by_file.values():
        items.sort(key=lambda item: item[0])
        for (_, _, before), (_, key, text) in pairwise(items):
            marker = redactor.continuation(before, text)
            if marker:
                markers[key] = marker
    return markers


def redact_value(value: Any, redactor: Redactor) -> Any:
    """`value` with every string inside it (dicts, lists, tuples) redacted — run parameters, stats blobs."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v, redactor) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v, redactor) for v in value)
    return value
