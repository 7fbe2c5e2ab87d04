"""Redaction fails closed: credential-like tokens whatever their label, secret nouns scoping their clause,
values carried to the next line or entry — and the declared-safe shapes still readable."""

from __future__ import annotations

import base64

import pytest

from chronicle.redaction.redactor import Redactor, split_secret_markers
from chronicle.redaction.tokens import SafeShapes

R = Redactor.build()


def _hidden(text: str, *values: str) -> None:
    out = R.redact(text)
    for value in values:
        assert value not in out, (text, out)
    assert "[REDACTED:" in out


# --- tokens by their statistics, whatever label stands before them ---------------------------------------
@pytest.mark.parametrize(("text", "value"), [
    ("AccessKeySecret: 8fJk2LmNq4RsTuVwXyZaBcDeFgHi3j", "8fJk2LmNq4RsTuVwXyZaBcDeFgHi3j"),
    ("腾讯云 SK 换成了 Q7wErT9yUiOp2AsDfGh4JkLzXc6VbNm1 记得同步", "Q7wErT9yUiOp2AsDfGh4JkLzXc6VbNm1"),
    ("random config value kT3nV8qR2mW6xZ9pL4sB7dF1hJ5gC0yA in the yaml", "kT3nV8qR2mW6xZ9pL4sB7dF1hJ5gC0yA"),
    ("测试链钱包 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318 别用于主网",
     "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"),
    ("PRIV=0xAF3eF6d6bD7cFaD7fD6Cb6a8Aca3743e9baa0f59375f91FB159DC0E1CA5E0DB7",
     "AF3eF6d6bD7cFaD7fD6Cb6a8Aca3743e9baa0f59375f91FB159DC0E1CA5E0DB7"),
    (f"cfg {base64.b64encode(b'password=Winter2031x').decode()}", base64.b64encode(b"password=Winter2031x").decode()),
    (f"X-Creds: {base64.b64encode(b'deploy:Qz81mmLw02').decode()}", base64.b64encode(b"deploy:Qz81mmLw02").decode()),
    ("twilio SK0123456789abcdef0123456789abcdef done", "SK0123456789abcdef0123456789abcdef"),
])
def test_credential_like_tokens_are_hidden_whatever_their_label(text: str, value: str) -> None:
    _hidden(text, value)


# A key that names a folder or a file is judged alone, not diluted by the ordinary path around it.
@pytest.mark.parametrize(("path", "key"), [
    ("/home/clinic/projects/trial-alpha/exports/daily/{}/notes.md", "5d41402abc4b2a76b9719d911017c592"),
    ("/srv/share/site-office/monthly-reports/archive/backups/{}.tar.gz", "Zx8vQ2mN7pL4kR9sT1wY6uB3eH5jC0dF"),
    ("~/work/projects/trial/{}/export", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
])
def test_a_key_inside_a_path_is_hidden(path: str, key: str) -> None:
    _hidden(f"copied {path.format(key)} to the share", key)


def test_a_forty_hex_folder_is_a_key_where_commit_hashes_are_not_safe() -> None:
    text = "read /home/clinic/projects/trial-alpha/exports/3f786850e387550fdab836ed7e6dc881de23001b/notes.md"
    assert R.redact(text) == text
    assert "3f786850e387550fdab836ed7e6dc881de23001b" not in Redactor.build(
        safe=SafeShapes(commit_hashes=False)).redact(text)


def test_a_jwt_split_over_two_lines_is_hidden_in_both_halves() -> None:
    token = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsInJvbGUiOiJzdmMifQ."
             "q9Xk2mP0vL7rT4wZ8nB1cF6hJ3sD5gA0yE2uI9oK7lM")
    for cut in (20, 60, 100):
        _hidden(f"接口返回 {token[:cut]}\n{token[cut:]} 然后 401", token[:cut], token[cut:])


@pytest.mark.parametrize(("url", "secret"), [
    ("https://open.feishu.cn/open-apis/bot/v2/hook/2f9a8b7c-1d2e-4f3a-9b8c-7d6e5f4a3b2c",
     "2f9a8b7c-1d2e-4f3a-9b8c-7d6e5f4a3b2c"),
    ("https://open.larksuite.com/open-apis/bot/v2/hook/aa11bb22-cc33-dd44-ee55-ff6677889900",
     "aa11bb22-cc33-dd44-ee55-ff6677889900"),
    ("https://oapi.dingtalk.com/robot/send?access_token=" + "ab12" * 16, "ab12" * 16),
    ("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa",
     "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"),
    ("https://b.s3.amazonaws.com/w.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature="
     + "9f2c5b0a4e6d8c1b" * 4, "9f2c5b0a4e6d8c1b" * 4),
    ("https://t.oss-cn-hangzhou.aliyuncs.com/c.zip?Expires=1775000000&OSSAccessKeyId=LTAI5tQ&Signature=dELxiJKH38ff"
     "1e1NiDq9%2BZk%3D", "dELxiJKH38ff1e1NiDq9%2BZk%3D"),
    ("https://admin:Hunter2x@db.internal:5432/prod", "Hunter2x"),
])
def test_url_secrets_are_hidden_and_the_rest_of_the_url_stays(url: str, secret: str) -> None:
    out = R.redact(f"告警推送到 {url} 了")
    assert secret not in out and "[REDACTED:" in out
    assert out.split("://")[1].split("/")[0].split("@")[-1] in out  # the host stays readable


