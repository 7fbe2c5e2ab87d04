"""The synthetic sample: deterministic, realistic enough, and its ground truth recounts from the files.

The recount below deliberately re-implements parsing and ISO-week bucketing with json/csv/tomllib/
zoneinfo only, so a bug in the generator's own bookkeeping cannot hide behind a shared helper.
"""

from __future__ import annotations

import csv
import json
import re
import tomllib
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from chronicle.sample import SampleManifest, generate_sample

SHANGHAI = ZoneInfo("Asia/Shanghai")
STANDARD = ("message", "enrollment", "ae", "sae", "deviation", "query", "decision")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleManifest:
    return generate_sample(tmp_path_factory.mktemp("sample") / "out")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _read_rows(out: Path) -> list[dict[str, str]]:
    column_map = tomllib.loads((out / "chronicle.toml").read_text(encoding="utf-8"))["column_map"]
    rows: list[dict[str, str]] = []
    for path in sorted((out / "logs").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line) | {"_file": path.name})
    for path in sorted((out / "logs").rglob("*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for record in csv.DictReader(fh):
                rows.append({column_map.get(k, k): v for k, v in record.items()} | {"_file": path.name})
    return rows


def _local(ts: str) -> datetime:
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return dt.replace(tzinfo=SHANGHAI) if dt.tzinfo is None else dt.astimezone(SHANGHAI)


def _week(ts: str) -> int:
    year, week, _ = _local(ts).isocalendar()
    return year * 100 + week


def _recount(rows: list[dict[str, str]]) -> dict[str, dict[str, dict[str, object]]]:
    per_project: dict[str, dict[int, list[dict[str, str]]]] = {}
    for row in rows:
        per_project.setdefault(row["project_id"], {}).setdefault(_week(row["ts"]), []).append(row)
    result: dict[str, dict[str, dict[str, object]]] = {}
    for project, weeks in per_project.items():
        out: dict[str, dict[str, object]] = {}
        total = 0
        monday = date.fromisocalendar(min(weeks) // 100, min(weeks) % 100, 1)
        stop = date.fromisocalendar(max(weeks) // 100, max(weeks) % 100, 1)
        while monday <= stop:
            iso = monday.isocalendar()
            key = iso[0] * 100 + iso[1]
            recs = weeks.get(key, [])
            types = Counter(r["type"] for r in recs)
            total += types["enrollment"]
            row: dict[str, object] = {"entries": len(recs), **{t: types[t] for t in STANDARD}}
            row.update({t: n for t, n in types.items() if t not in STANDARD})
            row.update(enrolled=types["enrollment"], enrolled_total=total,
                       by_actor=dict(Counter(r["actor"] for r in recs)))
            out[str(key)] = row
            monday += timedelta(days=7)
        result[project] = out
    return result


def test_deterministic_and_idempotent(tmp_path: Path, sample: SampleManifest) -> None:
    again = generate_sample(tmp_path / "a")
    assert _tree(again.out_dir) == _tree(sample.out_dir)
    generate_sample(tmp_path / "a")  # into the same dir: overwritten, not appended, no temp files left
    assert _tree(tmp_path / "a") == _tree(sample.out_dir)
    other = generate_sample(tmp_path / "b", seed=8)
    assert _tree(other.out_dir) != _tree(sample.out_dir)


def test_manifest(sample: SampleManifest) -> None:
    assert sample.projects == ("XH201", "XH305")
    assert sample.column_map == {"study": "project_id", "time": "ts", "user": "actor", "event": "type",
                                 "text": "content"}
    assert sample.ground_truth == sample.out_dir / "ground_truth.json"
    assert all(p.is_file() and p.is_relative_to(sample.out_dir) for p in sample.files)
    assert set(sample.files) == {p.resolve() for p in sample.out_dir.rglob("*") if p.is_file()}
    assert sample.first_week["XH201"] == 202510  # Monday 2025-03-03
    assert sample.first_week["XH305"] > sample.first_week["XH201"]
    assert "[column_map]" in sample.config.read_text(encoding="utf-8")


def test_period_and_size(sample: SampleManifest) -> None:
    truth = json.loads(sample.ground_truth.read_text(encoding="utf-8"))
    assert truth["timezone"] == "Asia/Shanghai"
    assert len(truth["projects"]) >= 2
    for project, data in truth["projects"].items():
        weeks = data["weeks"]
        assert len(weeks) >= 40, project
        assert list(weeks) == sorted(weeks, key=int)
        assert data["total_entries"] == sum(w["entries"] for w in weeks.values())
        assert len(data["sites"]) >= 3
        busy = [w["entries"] for w in weeks.values() if w["entries"]]
        assert 15 <= sorted(busy)[len(busy) // 2] <= 60  # a typical week
    assert {"202552", "202601"} <= set(truth["projects"]["XH201"]["weeks"])
    last = max(_local(r["ts"]) for r in _read_rows(sample.out_dir))
    assert last.date() < date(2026, 6, 1)


def test_ground_truth_recounts_from_files(sample: SampleManifest) -> None:
    truth = json.loads(sample.ground_truth.read_text(encoding="utf-8"))
    recount = _recount(_read_rows(sample.out_dir))
    assert set(recount) == set(truth["projects"])
    for project, weeks in recount.items():
        assert weeks == truth["projects"][project]["weeks"], project
    # Spring Festival silence: an all-zero week that still carries the cumulative enrolment.
    xh305 = truth["projects"]["XH305"]["weeks"]
    assert xh305["202608"]["entries"] == 0 and xh305["202608"]["by_actor"] == {}
    assert xh305["202608"]["enrolled_total"] == xh305["202607"]["enrolled_total"] > 0


def test_enrolment_ramps_plateaus_closes(sample: SampleManifest) -> None:
    truth = json.loads(sample.ground_truth.read_text(encoding="utf-8"))
    for data in truth["projects"].values():
        enrolled = [w["enrolled"] for w in data["weeks"].values()]
        assert enrolled[:2] == [0, 0] and enrolled[-4:] == [0, 0, 0, 0]
        assert sum(enrolled) == data["enrolled_total"] >= 40
        assert max(enrolled) >= 3


def test_ts_styles_and_sunday_edges(sample: SampleManifest) -> None:
    rows = _read_rows(sample.out_dir)
    styles = Counter(
        "Z" if r["ts"].endswith("Z") else "offset" if r["ts"].endswith("+08:00") else "naive" for r in rows
    )
    assert set(styles) == {"Z", "offset", "naive"}
    assert 0.05 < styles["Z"] / len(rows) < 0.2 and 0.05 < styles["naive"] / len(rows) < 0.2
    for project in sample.projects:
        mine = [r for r in rows if r["project_id"] == project]
        late = [r for r in mine if r["ts"].endswith("T23:30:00+08:00") and _local(r["ts"]).weekday() == 6]
        utc = [r for r in mine if r["ts"].endswith("T16:30:00Z")
               and datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).weekday() == 6]
        assert len(late) >= 40 and len(utc) >= 40, project
        for r in late:  # Sunday night local stays in the Sunday's ISO week
            assert _week(r["ts"]) == _week(r["ts"][:10] + "T12:00:00+08:00")
        for r in utc:  # Sunday 16:30Z is Monday 00:30 in Shanghai: the next ISO week
            assert _local(r["ts"]).weekday() == 0 and _local(r["ts"]).hour == 0
            sunday = r["ts"][:10] + "T12:00:00+08:00"
            assert _week(r["ts"]) != _week(sunday)


def test_realistic_chinese_content(sample: SampleManifest) -> None:
    rows = _read_rows(sample.out_dir)
    assert sum(bool(CJK.search(r["content"])) for r in rows) / len(rows) > 0.95
    types = Counter(r["type"] for r in rows)
    assert set(STANDARD) <= set(types) and {"visit", "monitoring"} <= set(types)
    assert types["message"] > types["enrollment"]
    actors = {r["actor"] for r in rows}
    for role in ("CRC-", "PI-", "CRA-", "DM-", "医学监查-"):
        assert any(a.startswith(role) for a in actors), role
    assert {"CRC-王敏", "PI-李建国", "CRA-陈静", "DM-赵磊", "医学监查-周涛"} <= actors
    teams = [{r["actor"] for r in rows if r["project_id"] == p} for p in sample.projects]
    assert not teams[0] & teams[1]
    subjects = [r["subject_id"] for r in rows if r["type"] == "enrollment"]
    assert len(subjects) == len(set(subjects))
    assert all(re.fullmatch(r"XH(201|305)-\d{2}-\d{3}", s) for s in subjects)
    deviations = " ".join(r["content"] for r in rows if r["type"] == "deviation")
    for kind in ("访视超窗", "漏采血", "知情同意版本错误", "入排标准违背"):
        assert kind in deviations
    decisions = " ".join(r["content"] for r in rows if r["type"] == "decision")
    assert "暂停" in decisions and "剂量" in decisions and "伦理" in decisions
    assert all("住院" in r["content"] for r in rows if r["type"] == "sae")
    assert all(1 <= int(r["grade"]) <= 5 for r in rows if r["type"] == "ae")
    # Monthly files hold their local month.
    for r in rows:
        if r["_file"].endswith(".jsonl"):
            assert r["_file"] == _local(r["ts"]).strftime("%Y-%m.jsonl")


def test_csv_export_uses_alternate_columns(sample: SampleManifest) -> None:
    path = sample.out_dir / "logs" / sample.csv_project / "edc_queries.csv"
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:5] == ["study", "time", "user", "event", "text"]
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) > 50 and {r["event"] for r in rows} == {"query"}
    assert {r["study"] for r in rows} == {sample.csv_project}
    jsonl = [r for r in _read_rows(sample.out_dir) if r["_file"].endswith(".jsonl")]
    assert not [r for r in jsonl if r["project_id"] == sample.csv_project and r["type"] == "query"]
    assert [r for r in jsonl if r["project_id"] != sample.csv_project and r["type"] == "query"]


def test_daily_notes(sample: SampleManifest) -> None:
    truth = json.loads(sample.ground_truth.read_text(encoding="utf-8"))
    memory = sample.out_dir / "memory"
    notes = sorted(memory.rglob("*.md"))
    assert 14 <= len(notes) <= 21 and truth["daily_notes"]["files"] == len(notes)
    names = [p.relative_to(memory).as_posix() for p in notes]
    assert sum(bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z-]+\.md", n)) for n in names) == 2
    assert sum(bool(re.fullmatch(r"daily/\d{4}-\d{2}-\d{2}\.md", n)) for n in names) == 1
    text = "\n".join(p.read_text(encoding="utf-8") for p in notes)
    assert text.count("\n## ") >= 3 * len(notes) and "\n- " in text and CJK.search(text)
    assert re.search(r"[A-Za-z]{4,} [A-Za-z]{4,}", text)  # mixed with English
    key, password = truth["daily_notes"]["canaries"]
    assert re.fullmatch(r"sk-demo[A-Za-z0-9]{32}", key) and key in text
    assert re.search(rf"^DB_PASSWORD={password}$", text, re.MULTILINE)
    assert "FAKE" in text
    dates = sorted(date.fromisoformat(n.split("/")[-1][:10]) for n in names)
    last_event = max(_local(r["ts"]).date() for r in _read_rows(sample.out_dir))
    assert timedelta(0) <= last_event - dates[-1] < timedelta(days=14)


def test_rerun_with_fewer_weeks_removes_stale_files(tmp_path: Path) -> None:
    generate_sample(tmp_path, weeks=56)
    small = generate_sample(tmp_path, weeks=20)
    assert {p.resolve() for p in tmp_path.rglob("*") if p.is_file()} == set(small.files)
    truth = json.loads(small.ground_truth.read_text(encoding="utf-8"))
    recount = _recount(_read_rows(tmp_path))
    assert all(recount[p] == truth["projects"][p]["weeks"] for p in small.projects)
    assert all(len(truth["projects"][p]["weeks"]) == 20 for p in small.projects)


def test_refuses_foreign_files_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# my own project\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        generate_sample(tmp_path)
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "# my own project\n"
    with pytest.raises(ValueError, match="before 2026-06-01"):
        generate_sample(tmp_path / "x", weeks=70)
    with pytest.raises(ValueError):
        generate_sample(tmp_path / "y", projects=("A", "A"))
