"""Tokenisation for full text (jieba for Chinese) and the score fusion rule (pure functions)."""

from __future__ import annotations

import pytest

from chronicle.memory.search import Candidate, fts_text, fuse, semantic_relevance, tokenize


def test_chinese_is_cut_into_words_and_sub_words() -> None:
    tokens = tokenize("我们明天在天安门广场见面")
    assert {"明天", "天安门", "广场", "见面"} <= set(tokens)
    assert "在" not in tokens  # function words would match every Chinese memory


def test_mixed_text_keeps_latin_words_and_folds_case() -> None:
    assert tokenize("Deploy 用 API_KEY 配置,  Ｖ2!") == ["deploy", "用", "api", "key", "配置", "v2"]
    assert fts_text("Hello,  World") == "hello world"


def test_dense_relevance_is_the_cosine_without_any_text_match() -> None:
    assert semantic_relevance(0.42, None, 0.0, fulltext_weight=0.5) == pytest.approx(0.42)
    # Once the query matched some text, BM25 (max-normalised) takes its share of the relevance.
    assert semantic_relevance(0.42, None, 8.0, fulltext_weight=0.5) == pytest.approx(0.21)
    assert semantic_relevance(0.42, 8.0, 8.0, fulltext_weight=0.5) == pytest.approx(0.71)
    assert semantic_relevance(0.42, 4.0, 8.0, fulltext_weight=0.5) == pytest.approx(0.46)


def test_keyword_match_lifts_a_weaker_cosine() -> None:
    scored = fuse(
        [Candidate("dense", cosine=0.45, importance=0.5), Candidate("keyword", 0.30, 0.5, bm25=8.0, fts_rank=1)],
        semantic_weight=0.7,
        importance_weight=0.3,
        fulltext_weight=0.5,
    )
    assert [s.id for s in scored] == ["keyword", "dense"]
    assert scored[0].semantic == pytest.approx(0.65) and scored[0].fts_rank == 1


def test_importance_weighs_in_at_seed_002_weights() -> None:
    scored = fuse(
        [Candidate("low", 0.60, 0.1), Candidate("high", 0.55, 0.9)],
        semantic_weight=0.7,
        importance_weight=0.3,
        fulltext_weight=0.5,
    )
    assert [s.id for s in scored] == ["high", "low"]
    assert scored[0].score == pytest.approx(0.55 * (0.7 + 0.3 * 0.9))


def test_importance_scales_relevance_so_an_unrelated_important_memory_cannot_outrank_the_answer() -> None:
    # LoCoMo's miss pattern: the answering turn (few importance signals) behind a long, signal-rich turn about
    # something else. Added (0.7 x semantic + 0.3 x importance) the unrelated one won, 0.72 to 0.685.
    scored = fuse(
        [Candidate("answer", 0.85, 0.3), Candidate("unrelated", 0.60, 1.0)],
        semantic_weight=0.7,
        importance_weight=0.3,
        fulltext_weight=0.5,
    )
    assert [s.id for s in scored] == ["answer", "unrelated"]
    assert scored[0].score == pytest.approx(0.85 * (0.7 + 0.3 * 0.3))


def test_the_additive_rule_is_seed_002_to_the_letter_and_ages_its_own_term() -> None:
    from datetime import UTC, datetime, timedelta

    from chronicle.memory.ranking import rerank
    from chronicle.memory.records import SearchHit

    pair = [Candidate("answer", 0.85, 0.3), Candidate("unrelated", 0.60, 1.0)]
    scored = fuse(pair, semantic_weight=0.7, importance_weight=0.3, fulltext_weight=0.5, rule="additive")
    assert [s.id for s in scored] == ["unrelated", "answer"]  # the sum lets importance win, as the seed says
    assert scored[0].score == pytest.approx(0.7 * 0.60 + 0.3 * 1.0)
    # Ageing takes back exactly the importance term of the rule in use: half of it after one half-life.
    now = datetime(2026, 6, 1, tzinfo=UTC)
    hit = SearchHit(id="m", content="c", summary="s", target_file="MEMORY.md", tags=[], importance=1.0, key_info=[],
                    source="", created=now - timedelta(days=30), updated=None, content_hash="h", language="en",
                    source_entry_ids=[], flow_run_id=None, score=0.7 * 0.6 + 0.3, semantic=0.6, cosine=0.6)
    for rule, term in (("additive", 0.3), ("scaled", 0.3 * 0.6)):
        aged = rerank([hit], now=now, importance_weight=0.3, half_life_days=30, rule=rule)[0]
        assert aged.score == pytest.approx(hit.score - term / 2)


def test_fts_text_covers_every_text_field() -> None:
    assert fts_text("用户喜欢绿茶", "", "tea", "偏好") == "用户 喜欢 绿茶 tea 偏好"