def test_a_pem_key_whose_body_is_the_next_log_entry_is_hidden() -> None:
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
    entries = [(1, "ops.log", 10, "贴一下 key：-----BEGIN RSA PRIVATE KEY-----"), (2, "ops.log", 11, body)]
    assert split_secret_markers(R, entries) == {2: "[REDACTED:private_key]"}
    assert body not in R.redact(body)  # alone, its statistics give it away too


@pytest.mark.parametrize("words", [
    "abandon ability able about above absent absorb abstract absurd abuse access accident",
    "legal winner thank year wave sausage worth useful legal winner thank yellow",
    "zoo zone youth young yellow year wrist wrong write wreck wrap worth wood wolf",
])
def test_a_recovery_phrase_is_hidden(words: str) -> None:
    out = R.redact(f"备份一下\n{words}\n别丢了")
    assert not any(w in out.split() for w in words.split()[:12])


# --- secret nouns scope a clause ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [
    ("The wifi password for the lab is Lab2024wifi", "Lab2024wifi"),
    ("the password for the staging db is stg-Db_88", "stg-Db_88"),
    ("The admin password of the router is now R0uter!x", "R0uter!x"),
    ("for our shared NAS, the passcode we agreed on became Nas_7741", "Nas_7741"),
    ("Blue42xyz 是新的 wifi 密码", "Blue42xyz"),
    ("Kk73O3@zt9 is the new passcode of the CI runner", "Kk73O3@zt9"),
    ("Xk29fLq! is the new passcode", "Xk29fLq"),  # a `!` and a blank end a clause: the value stands before them
    ("Hunter2? 是登录验证码", "Hunter2"),
    ("TEELOG2y 就是打印机后台现在的密码", "TEELOG2y"),
    ("口令是 老虎打飞机", "老虎打飞机"),
    ("今晚的接头暗号改成了青山石榴", "青山石榴"),
    ("长江雪梨 是门禁口令", "长江雪梨"),
    ("今天的验证码 837261", "837261"),
    ("短信校验码：402913，五分钟内有效", "402913"),
    ("your verification code: 550129", "550129"),
    ("QQ邮箱 SMTP 授权码 qwrtypsdfghjklzx", "qwrtypsdfghjklzx"),
    ("wyrbwzgscfyrkgam 是邮箱授权码", "wyrbwzgscfyrkgam"),
    ("163 邮箱的授权码：xbnmqwrtzpdfghkl", "xbnmqwrtzpdfghkl"),
])
def test_the_value_of_a_secret_clause_is_hidden_wherever_it_stands(text: str, value: str) -> None:
    _hidden(text, value)


@pytest.mark.parametrize(("first", "second"), [
    ("数据库密码", "Tiger#2024db"), ("wifi passphrase for the guests is", "GuestNet77"),
    ("堡垒机口令如下：", "XaVm2VdQJDy"), ("the CI runner secret now", "= Tiger4979"),
    ("新的 VPN token:", "s.9fK2mQ7xLp"), ("口令", "星河海棠"),
])
def test_a_clause_without_its_value_carries_to_the_next_line_and_entry(first: str, second: str) -> None:
    value = second.lstrip("= ")
    _hidden(f"{first}\n{second}", value)
    _hidden(f"[2026-04-03 09:15] ops-bot: {first}\n[2026-04-03 14:22] ops-bot: {second}", value)
    markers = split_secret_markers(R, [(1, "chat.log", 1, first), (2, "chat.log", 2, second)])
    assert 2 in markers or value not in R.redact(second)


# --- failing closed does not destroy ordinary writing ---------------------------------------------------
@pytest.mark.parametrize("text", [
    "受试者 XH201-01-003 于 2026-03-12 10:30 完成 C1D1，CTCAE 3 级中性粒细胞减少",
    "AE：XH305-01-004 皮疹 G2，已通知 PI 与 CRC",
    "批号 LOT-2026117-3 入库 40 盒，效期 2027-06",
    "merged 3f2a9c1 and e6df66213da98871b52d90a24cae413501926061 into main",
    "upgraded prefect to v3.4.12-rc1+build.5",
    "request 123e4567-e89b-12d3-a456-426614174000 failed; trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
    "the password is required", "密码是什么？", "the token count was 4096", "the key is to rest well",
    "the password policy requires 12 characters", "请 CRC 重置 EDC 密码后通知 DM", "密码\n请联系管理员重置",
    "token budget exceeded, retry tomorrow",
    "see sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "test_redaction_sink_canaries_for_every_sink2 passed", "secret santa list at docs/team/secret-santa-2026.md",
    "Caroline said the password was long and hard to remember",
])
def test_declared_safe_shapes_and_prose_stay(text: str) -> None:
    assert R.redact(text) == text


def test_the_subject_id_pattern_and_commit_hashes_are_settings() -> None:
    custom = Redactor.build(safe=SafeShapes(subject_id=r"PT-[A-Z0-9]{12}", commit_hashes=False))
    assert custom.redact("PT-AB12CD34EF56 visit") == "PT-AB12CD34EF56 visit"
    assert "e6df66213da98871b52d90a24cae413501926061" not in custom.redact(
        "commit e6df66213da98871b52d90a24cae413501926061")
