"""A secret noun scopes its clause (pure): the value of the clause is secret wherever it stands.

"the password for the staging db is X", "The admin password of the router is now X", "X 是新的 wifi 密码",
"口令是 老虎打飞机": a label and its value are not neighbours; they are the subject and the complement of one
clause. For each clause holding a secret noun (English or Chinese) the value is found

- after the clause's copula (`is`, `was`, `became`, `set to`, `:`, `=`, `是`, `为`, `改为`, …), however many
  words stand between noun and copula;
- before the copula when the noun stands after it ("X is the new passcode", "X 是登录验证码");
- right after the noun when it is value-shaped (`验证码 837261`, `授权码 abcdefghijklmnop`);
- on the next line (or the next clause) when the clause ends without one ("数据库密码" ⏎ value,
  "wifi passphrase … is" ⏎ value).

Prose stays: a value that is a predicate word ("is required", "is wrong"), a question word (`是什么`), a
phrase that goes on ("is stored in Vault"), a placeholder, a date, a version or a declared-safe shape.
"""

from __future__ import annotations

import re

from chronicle.redaction.tokens import SafeShapes, Span

_NOUN = re.compile(
    r"(?<![A-Za-z])(?:pass(?:word|wd|phrase|code)s?|pass(?=[ \t]*[:=])|pwd|pins?|pin[ -]?codes?|otp|2fa[ -]codes?"
    r"|tokens?|secrets?"
    r"|credentials?|(?:api|access|secret|private|signing|master|encryption|recovery|app|wallet|deployer|ssh)[ _-]?keys?"
    r"|(?:seed|recovery|mnemonic)[ -](?:words|phrase)|(?:verification|security|access|door|auth(?:orization)?)"
    r"[ -]codes?)(?![A-Za-z])"
    r"|密码|口令|暗号|验证码|校验码|动态码|授权码|私钥|助记词|密钥|秘钥|令牌|凭证|凭据|门禁码|提取码|安全码|激活码|PIN码|pin码",
    re.I)
_COPULA = re.compile(
    r"(?:(?<![A-Za-z])(?:is|was|are|were|became|becomes|has[ \t]+become|have[ \t]+become|reads|set[ \t]+to"
    r"|changed[ \t]+to|updated[ \t]+to|equals)(?:[ \t]+now)?(?![A-Za-z])[ \t]*[:：]?"
    r"|[:：=]|->|=>|←|(?:就是|也是|是|为|為|改为|改成|设为|设置为|换成|变成|更新为)(?:了|成)?[:：]?|如下[:：]?)[ \t]*")
# Where a copula may start: its first word or mark. A clause with hundreds of nouns (a line of "password password
# …") searched for a copula from each noun to the clause's end, quadratic in its length; `copula_near` looks only
# near the noun, at these starts.
_COPULA_START = re.compile(r"(?<![A-Za-z])(?:is|was|are|were|became|becomes|has|have|reads|set|changed|updated|equals)"
                           r"(?![A-Za-z])|[:：=←]|->|=>|就是|也是|是|为|為|改|设|换|变|更新|如下")
_MARK_COPULAS = frozenset([":", "：", "=", "->", "=>", "←"])
"""The copulas of `_COPULA` that are punctuation, not words: a label's mark, never "X is the …"."""
_CLAUSE_END = re.compile(r"[。；;！？\n，]|[.,!?](?=\s|$)")
_VALUE_EN = re.compile(r"[\"'`“‘]?(?P<v>[^\s\"'`”’，。；、（）()]+)")
_VALUE_ZH = re.compile(r"(?P<v>[\u4e00-\u9fff]{2,10})")
_PREDICATE = frozenset([
    "required", "expired", "wrong", "incorrect", "invalid", "valid", "correct", "changed", "reset", "stored",
    "saved", "weak", "strong", "too", "not", "the", "a", "an", "in", "on", "at", "of", "for", "to", "by", "from",
    "being", "still", "same", "missing", "empty", "set", "updated", "rotated", "shared", "sent", "needed", "ok",
    "okay", "fine", "long", "short", "case", "sensitive", "here", "there", "below", "above", "attached", "unknown",
    "known", "different", "new", "old", "now", "also", "what", "how", "where", "which", "who", "when", "secure",
    "important", "mandatory", "optional", "locked", "unlocked", "disabled", "enabled", "revoked", "leaked",
    "compromised", "in-place", "masked", "hidden", "redacted", "blank", "none", "null", "unset", "random",
    "generated", "managed", "handled", "kept", "see", "out", "safe", "gone", "public", "private", "secret",
    "expiring", "valid", "until", "your", "my", "our", "their", "his", "her", "its", "this", "that", "these",
    "those", "it", "them", "you", "we", "they", "he", "she", "i", "me", "us", "one", "two", "three", "same"
])
_PRONOUNS = frozenset(["这", "那", "这个", "那个", "它", "这是", "此", "该", "它们",
                       "this", "that", "it", "which", "what"])
