"""bench/redaction_heldout: the held-out half of the redaction corpus, generated from templates.

The hand-written corpus (`tests/data/redaction/corpus.jsonl`) is the half the rules were tuned on. This module
writes the other half, `tests/data/redaction/heldout.jsonl`, by crossing families × phrasings × languages ×
separators × line breaks × the value's position in its clause, with values drawn from a seeded RNG. Its output
was frozen (generated and committed) before the redactor was tuned for the families it covers, so its scores
are first-contact scores; regenerate only with a new seed and say so (`python -m bench.redaction_heldout
--write`). `bench/redaction.py` scores both halves.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "redaction" / "heldout.jsonl"
SEED = 3602
PER_FAMILY = 14

_AL = string.ascii_letters + string.digits


def _rand(rng: random.Random, n: int, alphabet: str = _AL) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        mixed = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
        if not mixed or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
            return value


def _b64url(rng: random.Random, n: int) -> str:
    return _rand(rng, n, _AL + "-_")


_SEPS = (": ", "：", "=", " is ", " 是 ", " -> ", " was set to ", "为")
_BREAKS = ("", "\n", "\n  ", "\n- ")
_WORDS_ZH = ("红豆", "飞鸟", "青山", "月光", "石榴", "长江", "白马", "星河", "松鼠", "雪梨", "海棠", "火车")
_ACTORS = ("[2026-04-0{d} 09:1{m}] ops-bot: ", "CRC 小组 {d}/{m}：", "", "- ", "> ")


def _prefix(rng: random.Random) -> str:
    return rng.choice(_ACTORS).format(d=rng.randint(1, 9), m=rng.randint(0, 9))


# --- value makers --------------------------------------------------------------------------------------
def _cloud(rng: random.Random) -> tuple[str, str]:
    vendor, value = rng.choice([
        ("Aliyun AccessKeySecret", _rand(rng, 30)), ("腾讯云 SecretKey", _rand(rng, 32)),
        ("华为云 SK", _rand(rng, 40)), ("Azure storage account key", _rand(rng, 86, _AL + "+/") + "=="),
        ("七牛 SecretKey", _b64url(rng, 40)), ("火山引擎 SecretAccessKey", _rand(rng, 44, _AL + "+/") + "==")])
    return vendor, value


def _webhook(rng: random.Random) -> tuple[str, str]:
    hexs = "0123456789abcdef"
    uuid = "-".join(_rand(rng, n, hexs) for n in (8, 4, 4, 4, 12))
    host, secret = rng.choice([
        ("https://open.feishu.cn/open-apis/bot/v2/hook/", uuid),
        ("https://open.larksuite.com/open-apis/bot/v2/hook/", uuid),
        ("https://oapi.dingtalk.com/robot/send?access_token=", _rand(rng, 64, hexs)),
        ("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=", uuid),
        ("https://hooks.slack.com/services/", f"T{_rand(rng, 8, string.ascii_uppercase + string.digits)}/"
                                             f"B{_rand(rng, 10, string.ascii_uppercase + string.digits)}/"
                                             f"{_rand(rng, 24)}"),
        ("https://chat.googleapis.com/v1/spaces/AAAA1234/messages?key=", _b64url(rng, 39))])
    return host, secret


def _otp(rng: random.Random) -> str:
    return _rand(rng, 6, string.digits)


def _wallet(rng: random.Random) -> str:
    return "0x" + _rand(rng, 64, "0123456789abcdef" + ("ABCDEF" if rng.random() < .3 else ""))


def _jwt(rng: random.Random) -> str:
    head = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps({"sub": rng.randint(1, 9999), "role": "svc"}).encode()).decode()
    return f"{head}.{body.rstrip('=')}.{_b64url(rng, 43)}"


def _b64_password(rng: random.Random) -> str:
    inner = rng.choice([f"password={_rand(rng, 10)}", f"admin:{_rand(rng, 12)}", f"pwd={_rand(rng, 9)}!",
                        f"{{\"passwd\": \"{_rand(rng, 11)}\"}}"])
    return base64.b64encode(inner.encode()).decode()


def _smtp(rng: random.Random) -> str:
    return _rand(rng, 16, string.ascii_lowercase)


def _passphrase_zh(rng: random.Random) -> str:
    return "".join(rng.sample(_WORDS_ZH, rng.choice((2, 3))))


def _mnemonic(rng: random.Random) -> str:
    from mnemonic import Mnemonic

    return " ".join(rng.choice(Mnemonic("english").wordlist) for _ in range(rng.choice((12, 12, 15, 24))))


def _password(rng: random.Random) -> str:
    return rng.choice([_rand(rng, rng.randint(8, 14)), _rand(rng, 6) + rng.choice("!@#%&*") + _rand(rng, 3),
                       rng.choice(("Spring", "Tiger", "Lotus", "Panda")) + str(rng.randint(1000, 9999))])


def _cn_name(rng: random.Random) -> str:
    return rng.choice("王李张刘陈杨赵黄周吴徐孙马胡郭何高林罗郑") + rng.choice(
        ("秀英", "志强", "海燕", "国华", "建平", "丽娟", "德明", "玉兰", "文斌", "春梅", "永红", "立新"))


def _en_name(rng: random.Random) -> str:
    return (rng.choice(("Margaret", "Robert", "Linda", "Thomas", "Susan", "Charles", "Helen", "George"))
            + " " + rng.choice(("Whitfield", "Okafor", "Lindqvist", "Harrington", "Mendes", "Kowalski")))


def _sid(rng: random.Random) -> str:
    return f"XH{rng.choice((201, 305))}-{rng.randint(1, 4):02d}-{rng.randint(1, 40):03d}"


def _grouped_id(rng: random.Random) -> str:
    digits = f"{rng.choice((110101, 310104, 440305, 510107))}{rng.randint(1950, 2005)}" \
             f"{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 999):03d}{rng.randint(0, 9)}"
    return " ".join(digits[i:i + 4] for i in range(0, 18, 4))


def _passport(rng: random.Random) -> str:
    return rng.choice("EGDP") + _rand(rng, 8, string.digits)


def _address(rng: random.Random) -> str:
    return rng.choice([
        f"{rng.choice(('上海市徐汇区', '北京市海淀区', '广州市天河区', '成都市武侯区'))}"
        f"{rng.choice(('漕溪北路', '中关村大街', '体育西路', '人民南路'))}{rng.randint(1, 300)}号"
        f"{rng.randint(1, 30)}栋{rng.randint(101, 2505)}室",
        f"{rng.randint(10, 990)} {rng.choice(('Maple', 'Oak', 'Harbor', 'Chestnut'))} "
        f"{rng.choice(('Street', 'Avenue', 'Road', 'Lane'))}"])


def _phone(rng: random.Random) -> str:
    n = f"1{rng.choice('3589')}{_rand(rng, 9, string.digits)}"
    return rng.choice((n, f"{n[:3]} {n[3:7]} {n[7:]}", f"{n[:3]}-{n[3:7]}-{n[7:]}", f"+86 {n}"))


# --- templates per family: (text, [(kind, value)]) -------------------------------------------------------
def _t_cloud(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    label, value = _cloud(rng)
    form = rng.choice([f"{label}{rng.choice(_SEPS)}{value}", f"新的{label}：{rng.choice(_BREAKS)}{value}",
                       f"rotated the {label} today, it now reads {value} (old one revoked)",
                       f"{value} ← {label}，别外传"])
    return _prefix(rng) + form, [("secret", value)]


def _t_webhook(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    host, secret = _webhook(rng)
    form = rng.choice(["告警推送到 {u} 了", "notify: {u}", "curl -X POST '{u}' -d @msg.json",
                       "机器人地址 {u}，测试通过"])
    return _prefix(rng) + form.format(u=host + secret), [("webhook", secret)]


def _t_otp(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    code = _otp(rng)
    form = rng.choice([f"短信验证码 {code}，五分钟内有效", f"刚收到的验证码是：{code}", f"{code} 是登录验证码",
                       f"your verification code: {code}", f"OTP for the portal {code}",
                       f"验证码{rng.choice(_BREAKS)}{code}"])
    return _prefix(rng) + form, [("pin", code)]


def _t_wallet(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    key = _wallet(rng)
    form = rng.choice([f"测试链钱包私钥 {key}", f"import this into metamask: {key}", f"{key}", f"PRIV={key}",
                       f"the deployer key ->{rng.choice(_BREAKS)}{key}"])
    return _prefix(rng) + form, [("secret", key)]


def _t_pem(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    body = _rand(rng, 64, _AL + "+/")
    kind = rng.choice(("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"))
    sep = rng.choice(("\n", "\n[2026-04-02 10:01] deploy: ", "\n- ", "\n\n"))
    return f"{_prefix(rng)}贴一下 key：-----BEGIN {kind}-----{sep}{body}", [("private_key", body)]


def _t_next_line(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    pw = _password(rng)
    noun = rng.choice(("测试库密码", "the vpn passphrase", "堡垒机口令", "Jenkins admin password", "路由器管理密码"))
    brk = rng.choice(("\n", "\n[2026-04-03 14:22] 王工: ", "\n  ", "\n- "))
    lead = rng.choice(("", "新的", "updated ", "记一下"))
    return f"{_prefix(rng)}{lead}{noun}{rng.choice(('', '：', ' below', '如下'))}{brk}{pw}", [("password", pw)]


def _t_jwt_split(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    token = _jwt(rng)
    cut = rng.randint(20, len(token) - 20)
    form = rng.choice(["session cookie was {a}\n{b}", "接口返回 {a}\n{b} 然后 401", "{a}\n{b}"])
    return _prefix(rng) + form.format(a=token[:cut], b=token[cut:]), [("jwt", token[:cut]), ("jwt", token[cut:])]


def _t_presigned(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    sig = _rand(rng, 64, "0123456789abcdef")
    oss = _rand(rng, 28, _AL + "+/") + "="
    url, value = rng.choice([
        (f"https://bucket.s3.amazonaws.com/reports/w14.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260402T0"
         f"10203Z&X-Amz-Expires=3600&X-Amz-Signature={sig}", sig),
        (f"https://trial.oss-cn-hangzhou.aliyuncs.com/crf.zip?Expires=1775000000&OSSAccessKeyId=LTAI5tQ"
         f"&Signature={oss}", oss),
        (f"https://cdn.example.org/a.mp4?sv=2024-01-01&sig={sig[:43]}", sig[:43])])
    return _prefix(rng) + rng.choice(("下载链接 {u}", "presigned: {u}", "{u} (24h)")).format(u=url), [("secret", value)]


def _t_b64(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    blob = _b64_password(rng)
    form = rng.choice([f"config blob {blob}", f"环境变量里是 {blob}", f"X-Creds: {blob}", f"{blob}"])
    return _prefix(rng) + form, [("secret", blob)]


def _t_smtp(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    code = _smtp(rng)
    form = rng.choice([f"QQ邮箱 SMTP 授权码 {code}", f"163 邮箱的授权码：{code}", f"{code} 是邮箱授权码",
                       f"smtp app password {code}", f"授权码{rng.choice(_BREAKS)}{code}"])
    return _prefix(rng) + form, [("secret", code)]


def _t_passphrase_zh(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    words = _passphrase_zh(rng)
    form = rng.choice([f"今晚的口令：{words}", f"接头暗号为 {words}", f"{words} 是门禁口令", f"口令改成了{words}"])
    return _prefix(rng) + form, [("password", words)]


def _t_mnemonic(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    phrase = _mnemonic(rng)
    form = rng.choice([f"seed words: {phrase}", f"助记词 {phrase}", f"{phrase}", f"备份一下\n{phrase}"])
    return _prefix(rng) + form, [("secret", w) for w in phrase.split()[:3]]


def _t_prose_pw(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    pw = _password(rng)
    thing = rng.choice(("the shared drive", "our test MySQL", "the CI runner", "冷库监控平台", "打印机后台"))
    form = rng.choice([f"The login password used for {thing} has become {pw}",
                       f"for {thing}, the password we agreed on is {pw}",
                       f"{pw} is the new passcode of {thing}",
                       f"{thing}的登录密码已经改为 {pw}",
                       f"{pw} 就是{thing}现在的密码",
                       f"PIN of {thing}, as of today: {pw}",
                       f"{thing} secret now{rng.choice(_BREAKS)} = {pw}"])
    return _prefix(rng) + form, [("password", pw)]


def _t_subject(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    sid, age = _sid(rng), rng.randint(30, 80)
    if rng.random() < .6:
        name = _cn_name(rng)
        form = rng.choice([f"受试者 {sid}（{name}，女，{age}岁）今日完成 C2D1 访视",
                           f"{sid} 患者{name}因发热急诊入院", f"筛选：{name}，{sid}，签署知情同意",
                           f"患者 {name} ({sid}) 出现 2 级皮疹"])
    else:
        name = _en_name(rng)
        form = rng.choice([f"Subject {sid} ({name}, {age} y) completed visit 4", f"patient {name} called about dosing",
                           f"{sid}: participant {name} withdrew consent"])
    return _prefix(rng) + form, [("person", name)]


def _t_ids(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    kind, value, form = rng.choice([
        ("cn_id", gid := _grouped_id(rng), rng.choice([f"身份证号 {gid}", f"证件号码：{gid}", f"ID card no. {gid}"])),
        ("passport", pp := _passport(rng), rng.choice([f"护照号 {pp}", f"passport no: {pp}", f"护照 {pp} 已复印"])),
        ("address", ad := _address(rng), rng.choice([f"家住 {ad}", f"home address: {ad}", f"现住址：{ad}"])),
        ("phone", ph := _phone(rng), rng.choice([f"家属电话 {ph}", f"call her back on {ph}", f"联系方式：{ph}"]))])
    return _prefix(rng) + form, [(kind, value)]


FAMILIES: dict[str, Callable[[random.Random], tuple[str, list[tuple[str, str]]]]] = {
    "cloud_secret": _t_cloud, "webhook_host": _t_webhook, "otp_code": _t_otp, "wallet_key": _t_wallet,
    "pem_split": _t_pem, "value_next_line": _t_next_line, "jwt_split": _t_jwt_split, "presigned_url": _t_presigned,
    "base64_wrapped": _t_b64, "smtp_code": _t_smtp, "passphrase_zh": _t_passphrase_zh, "recovery_phrase": _t_mnemonic,
    "clause_password": _t_prose_pw, "subject_name": _t_subject, "personal_ids": _t_ids,
}


# --- negatives: declared-safe shapes and ordinary writing that looks close ---------------------------------
def _negative(rng: random.Random) -> str:
    sha = _rand(rng, 40, "0123456789abcdef")
    return rng.choice([
        f"受试者 {_sid(rng)} 于 2026-04-0{rng.randint(1, 9)} 10:{rng.randint(10, 59)} 完成 C{rng.randint(1, 9)}D1",
        f"AE：{_sid(rng)} 中性粒细胞减少 CTCAE {rng.randint(1, 4)} 级，已通知 PI",
        f"批号 LOT-{rng.randint(2024, 2026)}{rng.randint(100, 999)}-{rng.randint(1, 9)} 入库 {rng.randint(10, 99)} 盒",
        f"merged {sha[:7]} into main (fix flaky test)", f"commit {sha}",
        f"upgraded prefect to {rng.randint(2, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}",
        "the password policy requires 12 characters", "请 CRC 重置 EDC 密码后通知 DM",
        "token budget exceeded, retry tomorrow", "密钥轮换流程见 SOP-07 第 3 节",
        f"visit window {rng.randint(1, 28)}/{rng.randint(1, 12)} - {rng.randint(1, 28)}/{rng.randint(1, 12)}",
        "PI 王主任 签字确认，CRC 小李 已录入", f"ECOG {rng.randint(0, 2)}，体重 {rng.randint(45, 90)} kg",
        "Remember to rotate the key before Friday", "验证码发不出来，已联系运维",
        f"request id 7f3a-{rng.randint(1000, 9999)} timed out after 30s",
        f"Caroline went to the LGBTQ support group on {rng.randint(1, 28)} May 2023",
        "我今天去超市买了苹果和牛奶，顺便给妈妈打了电话"])


def generate(seed: int = SEED, per_family: int = PER_FAMILY) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for name, make in FAMILIES.items():
        for _ in range(per_family):
            text, secrets = make(rng)
            rows.append({"text": text, "secrets": [list(s) for s in secrets], "family": name, "half": "heldout"})
    negatives = {_negative(rng) for _ in range(per_family * 8)}
    rows += [{"text": t, "secrets": [], "family": "safe_shapes", "half": "heldout"} for t in sorted(negatives)]
    return rows


def main(argv: list[str]) -> None:
    rows = generate()
    if "--write" in argv:
        OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {len(rows)} examples to {OUT}")
    else:
        for row in rows[:: max(1, len(rows) // 20)]:
            print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
