"""Knowledge updates: when a newer memory replaces an older one's fact (pure; Chinese and English rules).

A memory states a *fact* when one of the rules below reads an attribute and a value from it: where someone
lives, where or as what they work, their phone number or e-mail, a favourite thing, what they like to eat
or drink, a decision. A newer memory supersedes an older one when both are about the same subject (the
memory's `subject`, never "" — unknown subjects take no part), state the same attribute of the same holder,
and the values differ. The older memory stays, marked `superseded_by` the newer one's id at the newer one's
date; nothing is deleted.

Conservative on purpose, because a wrong supersession hides a true fact:

- the holder must be the subject itself (no holder, "I/我", the subject's own name). "我妹妹搬到了上海" in
  Zhang's notes is the sister's move, keyed apart from Zhang's own address; "he/她" is never assumed to be the
  subject;
- one rule, one attribute: "喜欢喝咖啡" and "喜欢吃火锅" are different attributes (喝 vs 吃), "favourite film" and
  "favourite song" too; a sentence the rules do not read states no fact and supersedes nothing;
- a memory stating two values of one attribute ("lived in Paris, now lives in Rome") is read by its last;
- the same value again is a restatement, not a change (dedup's business);
- a decision is reversed only by its negation of the same object ("decided to use Postgres" /
  "decided not to use Postgres"), or by "instead of X" naming the old object.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from chronicle.memory.frames import FrameFact, frame_conflict, frame_facts
from chronicle.memory.records import StoredMemory

_ZH_STOP = "，。,.！!？?；;、\n（）()"
_ZH_VAL = rf"([^{_ZH_STOP}\s]{{1,12}}?)"
_ZH_END = rf"(?=了|去|啦|住|生活|工作|居住|上班|[{_ZH_STOP}]|$)"
_ZH_HOLDER = r"((?:我|您|你)?[\u4e00-\u9fff]{0,4}?)"
_EN_VAL = r"([A-Z][\w'’.-]*(?: (?:[A-Z][\w'’.-]*|(?:of|de|la|am|upon)\b))*)"
_EN_HOLDER = r"(?:^|[.;:!?]\s+|, )((?:[A-Z][a-z]+|I|[Ss]?[Hh]e|They|We|My \w+|[Hh]is \w+|[Hh]er \w+)?)\s*"
# "no longer lives in Denver", "不在腾讯上班了": the statement ends the value it names.
_EN_NOT = r"(?:no longer |not |don't |doesn't |do not |does not |never )?"
_ENDED = re.compile(r"\b(?:no longer|not|don't|doesn't|never)\b|不再|不住|不在", re.I)

# (attribute, pattern). Groups: holder, value (or, for `decision`, negation and object). English patterns run
# on the text as written (names are capitalised), Chinese ones on the NFKC text.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("residence", re.compile(rf"{_ZH_HOLDER}(?:现在|目前|已经|刚|最近)?(?:不再|不)?"
                             rf"(?:住在|搬到了?|搬去了?|搬回了?|定居在?|迁居到?|家在){_ZH_VAL}{_ZH_END}")),
    ("residence", re.compile(rf"{_EN_HOLDER}(?:'m |'ve | am | have | has | is )?(?:now |recently |just )?{_EN_NOT}"
                             rf"(?:live[sd]?|living|moved|moves|relocated|"
                             rf"settled)(?: back)? (?:in|to) (?:the )?{_EN_VAL}")),
    ("employer", re.compile(rf"{_ZH_HOLDER}(?:现在|目前|已经|刚)?(?:不再|不)?(?:在|跳槽到了?|入职了?|加入了?)"
                            rf"([\u4e00-\u9fffA-Za-z0-9]{{2,12}}?)(?:公司)?(?:工作|上班|任职)")),
    ("employer", re.compile(rf"{_EN_HOLDER}(?:'m |'ve | am | have | has | is )?(?:now |recently |just )?{_EN_NOT}"
                            rf"(?:works?|worked|working|started working|(?:got|landed|found|started|took) (?:a |my )?"
                            rf"(?:new )?(?:job|position|role)|was hired) (?:at|for|with|by) (?:the )?{_EN_VAL}")),
    ("employer", re.compile(rf"{_EN_HOLDER}(?:recently |just )?joined {_EN_VAL}")),
    ("occupation", re.compile(rf"{_ZH_HOLDER}(?:的)?(?:职业|工作)(?:是|换成了?|改成了?)(?:一名|一个)?"
                              rf"{_ZH_VAL}{_ZH_END}")),
    ("occupation", re.compile(rf"{_EN_HOLDER}(?:now )?works? as (?:an? )?"
                              r"([a-z][a-z -]{2,30}?)(?=[.,;!?]| at| for|$)")),
    ("phone", re.compile(rf"{_ZH_HOLDER}的?(?:新的?)?(?:电话|手机|手机号|电话号码|手机号码)(?:号码)?"
                         r"(?:是|改成了?|换成了?|为|[:：])\s*(\+?\d[\d -]{5,}\d|\[REDACTED:\w+\])")),
    ("phone", re.compile(rf"{_EN_HOLDER}(?:new )?(?:phone|mobile|cell)(?: number)?(?: is| was changed to| changed to|"
                         r" is now|:)\s*(\+?\d[\d -]{5,}\d|\[REDACTED:\w+\])", re.I)),
    ("email", re.compile(rf"{_ZH_HOLDER}的?(?:新的?)?(?:邮箱|电子邮件|email)(?:地址)?(?:是|改成了?|换成了?|为|[:：])\s*"
                         r"([\w.+-]+@[\w-]+\.[\w.-]+|\[REDACTED:\w+\])", re.I)),
    ("email", re.compile(rf"{_EN_HOLDER}(?:new )?e-?mail(?: address)?(?: is| changed to| is now|:)\s*"
                         r"([\w.+-]+@[\w-]+\.[\w.-]+|\[REDACTED:\w+\])", re.I)),
    ("favourite", re.compile(rf"{_ZH_HOLDER}(?:现在)?最(?:喜欢|爱)的([\u4e00-\u9fff]{{1,4}})(?:是|变成了?|换成了?)"
                             rf"{_ZH_VAL}{_ZH_END}")),
    ("favourite", re.compile(r"(?:^|[.;:!?]\s+|, )((?:[A-Z][a-z]+|My|His|Her|Their)(?:'s)?)\s+(?:new )?(?:all-time )?"
                             r"favou?rite ([a-z]+(?: [a-z]+)?) (?:is|is now|has become|became) (?:now )?"
                             r"([\w'’ -]{2,30}?)(?=[.,;!?]|$)")),
    ("likes", re.compile(rf"{_ZH_HOLDER}(?:现在|最近|开始)?(?:更)?(?:喜欢|爱|习惯)(喝|吃|听|看|玩|用)"
                         rf"([^{_ZH_STOP}\s了]{{1,8}}?){_ZH_END}")),
    ("decision", re.compile(rf"{_ZH_HOLDER}(?:最终|最后|已经)?决定(不再|不|取消)?([^{_ZH_STOP}]{{2,24}})")),
    ("decision", re.compile(r"(?:^|[.;:!?]\s+|, )((?:[A-Z][a-z]+|I|We|They|[Ss]?[Hh]e)?)\s*(?:finally |have |has )?"
                            r"decided (not to |against |to )?([^.;!?\n]{3,60})")),
)
# Values that name no particular thing ("在一家公司工作", "in a new place", "在这个行业中工作"): no fact.
_VAGUE = re.compile(r"^(?:一|这|那|当前|现在的|该|某|自己|新的?|旧的?|哪|什么|别的|其他|很多|a |an |this |that |"
                    r"some |my |our |his |her |their |which |what |new |there$|here$|home$)|[中里内上]$|哪|什么", re.I)
_CHANGED = re.compile(r"新|改成|换成|变成|搬|现在|目前|\bnew\b|\bnow\b|changed|\bmoved\b|relocated|\bjoined\b", re.I)
_SELF = {"", "我", "i", "my", "我们", "we", "our"}
_WORK = ("employer", "occupation")
_INSTEAD = re.compile(r"(?:instead of|rather than|而不是|不再用|代替)\s*([^\s,，。.;；]{2,30})", re.I)
_LEADING = re.compile(r"^(?:the |a |an |to |use |using |用|使用|采用|去)", re.I)


@dataclass(frozen=True)
class Fact:
    """One attribute value a memory states: `key` says what (attribute, and its qualifier), `value` the value."""

    key: str
    value: str
    negated: bool = False
    """A decision stated in the negative ("decided not to use X", "决定不…")."""
    changed: bool = False
    """The statement itself says the value changed ("new phone", "改成了", "is now", "moved")."""
    frame: FrameFact | None = None
    """Read by an attribute frame (`chronicle.memory.frames`): compared by `frame_conflict`."""


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().strip()
    text = re.sub(r"\s+", " ", text)
    text = _LEADING.sub("", text).strip(" .,;:!?。，；：！？\"'“”")
    return re.sub(r"(?:了|啦|的|吧)+$", "", text)


_WHEN = r"(?:现在|目前|最近|已经|刚刚?|也|还|又|就|终于|今年|去年|今天|昨天|周末|上周|上个?月|下个?月|前几天|后来|从此)"


def _holder(raw: str, subject: str) -> str | None:
    """The holder as a key part: "" for the subject itself, None when it is somebody else (no fact for them)."""
    h = _norm(raw)
    own = re.search(r"(?:我们|我)[^我]*$", h)  # "周末我终于" -> "我终于": what precedes the pronoun is time/place
    h = own.group(0) if own else h
    h = re.sub(rf"^{_WHEN}+|{_WHEN}+$", "", h)
    h = re.sub(r"^(?:now|recently|just|finally)\s+|\s+(?:now|recently|just|finally)$", "", h)
    if h in _SELF or (subject and h == subject):
        return ""
    return None




def facts(text: str, subject: str) -> list[Fact]:
    """The facts `text` states about `subject` itself (see the module docstring), last value per key."""
    return list(_facts(text, subject))


@lru_cache(maxsize=8192)  # a subject's stored rows are read again by every later batch's supersession plan
def _facts(text: str, subject: str) -> tuple[Fact, ...]:
    found: dict[str, Fact] = {}
    # Questions state nothing ("你住在哪里？", "Where do you live?"): only statements are read.
    statements = [s for s in re.split(r"(?<=[。！!？?；;\n])|(?<=\.)\s+", unicodedata.normalize("NFKC", text))
                  if s.strip() and not re.search(r"[?？]\s*$|吗|呢\s*$", s.strip())]
    nfkc = " ".join(statements)
    for attribute, pattern in _RULES:
        for match in pattern.finditer(nfkc):
            holder = _holder(match.group(1) or "", subject)
            if holder is None:
                continue
            if attribute == "decision":
                word = (match.group(2) or "").strip().casefold()
                negated, obj = word in ("not to", "against", "不再", "不", "取消"), _norm(match.group(3))
                inner = re.match(r"^(.{0,4}?)(?:不再|不|取消)(.+)$", obj)  # "暑假不去日本": the negation inside
                if inner and not negated:
                    negated, obj = True, _norm(inner.group(1) + inner.group(2))
                obj = _decision_object(obj)
                if len(obj) >= 2:
                    found[f"decision:{obj}"] = Fact(f"decision:{obj}", obj, negated)
                continue
            if attribute in ("favourite", "likes"):
                key, value = f"{attribute}:{_norm(match.group(2))}", _norm(match.group(3))
            else:
                key, value = attribute, _norm(match.group(2))
            if attribute == "phone":
                value = re.sub(r"[\s-]", "", value)
            if value and not _VAGUE.search(value):
                found.pop(key, None)  # re-insert: the later statement in the text is the current one
                found[key] = Fact(key, value, negated=attribute in ("residence", "employer")
                                  and bool(_ENDED.search(match.group(0))),
                                  changed=bool(_CHANGED.search(match.group(0))))
    for statement in statements:  # frames: the later statement of a frame is the current one
        for frame in frame_facts(statement, subject):
            if frame.key not in found or found[frame.key].frame is not None:
                found.pop(frame.key, None)
                found[frame.key] = Fact(frame.key, frame.value, changed=frame.strong, frame=frame)
    return tuple(found.values())


_FILLER = re.compile(r"(?:一辆|一个|一台|一部|一本|一家|一只|一件|\b(?:a|an|the|my|our)\b|after all|anymore|for now|"
                     r"any more|了|啦)", re.I)


def _decision_object(obj: str) -> str:
    """A decision's object without articles, measure words and "after all": what two statements must share."""
    return re.sub(r"\s+", " ", _FILLER.sub(" ", obj)).strip()


