"""Study subjects' personal data is pseudonymised before any LLM: stable placeholders per project, the mapping
kept in the database only, staff roles and names kept, a policy setting naming the families."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronicle.redaction.pseudonyms import Pseudonyms


@pytest.mark.parametrize(("text", "value", "placeholder"), [
    ("受试者 XH201-01-003（张建国，男，67岁，高血压）今日入组", "张建国", "[受试者姓名-1]"),
    ("筛选：陈文斌，XH305-02-011，签署知情同意", "陈文斌", "[受试者姓名-1]"),
    ("XH201-04-027 患者郑秀英因发热急诊入院", "郑秀英", "[受试者姓名-1]"),
    ("Subject XH201-01-005 (Charles Lindqvist, 58 y) completed visit 4", "Charles Lindqvist", "[受试者姓名-1]"),
    ("patient Margaret Okafor called about dosing", "Margaret Okafor", "[受试者姓名-1]"),
    ("受试者身份证 1101 0119 9003 0745 78（校验位不对也照样是证件号）", "1101 0119 9003 0745 78", "[身份证号-1]"),
    ("ID card no. 310104198507121234", "310104198507121234", "[身份证号-1]"),
    ("护照号 E53917264 已复印", "E53917264", "[护照号-1]"),
    ("passport no: G89078487", "G89078487", "[护照号-1]"),
    ("现住址：上海市徐汇区漕溪北路118号3栋1201室", "漕溪北路118号", "[住址-1]"),
    ("home address: 190 Chestnut Street", "190 Chestnut Street", "[住址-1]"),
    ("家属电话 139 1234 5678，白天可联系", "139 1234 5678", "[电话-1]"),
    ("call her back on +86 13812345678", "13812345678", "[电话-1]"),
    # a name beside the subject's id, sex and age; a compound surname; a relative's name
    ("XH201-02-005 王淑芬 女 58岁 筛选失败", "王淑芬", "[受试者姓名-1]"),
    ("受试者 欧阳娜娜 出现 2 级皮疹", "欧阳娜娜", "[受试者姓名-1]"),
    ("受试者的女儿赵丽丽来电询问随访安排", "赵丽丽", "[受试者姓名-1]"),
    # a labelled identifier, whatever its shape: hospital and insurance numbers, birth dates, chat accounts
    ("受试者住院号 0012345，已出院", "0012345", "[病历号-1]"),
    ("病案号：BA2023-0098", "BA2023-0098", "[病历号-1]"),
    ("XH201-01-007 的医保卡号 1100 2345 6789 0123", "1100 2345 6789 0123", "[病历号-1]"),
    ("MRN: A-2023-98 admitted overnight", "A-2023-98", "[病历号-1]"),
    ("受试者生日 1957-03-12", "1957-03-12", "[出生日期-1]"),
    ("出生日期：1957年3月12日", "1957年3月12日", "[出生日期-1]"),
    ("DOB: 03/12/1957", "03/12/1957", "[出生日期-1]"),
    ("born on 12 March 1957 in Wuxi", "12 March 1957", "[出生日期-1]"),
    ("受试者的微信号 zhangjianguo1957", "zhangjianguo1957", "[联系账号-1]"),
    ("家属 QQ 123456789", "123456789", "[联系账号-1]"),
])
def test_each_family_becomes_its_placeholder(text: str, value: str, placeholder: str) -> None:
    out = Pseudonyms().apply(text)
    assert value not in out and placeholder in out, out


def test_placeholders_are_stable_per_project_and_applying_twice_changes_nothing() -> None:
    names = Pseudonyms()
    first = names.apply("受试者 XH201-01-003（张建国，男，67岁）；受试者 XH201-01-004（李秀英，女，52岁）")
    again = names.apply("XH201-01-004 患者李秀英 复诊；患者张建国 用药依从")
    assert "[受试者姓名-1]" in first and "[受试者姓名-2]" in first
    assert again.index("[受试者姓名-2]") < again.index("[受试者姓名-1]")  # who is who, across entries
    assert names.apply(first) == first
    restored = Pseudonyms(dict(names.known))
    assert restored.apply("患者李秀英 出院") == "患者[受试者姓名-2] 出院" and not restored.new


@pytest.mark.parametrize("text", [
    "PI-李建国 确认 AE；CRC-王敏 已录入 EDC", "CRC 王敏 与 PI 李建国 讨论了 XH201-01-003 的访视窗口",
    "医学监查-周涛：安全性数据已核对", "XH305-01-001 C3D1 安全性实验室检查漏采血，已安排补采并记录偏离",
    "不确定的数字宁可写待核实", "受试者 XH201-01-003 于 2026-03-12 10:30 完成 C1D1",
    "受试者于今日出院", "患者于昨日入院，家属表示理解", "受试者母亲陪同来访", "XH201-01-003 入组 女性",
    "the patient was born in Shanghai", "生日快乐", "XH201-01-003 女 58岁",
])
def test_staff_roles_and_ordinary_words_stay(text: str) -> None:
    assert Pseudonyms().apply(text) == text


def test_the_policy_names_the_families() -> None:
    only_ids = Pseudonyms(families=("resident_id",))
    out = only_ids.apply("受试者 XH201-01-003（张建国，男），身份证 1101 0119 9003 0745 78")
    assert "张建国" in out and "[身份证号-1]" in out


def test_the_sample_trial_loses_no_word(sample_dir: Path) -> None:
    """The sample's logs name no subject: pseudonymising them changes nothing (no false names)."""
    names = Pseudonyms()
    for path in sample_dir.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines()[:400]:
            content = json.loads(line).get("content", "")
            assert names.apply(content) == content


