"""Attribute frames: job, device, schedule, diet and health statements, and whether one says it changed (pure).

The phrase rules of `supersede` read an exact value ("住在北京"). Most updates are not phrased that way: "我换工作了，
现在在一家药企做临床监查员", "I switched to an iPhone", "瑜伽课调到了每周六上午", "I went vegetarian", "My ankle has
healed". A frame reads three things that do generalise across phrasings and both languages:

- the *attribute* a statement is about, from the kind of word it uses — a job noun (Chinese job suffixes
  师/员/家/工…, English -er/-or/-ist nouns after "as a"/"I'm a"/"became a") or a job-change verb; a device kind
  (phone, laptop, tablet, car, watch); an activity with a time (schedule:<activity>); a food group (diet:<group>);
  a body part or condition (health:<part>);
- a *value*: the brands or models named (devices), the times named (schedules), otherwise the statement itself;
- a *change cue*: a strong one ("换/改/转行/辞/戒/开始/恢复", "switched/replaced/quit/gave up/moved/healed/became")
  or a weak one ("现在/最近/these days/now").

A frame fact supersedes an older one of the same key only when the newer statement carries a strong cue, or a
weak cue and a different named value (brands, times). A statement naming a relative or another person
(我妈, my son, his, 她) states nothing about the subject: "我给我妈买了一部华为手机" is not the subject's phone.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

_OTHERS = re.compile(
    r"妈|爸|母亲|父亲|妹|姐|哥|弟|儿子|女儿|孩子|老公|老婆|丈夫|妻子|朋友|同事|男友|女友|奶奶|爷爷|外婆|外公|他|她|你|您|"
    r"\b(?:mother|mom|mum|father|dad|sisters?|brothers?|sons?|daughters?|kids?|child|children|husband|wife|"
    r"friends?|colleagues?|boyfriend|girlfriend|grandma|grandpa|parents?|family|he|she|his|her|hers|him|their|"
    r"they|them|boss|you|your|yours)\b", re.I)
_STRONG = re.compile(
    r"换|改|转行|转岗|辞|离职|跳槽|入职|调到|调整|戒|开始|不再|新买|新换|恢复|康复|痊愈|好了|停药|确诊|升职|退休|"
    r"\b(?:switch(?:ed)?|replac(?:ed|e)|quit|gave (?:up|\w+ away)|moved|changed|became|become|"
    r"went (?:vegetarian|vegan|keto|sober|[a-z]+-free)|heal(?:ed)?|recovered|back to normal|stopped|no longer|"
    r"not any ?more|anymore|cut (?:out|down on|back on)|(?:is|are|was) gone|went away|cleared up|retired|promoted|"
    r"diagnosed|training to be|started|"
    r"(?:got|bought) an? new|new job)\b",
    re.I)
_WEAK = re.compile(r"现在|目前|最近|如今|这些天|这阵子|\b(?:now|these days|nowadays|lately|recently)\b", re.I)

_JOB_ZH = re.compile(r"(?:做|当|是一名|是一个|是|担任|成为|作为|从事)(?:了|过)?(?:一名|一个)?"
                     r"(?P<noun>[\u4e00-\u9fffA-Za-z]{0,8}?(?:师|员|家|护士|医生|经理|总监|主管|会计|司机|记者|"
                     r"编辑|老板|教练|主播|店主))(?=[，。,.！!；;、\s]|了|$)"
                     r"|转行|辞职|辞去|离职|跳槽|换工作|换了?份?工作|教职|退休|入职")
_JOB_EN = re.compile(r"\b(?:work(?:s|ed|ing)? as|i'?m an? |i am an? |became an? |become an? |training to be an? |"
                     r"job as|career as)\s*(?:[a-z]+ ){0,2}"
                     r"(?:[a-z]{2,}(?:er|or|ist|ant|ent|ian)|nurse|chef|pilot|agent|cook|clerk|coach|doctor|lawyer)s?\b"
                     r"|\b(?:i teach|changed careers|career change|"
                     r"quit (?:my job|(?!smok|drink|vap|gambl|snack|eat|bit|chew)\w+ing)|left (?:teaching|"
                     r"my job|nursing)|retired|got (?:laid off|fired)|lost my job|unemployed)\b"
                     r"|\b(?:i'?m|i am|work(?:ing)? as) an? (?:[a-z]+ )?[a-z]{4,}"
                     r"(?= at | for | in an? | now\b)",
                     re.I)
# "I'm a heavy coffee drinker", "I'm a dog lover", "I'm an early riser": a trait or a habit, not a job.
_TRAIT = re.compile(r"(?:drink|eat|lov|smok|sleep|ris|read|gam|learn|beginn|believ|follow|listen|watch|own|us|"
                    r"memb|support|speak|go|hold|dream|think|worri|plann|travel+|fan|runn|walk|hik|swimm)ers?$"
                    r"|\b(?:fan|foodie|enthusiast|person|vegetarian|vegan)s?$", re.I)
_NOW_SO = re.compile(r"(?:(?:现在|如今|目前)[^，,。.！!；;]*|不[^，,。.！!；;]{1,8})了\s*[。！!.]?\s*$")
# A wish or a plan is not the current state: "I want to become an organizer", "我打算换手机".
_INTENT = re.compile(r"(?:我|很|还|也)?想(?:要|去|换|买|做|当|学)|打算|希望|计划|准备|考虑|要是|如果|"
                     r"\b(?:want|wants|wanted|plan|plans|hope|hoping|would|"
                     r"wish|thinking|might|(?-i:may)|if|maybe|someday|dream)\b", re.I)
_DEVICES = (
    ("phone", r"手机|iphone|android|\bphone\b|smartphone|pixel|galaxy"),
    ("laptop", r"笔记本|电脑|laptop|macbook|thinkpad|notebook|computer|\bpc\b"),
    ("tablet", r"平板|ipad|kindle|tablet|e-?reader|阅读器"),
    ("car", r"汽车|开的车|\bcar\b|特斯拉|tesla"),
    ("watch", r"手表|\b(?:my|smart|apple) ?watch\b"),
)
_BRANDS_ZH = r"华为|小米|苹果|联想|三星|荣耀|魅族|一加|戴尔|惠普|华硕|宏碁|比亚迪|特斯拉|蔚来|理想|小鹏|大众|丰田|本田"
_BRAND = re.compile(rf"{_BRANDS_ZH}|(?<![A-Za-z])[A-Za-z]*[A-Z][A-Za-z0-9]*(?:\s+(?:Pro|Air|Max|Plus|\d+))?")
_ACTIVITIES = (
    ("sleep", r"睡|\bbed\b|\bsleep"),
    ("wake", r"起床|醒|\bwake|\bget up|\bgets up"),
    ("run", r"跑步|\brun(?:s|ning)?\b|\bjog"),
    ("gym", r"健身|\bgym\b|\bwork ?out"),
    ("work", r"上班|下班|\bwork(?:s)? (?:from|until|starts)|\bshift"),
)
_LESSON = re.compile(r"(?:上|去|的)?([\u4e00-\u9fff]{1,2})课|\b([a-z]+) (?:lessons?|class(?:es)?|practice|sessions?)\b",
                     re.I)
_TIMES = re.compile(
    r"(?:每天|每周|每个?星期|周|星期)[一二三四五六日天末]?|早上|上午|中午|下午|傍晚|晚上|凌晨|半夜|"
    r"[零一二两三四五六七八九十\d]{1,3}点(?:半|[零一二三四五六七八九十\d]{1,3}分?)?|"
    r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)?(?=\W|$)|\b(?:mornings?|evenings?|afternoons?|"
    r"nights?|noon|midnight|weekends?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b", re.I)
_DIET = (
    ("meat", r"肉|荤|素|吃[^，。,.！!]{0,3}(?:鱼|鸡|牛|猪|羊|海鲜)|meat|vegetarian|vegan|plant-based|pescatarian|"
             r"\beat(?:s|ing)?\b[^,.;!]{0,20}\b(?:fish|chicken|beef|pork|seafood)\b"),
    ("drink", r"喝|咖啡|奶茶|牛奶|豆浆|可乐|饮料|\bdrinks?\b|coffee|\btea\b|milk|soda|juice"),
    ("alcohol", r"酒|alcohol|beer|wine|drinking"),
    ("spicy", r"辣|spicy"),
    ("sugar", r"糖|甜食|sugar|sweets|dessert"),
    ("gluten", r"面食|麸质|gluten|bread"),
    ("tobacco", r"(?:抽|吸|戒)[^，。,.！!]{0,3}烟|香烟|烟瘾|cigarettes?|\bsmok(?:e|es|ed|ing|er)\b"
                r"|\bvap(?:e|es|ed|ing)\b"),
)
_HEALTH = (
    ("blood pressure", r"血压|blood pressure"), ("blood sugar", r"血糖|blood sugar|diabet"),
    ("knee", r"膝盖|\bknees?\b"), ("ankle", r"脚踝|脚腕|\bankles?\b"), ("back", r"腰|\bback pain|\bmy back\b"),
    ("heart", r"心脏|\bheart\b"), ("stomach", r"胃|stomach"), ("allergy", r"过敏|allerg"),
    ("sleep", r"失眠|insomnia"), ("weight", r"体重|减肥|weight"), ("cold", r"感冒|发烧|\bflu\b|\bcold\b|fever"),
)


@dataclass(frozen=True)
class FrameFact:
    key: str
    value: str
    strong: bool
    """The statement says the value changed ("换了", "switched", "healed")."""
    weak: bool
    """The statement says it is the current state ("现在", "these days")."""
    named: bool = False
    """The value is what the statement names (brands, times), not the statement itself."""


def _first(table: tuple[tuple[str, str], ...], text: str) -> list[str]:
    return [name for name, pattern in _compiled(table) if pattern.search(text)]


@cache  # the tables above, compiled once: `re`'s own cache lookup per pattern and clause was a third of the work
def _compiled(table: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(pattern, re.I)) for name, pattern in table)


def _brands(text: str, subject: str) -> str:
    skip = {subject.casefold(), "i", "my", "the", "a", "an", "am", "pm"}
    found = {m.group(0).casefold() for m in _BRAND.finditer(text)}
    # A sentence's first word is capitalised for grammar, not because it names a product.
    first = re.match(r"\s*([A-Z][a-z]+)\b", text)
    return " ".join(sorted(b for b in found if b not in skip and not (first and b == first.group(1).casefold())))


def frame_facts(text: str, subject: str) -> list[FrameFact]:
    """The frames one statement fills about the subject itself (none when it names somebody else or the
    person addressed), clause by clause: a frame and its cue must share a clause, so a long chatty turn does
    not lend "changed" from one topic to another."""
    # A speaker's label goes ("Tom: …"); the colon of a clock time ("晚上 22:30") is not one.
    body = unicodedata.normalize("NFKC", re.sub(r"^\s*[^:：\n]{1,24}(?<!\d)[:：]\s*", "", text))
    if _OTHERS.search(body):
        return []
    found: dict[str, FrameFact] = {}
    before = False  # "我戒掉了可乐，现在只喝白开水": the cue of the clause just before counts too
    for clause in re.split(r"[,，;；]", body):
        for fact in _clause_facts(clause, subject):
            if before and not fact.strong:
                fact = FrameFact(fact.key, fact.value, True, fact.weak, fact.named)
            # "我换工作了，现在在一家药企做临床监查员": the clause that says it changed speaks for the frame.
            if fact.key in found and found[fact.key].strong and not fact.strong:
                continue
            found.pop(fact.key, None)
            found[fact.key] = fact
        before = bool(_STRONG.search(clause)) and not _INTENT.search(clause)
    return list(found.values())


def _job(body: str) -> str | None:
    """The job noun a clause names ("" for a job change without one: "辞职了", "I quit my job"), None for no job."""
    zh = _JOB_ZH.search(body)
    if zh:
        return zh.group("noun") or ""
    for match in _JOB_EN.finditer(body):
        words = match.group(0).casefold().split()
        if not _TRAIT.search(match.group(0)):
            named = re.match(r"(?:work|i'?m|i am|became|become|training|job|career)", match.group(0).casefold())
            noun = words[-1] if named else ""
            return noun
    return None


def _clause_facts(body: str, subject: str) -> list[FrameFact]:
    if _INTENT.search(body):
        return []
    strong, weak = bool(_STRONG.search(body)), bool(_WEAK.search(body))
    out: list[FrameFact] = []
    plain = re.sub(r"\s+", " ", body.casefold()).strip(" .。!！")
    if not strong and _NOW_SO.search(body):  # "我现在能吃辣了", "我不喝咖啡了": … 了 says the state changed
        strong = True
    job = _job(body)
    if job is not None:  # the job noun named ("护士", "teacher"): "现在是一名程序员" replaces it; a change verb alone
        out.append(FrameFact("job", job or plain, strong, weak, named=bool(job)))  # ("辞职了") replaces any
    for kind in _first(_DEVICES, body)[:1]:
        brands = _brands(body, subject)
        if brands:
            out.append(FrameFact(f"device:{kind}", brands, strong, weak, named=True))
    times = " ".join(sorted({m.group(0).casefold().strip() for m in _TIMES.finditer(body)} - {""}))
    if times:
        activities = _first(_ACTIVITIES, body)
        activities += [(m.group(1) or m.group(2)).casefold() for m in _LESSON.finditer(body)]
        keys = [f"schedule:{a}" for a in dict.fromkeys(activities)] or _habit(body, subject)
        out += [FrameFact(k, times, strong, weak, named=True) for k in keys]
    out += [FrameFact(f"diet:{g}", plain, strong, weak) for g in _first(_DIET, body)[:1]]
    out += [FrameFact(f"health:{p}", plain, strong, weak) for p in _first(_HEALTH, body)[:1]]
    return out


# What a statement of a timed habit says besides its times and its cue: "晚上 22:30 以后不要推送通知" and
# "改成晚上 23:00 以后不要推送通知" are one habit ("以后不要推送通知") with two times. Cue words take their
# particles with them ("改成", "换到"), so the change itself does not make the habit another one.
_CUE = re.compile(rf"(?:{_STRONG.pattern}|{_WEAK.pattern})(?:成|为|到|了|在)*|\b(?:to|at|from|instead)\b", re.I)


def _habit(body: str, subject: str) -> list[str]:
    """The habit a timed statement names when no activity of the table does (at least four letters of it, or
    it names nothing that could be told apart from another habit)."""
    text = body.casefold()
    if subject:
        text = text.replace(subject.casefold(), " ")
    rest = _CUE.sub(" ", _TIMES.sub(" ", text))
    rest = re.sub(r"[了啦吧呢_]", "", "".join(re.findall(r"[\w\u4e00-\u9fff]+", rest)))  # particles say no habit
    return [f"habit:{rest}"] if len(rest) >= 4 and not rest.isdigit() else []


def _same_frame(a: str, b: str) -> bool:
    """One frame: the same key, or two habits of which one names the other ("钢琴陪练" / "我上钢琴陪练")."""
    if a == b:
        return True
    return a.startswith("habit:") and b.startswith("habit:") and (a[6:] in b[6:] or b[6:] in a[6:])


def frame_conflict(old: FrameFact, new: FrameFact) -> bool:
    """The newer statement of the same frame replaces the older one: it says it changed, or (for a named value:
    brands, times) says it is the current state with another value. A statement without a cue ("I drink tea")
    may be one more habit beside the old one, so it replaces nothing."""
    if not _same_frame(old.key, new.key) or old.value == new.value:
        return False
    return new.strong or (new.weak and new.named)