def _same_object(a: str, b: str) -> bool:
    """Two decision objects name the same thing: equal once compacted, or nearly (character bigram Dice >= 0.8)."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    if a == b:
        return True
    grams_a, grams_b = {a[i:i + 2] for i in range(len(a) - 1)}, {b[i:i + 2] for i in range(len(b) - 1)}
    return bool(grams_a and grams_b) and 2 * len(grams_a & grams_b) / (len(grams_a) + len(grams_b)) >= 0.8


def conflicts(old: Sequence[Fact], new: Sequence[Fact], new_text: str = "") -> bool:
    """Whether `new` states a different value for an attribute `old` states (or reverses its decision)."""
    old_by_key = {f.key: f for f in old if not f.key.startswith("decision:")}
    for fact in new:
        if fact.key.startswith("decision:"):
            if any(b.key.startswith("decision:") and b.negated != fact.negated and _same_object(b.value, fact.value)
                   for b in old):
                return True
            continue
        if fact.frame is not None:  # frames decide by themselves which frame is the same (frames.frame_conflict)
            if any(b.frame is not None and frame_conflict(b.frame, fact.frame) for b in old):
                return True
            if fact.key == "job" and fact.frame.strong and any(b.key in _WORK for b in old):
                return True  # "我换工作了" ends "我在阿里上班"
            continue
        if fact.key in _WORK and fact.changed and any(b.key == "job" for b in old):
            return True  # "我现在在字节跳动上班了" ends "我在一家银行做柜员"
        before = old_by_key.get(fact.key)
        if before is None or before.frame is not None:
            continue
        if fact.negated or before.negated:  # "no longer works at Google" ends "works at Google", nothing else
            if fact.negated and not before.negated and before.value == fact.value:
                return True
            continue
        if before.value != fact.value and "[redacted" not in before.value + fact.value:
            return True
        # A redacted value ("[REDACTED:phone]") hides whether it changed: only a statement that says so counts.
        if "[redacted" in before.value + fact.value and fact.changed:
            return True
    instead = {_norm(m.group(1)) for m in _INSTEAD.finditer(unicodedata.normalize("NFKC", new_text))}
    return any(f.key.startswith("decision:") and not f.negated and any(i and i in f.value for i in instead)
               for f in old)


@dataclass(frozen=True)
class Supersession:
    old_id: str
    new_id: str
    at: datetime
    """The successor's `created`: the day the old fact stopped being current."""