def test_the_week_shown_to_the_llm_is_pseudonymised_and_the_mapping_stays_in_the_database(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.services.weekly import read_week
    from chronicle.settings import Settings
    from chronicle.weeks import IsoWeek

    log = tmp_path / "in" / "trial.jsonl"
    log.parent.mkdir()
    lines = ["受试者 XH201-01-003（张建国，男，67岁）入组", "XH201-01-003 患者张建国 C1D1 给药",
             "护照号 E53917264，家属电话 139 1234 5678"]
    log.write_text("".join(json.dumps({"project_id": "PSN", "ts": f"2026-03-0{2 + i}T10:00:00+08:00",
                                       "actor": "CRC-王敏", "type": "message", "content": c},
                                      ensure_ascii=False) + "\n" for i, c in enumerate(lines)), encoding="utf-8")
    settings = Settings()
    ingest_logs([str(log)])
    week, _ = read_week(settings, "PSN", IsoWeek.parse("2026-W10"))
    shown = "\n".join(e.content for e in week.entries)
    assert "张建国" not in shown and "E53917264" not in shown and "139 1234 5678" not in shown
    assert shown.count("[受试者姓名-1]") == 2 and "[护照号-1]" in shown and "[电话-1]" in shown
    assert {e.actor for e in week.entries} == {"CRC-王敏"}  # staff keep their role and name
    again, _ = read_week(settings, "PSN", IsoWeek.parse("2026-W10"))
    assert [e.content for e in again.entries] == [e.content for e in week.entries]  # idempotent
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        rows = conn.execute("SELECT family, value, placeholder FROM pseudonyms WHERE project_id = 'PSN' "
                            "ORDER BY family").fetchall()
    assert rows == [("name", "张建国", "[受试者姓名-1]"), ("passport", "E53917264", "[护照号-1]"),
                    ("phone", "139 1234 5678", "[电话-1]")]
    monkeypatch.setenv("CHRONICLE_PSEUDONYMISE_FAMILIES", '["passport"]')
    policy, _ = read_week(Settings(), "PSN", IsoWeek.parse("2026-W10"))
    assert "张建国" in policy.entries[0].content and "[REDACTED:phone]" in policy.entries[2].content
