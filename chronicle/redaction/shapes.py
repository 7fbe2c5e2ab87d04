"""The redactor's shape rules (pure): where a person puts a secret, not which vendor made it.

A list of vendor prefixes and `name=value` spellings leaks whatever it did not anticipate. These rules read
text the way a person does:

- a label and its value, whatever joins them: `is` / `是` / `为` / `:`, a line break, a bullet, a table
  cell (`the password is` ⏎ `Spl1tPw9Zz`, `| wifi 密码 | Nx7LinePw |`), for any noun naming a secret
  (`VPN token`, `door code`, `门禁码`, `口令`, …), with the value judged by its look (a password has a
  digit, a symbol or an inner capital; a token is random-looking) so `the token is expired` stays;
- a random-looking token on the same line as a credential word (detect-secrets' keyword + entropy idea);
- well-known formats (`.pgpass` lines, `docker login -p`, env assignments without a separator);
- checksummed identifiers validated by `python-stdnum` (bank cards by Luhn and issuer, IBAN, Chinese
  resident ids) and phone numbers by `phonenumbers`, so dates, versions, order and lot numbers survive.

Each rule is `(kind, pattern, flags, check, triggers)` as in `chronicle.redaction.redactor`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from chronicle.redaction import checks

Rule = tuple[str, str, int, Callable[[re.Match[str]], bool] | None, tuple[str, ...]]

_DONE = r"(?!\[REDACTED:)"
_PLACEHOLDER = re.compile(r"\$\{?\w+\}?|<[^<>]*>|\*+|[xX]{3,}|\.\.\.|…|\[REDACTED:[a-z_]+\]|"
                          r"(?:none|null|n/?a|tbd|todo|unknown|empty|required|redacted|changed|same|below|above)",
                          re.I)


def _group(match: re.Match[str], *names: str) -> str:
    for name in names:
        if name in match.re.groupindex and match.group(name) is not None:
            return match.group(name)
    return match.group(0)


def _real(value: str) -> bool:
    return bool(value) and "[REDACTED:" not in value and not _PLACEHOLDER.fullmatch(value)


# --- well-known formats --------------------------------------------------------------------------------
VENDOR: list[Rule] = [
    ("api_key", r"(?<![A-Za-z0-9_-])(?:SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|GOCSPX-[A-Za-z0-9_-]{20,}"
                r"|ya29\.[A-Za-z0-9_.-]{20,}|pypi-[A-Za-z0-9_-]{20,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{24,}"
                r"|dop_v1_[a-f0-9]{32,}|glsa_[A-Za-z0-9_]{24,}|npm_[A-Za-z0-9]{20,})", 0, None,
     ("sg.", "gocspx-", "ya29.", "pypi-", "shp", "dop_v1_", "glsa_", "npm_")),
    # `export PGPASSWORD=…`, `MYSQL_PWD=…` glued to the name without a separator; `AWS_SECRET_ACCESS_KEY wJalr…`
    # (name, a space, the value): an env-style name in capitals holding a secret noun.
    ("password", rf"(?P<keep>(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE)[ \t]*=[ \t]*[\"']?){_DONE}"
                 r"(?P<v>[^\s\"']+)", 0, lambda m: _real(_group(m, "v")), ("password", "passwd", "passphrase")),
    ("secret", rf"(?P<keep>(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:KEY|SECRET|TOKEN|PASSWORD|PASS|PWD)"
               rf"[ \t]+[\"']?){_DONE}(?P<v>[A-Za-z0-9+/=_.~-]{{8,}})", 0,
     lambda m: checks.random_looking(_group(m, "v")), ("key", "secret", "token", "pass", "pwd")),
    # `docker login -u bob -p S3cret`, `podman login … -p …`.
    ("password", rf"(?P<keep>\b(?:docker|podman|buildah|skopeo|nerdctl|helm[ \t]+registry|oras)[ \t]+login\b"
                 rf"[^\n]*?[ \t]-p[ \t]*[\"']?){_DONE}(?P<v>[^\s\"']+)", 0, lambda m: _real(_group(m, "v")),
     ("login",)),
    # A `.pgpass` line: host:port:database:user:password (not an IPv6 address or a time).
    ("password", rf"(?P<keep>(?<![\w:.*-])(?![0-9a-fA-F]{{1,4}}:)[A-Za-z0-9*][\w.*-]*:(?:\d{{2,5}}|\*):[\w.*-]+"
                 rf":[\w.*@-]+:){_DONE}(?P<v>[^\s:]+)(?=[ \t]*(?:\r?\n|$|[`'\"]))", 0,
     lambda m: _real(_group(m, "v")), (":",)),
]

# A header whose value was wrapped onto the next line; an address spelt out against scrapers.
WRAPPED: list[Rule] = [
    ("auth_header", rf"(?P<keep>\b(?:Proxy-)?Authorization[\"']?[ \t]*:[ \t]*(?:Basic|Bearer|Token|ApiKey)?[ \t]*"
                    rf"\\?\r?\n[ \t]+){_DONE}(?P<v>[A-Za-z0-9+/=._~-]{{8,}})", re.I,
     lambda m: checks.random_looking(_group(m, "v")), ("authorization",)),
    ("email", r"(?<![\w.+-])[A-Za-z0-9._%+-]+[ \t]*(?:\bat\b|\[at\]|\(at\)|＠)[ \t]*[A-Za-z0-9-]+(?:[ \t]*(?:\bdot\b"
              r"|\[dot\]|\(dot\))[ \t]*[A-Za-z0-9-]+)*[ \t]*(?:\bdot\b|\[dot\]|\(dot\))[ \t]*"
              r"(?:com|org|net|cn|edu|io|gov|co|uk|de)\b", re.I, None, ("dot",)),
]

# --- checksummed identifiers ---------------------------------------------------------------------------
STRUCTURED: list[Rule] = [
    ("iban", r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?(?![A-Za-z0-9])", 0,
     lambda m: checks.iban_number(m.group(0)), ()),
    # A US social security number in its own 3-2-4 shape, without a label: valid area, group and serial.
    ("id_number", r"(?<![A-Za-z0-9_\-./])\d{3}-\d{2}-\d{4}(?![A-Za-z0-9_\-]|\.\d)", 0,
     lambda m: checks.us_ssn(m.group(0)), ()),
    ("bank_card", r"(?<![A-Za-z0-9_\-.])\d{4}(?:[ \-]?\d{2,4}){2,4}(?:[ \-]?\d{1,3})?(?![A-Za-z0-9_\-]|\.\d)", 0,
     lambda m: checks.card_number(m.group(0)), ()),
]

_MOBILE = re.compile(r"1[3-9]\d{9}")


def _phone(match: re.Match[str]) -> bool:
    """A valid number; glued to a word by a hyphen (`call-13987654321.md`) only a whole CN mobile number, since
    `ORD-2026-000123` and `HT-2026-0815-01` are references whose digits happen to dial somewhere."""
    text = match.group(0)
    if match.start() and match.string[match.start() - 1] == "-" and not _MOBILE.fullmatch(text):
        return False
    return checks.phone_number(text)


# Any phone number a real region would dial: candidates of 7-15 digits in groups, validated by phonenumbers
# (China by default; any other country with its `+` code).
PHONE: list[Rule] = [
    # (A hyphen may precede it after a word — `call-13987654321.md` — but not after a digit: `ORD-2026…-0042`.)
    ("phone", r"(?<![A-Za-z0-9+_./])(?<!\d-)(?<!--)(?:\+\d{1,3}[ \-.]?)?(?:\(\d{1,4}\)[ \-.]?)?\d{2,5}"
              r"(?:[ \-.]?\d{2,5}){0,4}(?![A-Za-z0-9_\-/:]|\.\d)", 0, _phone, ()),
]

# --- a label and its value -------------------------------------------------------------------------------
_PW_NOUN = r"pass(?:word|wd|phrase|code)|pwd|pw|密码|口令|暗号"
_PIN_NOUN = (r"pin(?:[ -]?code)?|(?:access|door|gate|alarm|entry|security|lock|safe|unlock|wi-?fi|backup|recovery"
             r"|otp|2fa|one[ -]time|verification|auth(?:entication)?)[ -]code|门禁码|验证码|通行码|授权码|激活码"
             r"|提取码|安全码|pin码")
_KEY_NOUN = (r"token|secret|credentials?|(?:api|access|secret|private|signing|license|licence|master|encryption"
             r"|recovery|backup|session|auth)[ _-]?key|密钥|秘钥|令牌|凭据|凭证")
_VERB = (r"(?:(?:(?:is|was|are)(?:[ \t]+now)?|became|set[ \t]+to|changed[ \t]+to|now)(?:[ \t]*[:：])?|=|:|："
         r"|(?<=\s)[-–](?=\s)|->|=>|是|为|為|改成|改为|设为|设置为|换成|換成)")
_BREAK = r"(?:[ \t]*\r?\n[ \t]*(?:[-*+•>]|\d{1,2}[.)])?[ \t]*|[ \t]*\|[ \t]*)"
_VALUE = r"[^\s\"'`|，。；、（）]+"


_PATHLIKE = re.compile(r"^/|\.[A-Za-z]{2,4}(?:/|$)")
"""A path, a host or a file name (`keys/id_ed25519.pub`, `//api.vendor.io/v2`): not a token."""


def _label_check(match: re.Match[str]) -> bool:
    value = _group(match, "val", "v").rstrip(".,;:!?)")
    if value[:1] in "[(<{":  # `[E4]`, `[2]`: the next line of a prompt is a citation id, not a value
        return False
    if not _real(value) or checks.looks_like_date_or_version(value) or _PATHLIKE.search(value):
        return False
    noun = _group(match, "noun", "noun2").lower()
    noun = noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun  # `passwords`, `tokens`
    if re.fullmatch(_PW_NOUN, noun):
        return checks.password_looking(value)
    if re.fullmatch(_PIN_NOUN, noun):
        digits = sum(c.isdigit() for c in value)
        return digits >= 4 or (digits >= 1 and len(value) >= 4 and value.isalnum()) or checks.random_looking(value)
    has_letter, has_digit = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    return (has_letter and has_digit and len(value) >= 6) or checks.random_looking(value)


def _labelled(kind: str, nouns: str, triggers: tuple[str, ...],
              check: Callable[[re.Match[str]], bool] | None = None, value: str = _VALUE) -> Rule:
    noun = rf"(?<![A-Za-z])(?:{nouns})s?"
    # `<noun> is V`, `<noun>：V`, `<noun> 是 V`, possibly with the value on the next line / bullet / cell;
    # or `<noun>` ⏎ `V` and `| <noun> | V |`: the value alone on its line or in its cell.
    return (kind, rf"(?P<keep>(?P<noun>{noun})[\"'`]?[ \t]*{_VERB}[\"'`]?{_BREAK}?[ \t]*[\"'`]?){_DONE}"
                  rf"(?P<val>{value})"
                  rf"|(?P<keep2>(?P<noun2>{noun})[ \t]*[:：]?{_BREAK}[\"'`]?){_DONE}(?P<v>{value})"
                  rf"(?=[\"'`]?[ \t]*(?:\||\r?\n|$))", re.I, check or _label_check, triggers)


# Identity documents named by their label (`SSN: 123-45-6789`, `passport number is E12345678`, `驾照号 …`,
# `national insurance number …`): whatever their country's format, a value with six digits or more.
_ID_NOUN = (r"ssn|social[ -]security(?:[ -](?:number|no\.?))?|social[ -]insurance[ -]number|sin|"
            r"national[ -](?:id|identity|insurance)(?:[ -](?:card|number|no\.?))?|(?:id|identity)[ -]?(?:card[ -]?)?"
            r"(?:number|no\.?|#)|passport(?:[ -](?:number|no\.?|#))?|driver'?s?[ -]licen[cs]e(?:[ -](?:number|no\.?))?|"
            r"tax[ -]?(?:id|file)(?:[ -](?:number|no\.?))?|护照号码?|护照|社保号码?|社会保障号码?|证件号码?|驾照号码?|"
            r"驾驶证号码?|港澳通行证号码?|税号")


_DAY = re.compile(r"(?:19|20)\d{2}[./-]\d{1,2}[./-]\d{1,2}|\d{1,2}[./-]\d{1,2}[./-](?:19|20)?\d{2}")


def _id_check(match: re.Match[str]) -> bool:
    value = _group(match, "val", "v").rstrip(".,;:!?)")
    return _real(value) and sum(c.isdigit() for c in value) >= 6 and not _DAY.fullmatch(value)


LABELLED: list[Rule] = [
    _labelled("id_number", _ID_NOUN, ("ssn", "social", "sin", "national", "id", "identity", "passport", "licen",
                                      "tax", "护照", "社保", "社会保障", "证件", "驾照", "驾驶证", "通行证", "税号"),
               _id_check, r"[A-Za-z0-9](?:[A-Za-z0-9/-]*[A-Za-z0-9])?"),
    _labelled("password", _PW_NOUN, ("pass", "pw", "密码", "口令", "暗号")),
    _labelled("pin", _PIN_NOUN, ("pin", "code", "码")),
    _labelled("secret", _KEY_NOUN, ("token", "secret", "credential", "key", "密钥", "秘钥", "令牌", "凭")),
]

# --- keyword + entropy -------------------------------------------------------------------------------------
ENTROPY: list[Rule] = [
    ("secret", rf"(?P<keep>(?<![A-Za-z])(?:password|passwd|secret|token|api[ _-]?key|key|credentials?|auth|密码"
               rf"|密钥|令牌|口令|凭据)[^\n]{{0,40}}?(?:^|[\s:=：'\"(\[,]|(?<=[^\x00-\x7f]))){_DONE}"
               rf"(?P<v>[A-Za-z0-9+/_.~-]{{16,}}={{0,2}})(?![A-Za-z0-9+/_.~-])", re.I,
     lambda m: checks.random_looking(_group(m, "v"), minimum=16) and not _PATHLIKE.search(_group(m, "v")),
     ("pass", "secret", "token", "key", "credential", "auth", "密码", "密钥", "令牌", "口令", "凭据")),
]