def plan_supersessions(candidates: Sequence[StoredMemory], new_ids: Sequence[str]) -> list[Supersession]:
    """Which current rows the new rows (`new_ids`, in input order) supersede, among `candidates`.

    `candidates`: the new rows and the stored current rows of the same subjects. Rows are taken in time order
    (`created`, then input order for the new ones, stored rows first on a tie); each row supersedes every
    earlier current row of its subject that it conflicts with. A new row older than a stored one it conflicts
    with is itself superseded by that stored row (a backfill of old notes). Only pairs with a new row are
    returned: stored rows were settled when they were written.
    """
    fresh = set(new_ids)
    order = {rid: n for n, rid in enumerate(new_ids)}
    rows = sorted((r for r in candidates if r.subject and not r.superseded_by),
                  key=lambda r: (r.created, r.id in fresh, order.get(r.id, -1)))
    current: dict[str, list[tuple[StoredMemory, list[Fact]]]] = {}
    replaced: set[str] = set()
    out = []
    for row in rows:
        row_facts = facts(row.content, row.subject)
        if not row_facts:
            continue
        mine = current.setdefault(row.subject, [])
        for earlier, earlier_facts in mine:
            if earlier.id in replaced or earlier.created > row.created:
                continue
            if (earlier.id in fresh or row.id in fresh) and conflicts(earlier_facts, row_facts, row.content):
                replaced.add(earlier.id)
                out.append(Supersession(earlier.id, row.id, row.created))
        mine.append((row, row_facts))
    return out
