"""Subjects' names are tagged block by block: exactly the names jieba tags when it segments the whole line."""

from __future__ import annotations

import re

import pytest

from chronicle.redaction import pseudonyms
from chronicle.sample import text as sample_text
from chronicle.segments import segmenter

LINES = [
    "受试者 XH201-01-003（张建国，男，67岁）今日入组，筛选期检查均符合入排标准",
    "患者王秀英因发热住院，PI-李建国 已知晓，CRC 王敏 跟进随访",
    "随访：受试者刘德华、陈小明于 03-02 完成 C2D1 访视；联系电话见原始病历",
    "决定后续影像评估统一由独立影像评估委员会（IRC）阅片，欧阳娜娜 家属已签署知情同意书",
    *(template.format(subj="XH201-01-017", site=site, icf="V2.0", arm="A 组") + f"（{name}，女，54岁）"
      for template, site, name in zip(sample_text.ENROLL_TEMPLATES, sample_text.SITE_POOL * 9,
                                      sample_text.NAME_POOL * 9, strict=False)),
]


@pytest.mark.parametrize("line", LINES)
def test_tagging_only_blocks_with_a_surname_finds_what_the_whole_line_finds(line: str) -> None:
    whole, at = [], 0
    for word, flag in segmenter().posseg.cut(line):
        start = line.find(word, at)
        at = start + len(word)
        if flag == "nr" and word[0] in pseudonyms._SURNAMES and re.fullmatch(r"[\u4e00-\u9fff]+", word):
            whole.append((start, word))
    assert [(s, w) for s, w in pseudonyms._tagged_names(line) if w[0] in pseudonyms._SURNAMES] == whole