_ZH_PROSE = re.compile(r"^(?:已|在|不|没|需要|要|被|会|可以|必须|由|空|请|联系|详见|参见|见|错|对|发送|收到|输入|忘"
                       r"|多少|什么|啥|哪|对的|错的|错误|正确|默认|空的|一样|必填"
                       r"|过期|有效|无效|几位|怎么|如何|谁|同一|相同|统一|一个|这|那|每|按|用|从|向|给|通过|发|找|问)")
_LOG_PREFIX = re.compile(r"[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*)?(?:[^\s:：\[\]]{1,20}[:：][ \t]*)?(?:[-*+•>][ \t]*)?"
                         r"(?:(?:=|:|：|->|is)[ \t]+)?")
_FILLER = " \t:：如下below-nowherefollowsas"
"""What may stand between a noun and the end of its clause when the value is on the next line."""
_ONLY_FILLER = re.compile(f"[{re.escape(_FILLER)}]*")


def _clauses(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _CLAUSE_END.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def copula_near(text: str, at: int, end: int, within: int) -> re.Match[str] | None:
    """What `_COPULA.search(text, at, end)` finds, when it starts at most `within` characters after `at`; else None.
    Only the starts near `at` are tried (each matched against the whole clause, so a copula's blanks may be long)."""
    pos, stop = at, min(end, at + within + 8)  # (8: room for the longest first word after the last start allowed)
    while (start := _COPULA_START.search(text, pos, stop)) is not None and start.start() - at <= within:
        cop = _COPULA.match(text, start.start(), end)
        if cop is not None:
            return cop
        pos = start.start() + 1
    return None


def _plain_value(value: str, safe: SafeShapes) -> bool:
    """A value that is prose or safe: stays."""
    v = value.strip(".,;:!?)(\"'")
    if (not v or "[REDACTED:" in v or v.startswith(("/", "~", "http")) or v.lower() in _PREDICATE
            or v in _PRONOUNS or len(v) < 3):
        return True
    if re.fullmatch(r"[<{$].*|[xX*.…]+|.*[>}]|\$\{?\w+\}?|\*+|\[[^\]]*\]?|[A-Z][A-Z0-9]*_[A-Z0-9_]+|your[_-]\w+", v,
                    re.I if v.lower().startswith("your") else 0) or safe.safe(v) or "\x01" in v:
        return True
    return re.fullmatch(r"\d{1,3}", v) is not None


_ABOUT = re.compile(r"(?<![A-Za-z])(?:counts?|budget|limits?|length|size|policy|policies|expiry|ttl|format|type|usage"
                    r"|rules?|ids?|names?|fields?|files?|manager|rotation|strength|hint|endpoint|url|path|window"
                    r"|lifetime|scope|version)(?![A-Za-z])"
                    r"|长度|数量|有效期|规则|策略|格式|位数|提示|类型|管理|字段", re.I)
"""A word between noun and copula that makes the clause about the secret, not its value (`token count is`)."""


def _forward(text: str, start: int, end: int, safe: SafeShapes) -> Span | bool | None:
    """The value after the copula that follows the noun: a span, None when the clause has no copula, False
    when its complement is prose."""
    cop = copula_near(text, start, end, 60)
    if cop is None:
        return None
    if _ABOUT.search(text, start, cop.start()):
        return False
    at = cop.end()
    if at >= end:
        return None  # the clause ends with its copula: the value is on the next line
    zh = _VALUE_ZH.match(text, at, end)
    if zh and not _ZH_PROSE.match(zh.group("v")) and not re.search(r"[的了吗呢吧啊]", zh.group("v")):
        return (zh.start("v"), zh.end("v"), "password")
    en = _VALUE_EN.match(text, at, end)
    if en is None or _plain_value(en.group("v"), safe) or re.match(r"[\u4e00-\u9fff]", en.group("v")):
        return False
    value = en.group("v").rstrip(".,;:!?)")
    if _phrase(value, text[en.end("v"):end]):
        return False
    return (en.start("v"), en.start("v") + len(value), "password")


def _phrase(value: str, rest: str) -> bool:
    """"is stored in Vault", "is\nrefreshed hourly": a lower-case word that more words follow is prose."""
    return value.isalpha() and value.islower() and re.match(r"[ \t]*[A-Za-z]", rest) is not None


def _letters_code(value: str) -> bool:
    """A code of letters only (an SMTP authorisation code): long, with the few vowels of a random string."""
    vowels = sum(c in "aeiou" for c in value.lower())
    run = max((len(r) for r in re.findall(r"[^aeiouy]+", value.lower())), default=0)
    if value.isalpha() and value.islower() and len(value) == 16:
        return True  # the length of an SMTP / app password (QQ, 163, Gmail)
    return value.isalpha() and len(value) >= 12 and vowels / len(value) <= 0.3 and (len(value) >= 14 or run >= 4)


def _backward(text: str, cstart: int, noun_start: int, safe: SafeShapes) -> Span | None:
    """`X is the new passcode`, `X 是登录验证码`: the token before a copula that stands before the noun."""
    # Only a copula ending at most 24 characters before the noun counts (below): the copulas are read from a little
    # before that, and before the blanks there (a copula's blanks belong to it), not from the clause's start.
    lo = max(cstart, noun_start - 48)
    while lo > cstart and text[lo - 1] in " \t":
        lo -= 1
    cops = list(_COPULA.finditer(text, max(cstart, lo - 16), noun_start))
    if not cops:
        return None
    cop = cops[-1]
    # "X is the new passcode": the noun closes the copula's complement. A label's colon is not such a copula
    # ("After Fixes: … JWT_SECRET required"), nor is one that many words separate from the noun.
    between = text[cop.end():noun_start]
    if cop.group(0).strip() in _MARK_COPULAS or len(between.split()) > 4 or len(between) > 24:
        return None
    # The last word before the copula, read backwards (a search for it from the clause's start was quadratic).
    v_end = cop.start()
    while v_end > cstart and text[v_end - 1] in " \t":
        v_end -= 1
    # "Hunter2! is the new passcode": a value ending in `!` or `?` before a blank ended the clause before the copula;
    # the value is the word that mark ends.
    bang = v_end == cstart and text[cstart - 1:cstart] in ("!", "?") and not text[cstart - 2:cstart - 1].isspace()
    floor = text.rfind("\n", 0, cstart) + 1 if bang else cstart
    v_start = v_end
    while v_start > floor and not (text[v_start - 1].isspace() or text[v_start - 1] in _NOT_IN_VALUE):
        v_start -= 1
    if v_start == v_end:
        return None
    value = text[v_start:v_end - 1] if bang else text[v_start:v_end]  # (the mark alone makes no word a password)
    if _plain_value(value, safe) or (re.search(r"[\u4e00-\u9fff]", value) and len(value) > 10):
        return None
    if not (re.search(r"\d|[A-Z].*[a-z]|[!@#$%^&*]", value) or re.fullmatch(r"[\u4e00-\u9fff]{2,10}", value)
            or _letters_code(value)):
        return None
    return (v_start, v_end, "password")


_NOT_IN_VALUE = frozenset("\"'`，。；、（）():：")


def _adjacent(text: str, noun_end: int, end: int, safe: SafeShapes) -> Span | None:
    """A value-shaped token right after the noun or a few words later: digits of a code, a long random run."""
    m = re.compile(r"[ \t]*(?:(?:for|of|to|on)[ \t]+(?:the[ \t]+)?[A-Za-z]+[ \t]+)?(?P<v>[A-Za-z0-9!@#$%^&*+/=_-]{4,})"
                   r"(?![A-Za-z0-9])").match(text, noun_end, end)
    if m is None or _plain_value(m.group("v"), safe):
        return None
    value = m.group("v")
    digits = sum(c.isdigit() for c in value)
    if digits >= 4 or (digits and any(c.isalpha() for c in value) and len(value) >= 6) or _letters_code(value):
        return (m.start("v"), m.end("v"), "password")
    return None


def _next_value(text: str, at: int, safe: SafeShapes, after_copula: bool) -> Span | None:
    """The value carried to the next line: its first token after a log prefix, when the line is that token
    alone (or anything value-shaped when the previous line ended with its copula)."""
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    prefix = _LOG_PREFIX.match(text, at, line_end)
    start = prefix.end() if prefix else at
    body = text[start:line_end].strip()
    if not body or "[REDACTED:" in body or _plain_value(body.split()[0], safe):
        return None
    cjk = re.match(r"[\u4e00-\u9fff]", body) is not None
    lone = (re.fullmatch(r"[\u4e00-\u9fff]{2,10}", body) is not None and not _ZH_PROSE.match(body)) if cjk \
        else len(body.split()) == 1
    if not (lone or after_copula):
        return None
    value = body.split()[0].rstrip(".,;:!?)")
    if _phrase(value, body[len(body.split()[0]):]) or (not lone and re.match(r"[\u4e00-\u9fff]", value)):
        return None
    first = text.index(value, start)
    return (first, first + len(value), "password")


_TRIGGERS = ("pass", "pwd", "pin", "otp", "2fa", "token", "secret", "credential", "key", "seed", "phrase", "code",
             "密", "口令", "暗号", "码", "私钥", "助记词", "令牌", "凭")
"""A word every noun holds: `in` on a string is nearly free, the noun pattern is not."""


_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
# Whether a clause ends with its copula (the value is on the next line): read once per clause, not once per noun
# (for every noun of a clause of many nouns it was quadratic).
_ENDS_COPULA = re.compile(r"(?:is|was|are|：|:|=|是|为|如下)[ \t]*$")
_ENDS_SHORT_COPULA = re.compile(r"(?:is|was|:|：|是|为)[ \t]*$")


def clause_spans(text: str, safe: SafeShapes) -> list[Span]:
    lowered = text.lower()
    if not any(t in lowered for t in _TRIGGERS) or (_NOUN.search(text) is None and _KEY.search(text) is None):
        return []
    # A marker is opaque: neither its kind (a noun) nor its `:` (a copula) is read; same length, same spans.
    text = _MARKER.sub(lambda m: "\x01" * len(m.group(0)), text)
    spans: list[Span] = []
    clauses = _clauses(text)
    for i, (start, end) in enumerate(clauses):
        ends_short_copula = _ENDS_SHORT_COPULA.search(text, start, end) is not None
        for noun in _NOUN.finditer(text, start, end):
            if re.match(r"[_-][A-Za-z0-9]", text[noun.end():noun.end() + 2]):
                continue  # `secret_santa`, `token_type`: the noun qualifies another word
            found = _forward(text, noun.end(), end, safe)
            if found is None:
                found = _adjacent(text, noun.end(), end, safe) or _backward(text, start, noun.start(), safe)
            if found is None and i + 1 < len(clauses) and _ONLY_FILLER.fullmatch(text, noun.end(), end):
                ends_copula = bool(_ENDS_COPULA.search(text, start, end))
                found = _next_value(text, clauses[i + 1][0], safe, ends_copula)
            elif found is None and i + 1 < len(clauses) and ends_short_copula:
                found = _next_value(text, clauses[i + 1][0], safe, True)
            elif found is None and i + 1 < len(clauses) and text[end:end + 1] in ",，":
                later = _forward(text, clauses[i + 1][0], clauses[i + 1][1], safe)  # "PIN of X, as of today: V"
                found = later if isinstance(later, tuple) else None
            if not found and i + 1 < len(clauses) and text[end:end + 1] in ",，":
                found = _aside(text, *clauses[i + 1], safe)
            if _PHRASE_NOUN.fullmatch(noun.group(0)):
                found = _whole_phrase(text, noun.end(), end, found)
            if found:
                spans.append(found)
                break
        else:
            found = _key_value(text, start, end)
            if found:
                spans.append(found)
    return spans


_PHRASE_NOUN = re.compile(r"pass ?phrases?|(?:seed|recovery|mnemonic)[ -](?:words|phrase)|助记词|口令|暗号", re.I)
_NOT_PHRASE = frozenset(["and", "or", "but", "with", "never", "be", "been", "because", "so", "if", "which"])
_FUNCTION = frozenset(["the", "a", "an", "in", "on", "at", "of", "for", "to", "by", "from", "not", "still", "being",
                       "now", "also", "is", "was", "are", "it", "this", "that", "my", "your", "our", "their"])


_WORDS = re.compile(r"[ \t]*[\"'“‘]?(?P<w>[^\s,;:：，。；、]+(?:[ \t]+[^\s,;:：，。；、]+){1,11})")


def _whole_phrase(text: str, noun_end: int, end: int, found: Span | bool | None) -> Span | bool | None:
    """A passphrase is words: "passphrase: correct horse battery staple" hides all four, not the first alone, and
    "the passphrase is correct horse battery staple" is not prose for being lower-case words. The words after
    the copula, to the clause's end, are the value unless one of them makes the clause prose again."""
    cop = copula_near(text, noun_end, end, 60)
    if cop is None or (isinstance(found, tuple) and found[0] < cop.end()):
        return found
    words = _WORDS.match(text, cop.end(), end)
    said = [w.lower().strip(".!?\"'”’") for w in words.group("w").split()] if words else []
    # Two words may be a predicate ("is too short"); a phrase of three or more is prose only with a function word
    # in it ("is stored in Vault"): "correct horse battery staple" starts with one of _PREDICATE's words.
    if not said or any(w in (_PREDICATE if len(said) < 3 else _FUNCTION) | _NOT_PHRASE for w in said):
        return found
    value = words.group("w").rstrip(".!?\"'”’")
    return (words.start("w"), words.start("w") + len(value), "password")


def _aside(text: str, start: int, end: int, safe: SafeShapes) -> Span | None:
    """"her bank card PIN, 0927, don't forget": the value set off by commas, alone in its clause."""
    if len(text[start:end].split()) != 1:
        return None
    return _adjacent(text, start, end, safe)


_KEY = re.compile(r"(?<![A-Za-z_])keys?(?![A-Za-z_])", re.I)
_KEY_SHAPED = re.compile(r"(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9+/=_-]{6,}|[0-9a-f]{8,}", re.I)


def _key_value(text: str, start: int, end: int) -> Span | None:
    """"the vault unseal key is 7f3a9c2e": a key of any name whose value is shaped like one (letters and digits,
    or a hex run). A bare "key" is too common a word to scope its clause as the nouns above do — "the key date
    is 2026-03-01", "the primary key is id" — so only a key-shaped value is taken."""
    for key in _KEY.finditer(text, start, end):
        cop = copula_near(text, key.end(), end, 24)
        if cop is None or _ABOUT.search(text, key.end(), cop.start()):
            continue
        value = _VALUE_EN.match(text, cop.end(), end)
        if value is None:
            continue
        v = value.group("v").rstrip(".,;:!?)")
        # Not the statistical safe shapes: after "key", a hex run or a UUID is the key, not a commit or a row id.
        if _KEY_SHAPED.fullmatch(v):
            return (value.start("v"), value.start("v") + len(v), "secret")
    return None


def open_clause(text: str) -> bool:
    """True when `text` ends with a secret noun whose clause has no value yet (the next entry may hold it)."""
    tail = text.rstrip()[-80:]
    last = list(_NOUN.finditer(tail))
    if not last:
        return False
    rest = tail[last[-1].end():]
    return not rest.strip(_FILLER) or re.fullmatch(r".{0,40}?(?:is|was|:|：|是|为|如下)[ \t]*", rest) is not None
