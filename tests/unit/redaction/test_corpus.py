"""The redactor against the labelled corpus in `tests/data/redaction/corpus.jsonl`: the forms people
really write are hidden, and dates, versions, order numbers, ISO weeks, timestamps, UUIDs, SHAs, IPs in prose
and prices survive. Precision and recall per kind are computed by `bench/redaction.py` (figures in the README)."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.redaction import by_family, load_corpus, ours, score
from chronicle.redaction.redactor import Redactor

CORPUS = load_corpus()
# Labelled secrets the redactor is known to miss — each a documented limitation (README, "Reliability and
# security"). A new miss fails the test; fixing one of these means moving it out of this list.
KNOWN_MISSES = {
    "本地号码 85123456",  # an 8-digit local number without area code: indistinguishable from any 8-digit number
    "老身份证 110105800307123",  # the 15-digit ID numbers issued before 2004: too like other 15-digit numbers
}


def test_every_labelled_secret_is_hidden_and_every_negative_survives() -> None:
    redact = ours()  # what a trial log's line becomes before an LLM: subjects' data pseudonymised, then redacted
    missed, mangled = [], []
    for example in CORPUS:
        out = redact(example["text"], [])
        if example["secrets"]:
            if any(value in out for _, value in example["secrets"]) and example["text"] not in KNOWN_MISSES:
                missed.append(example["text"])
        elif out != example["text"]:
            mangled.append(f"{example['text']!r} -> {out!r}")
    assert not missed, f"secrets left in: {missed}"
    assert not mangled, "ordinary text redacted:\n" + "\n".join(mangled)


def test_precision_and_recall_per_kind() -> None:
    table = score(CORPUS, ours())
    overall = table.pop("all")
    assert overall["recall"] >= 0.97 and overall["precision"] >= 0.99, overall
    for kind, row in table.items():
        assert row["precision"] >= 0.9 and row["recall"] >= 0.8, (kind, row)
    negatives = [e for e in CORPUS if not e["secrets"]]
    categories = Counter(e["note"] for e in negatives)
    # The negative side is not a token gesture: every category the issue names is there, several times.
    for category in ("date", "version", "order / reference number", "ISO week", "timestamp", "uuid",
                     "git sha / digest", "IP in prose", "price"):
        assert categories[category] >= 3, category
    assert len(negatives) >= 150 and overall["labelled"] >= 150


@pytest.mark.parametrize(("text", "kind", "value"), [
    ("Authorization: Basic YWRtaW46czNjcjN0UGFzcw==", "auth_header", "YWRtaW46czNjcjN0UGFzcw=="),
    ("Cookie: sessionid=8f2k3j4h5g6f7d8s9a0; csrftoken=Qw9Er8Ty7Ui6", "cookie", "8f2k3j4h5g6f7d8s9a0"),
    ("X-Api-Key: 9f8e7d6c5b4a3210", "secret", "9f8e7d6c5b4a3210"),
    ("https://hooks.slack.com/services/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", "webhook", "xyzXYZ123abc"),
    ("sk_live_51HqLyjWDarjtT1zdp7dcXjWm", "api_key", "51HqLyjWDarjtT1zdp7dcXjWm"),
    ("rk_live_51HqLyjRestrictedKey0099aa", "api_key", "51HqLyjRestrictedKey0099aa"),
    ("postgres://admin:pw@db-host/prod", "password", ":pw@"),
    ("mysql://root:pw@192.0.2.5", "password", ":pw@"),
    ("DB_PASS=Sup3rS3cret", "password", "Sup3rS3cret"),
    ("SMTP_PWD=mailpass99", "password", "mailpass99"),
    ("DEPLOY_TOKEN=dEpLoYtOkEn", "secret", "dEpLoYtOkEn"),
    ("SIGNING_KEY=abcdef", "secret", "abcdef"),
    ("password＝Wide2Pass", "password", "Wide2Pass"),
    ("密码是 Qaz2Wsx3", "password", "Qaz2Wsx3"),
    ("口令：Kx8-Lm9-Np0", "password", "Kx8-Lm9-Np0"),
    ("the wifi password is Hunter2!", "password", "Hunter2!"),
    ("身份证：110105 19800307 1234", "cn_id", "19800307"),
    ("电话 135.6666.7777", "phone", "6666.7777"),
    ("座机 010-8888 7777", "phone", "8888 7777"),
    ("sk-proj-Ab12Cd34Ef56Gh78\nIj90Kl12Mn34Op56Qr78\n", "api_key", "Ij90Kl12Mn34Op56Qr78"),
])
def test_the_forms_the_issue_names(text: str, kind: str, value: str) -> None:
    counts: Counter[str] = Counter()
    out = Redactor.build().redact(text, counts)
    assert value not in out and counts[kind] >= 1, (out, counts)


def test_redaction_stays_idempotent_on_the_whole_corpus() -> None:
    redactor = Redactor.build()
    for example in CORPUS:
        once = redactor.redact(example["text"])
        counts: Counter[str] = Counter()
        assert redactor.redact(once, counts) == once and not counts, example["text"]


def test_every_family_of_issue_21_is_there_with_look_alike_negatives_and_recall_of_at_least_0_9() -> None:
    families = by_family(CORPUS, ours())
    for name in ("split_label", "open_noun", "known_format", "bank_card", "iban", "phone_any", "keyword_entropy"):
        examples = [e for e in CORPUS if e.get("family") == name]
        assert sum(1 for e in examples if e["secrets"]) >= 3, name
        assert any(not e["secrets"] for e in examples), f"{name} has no look-alike negative"
    for name, row in families.items():
        assert row["recall"] >= 0.9 and row["precision"] >= 0.95, (name, row)


def test_the_held_out_half_generated_from_templates() -> None:
    """The half the rules were not tuned on (bench/redaction_heldout.py, frozen before tuning): every family of
    the fail-closed policy at recall >= 0.9, and its declared-safe negatives untouched."""
    from bench.redaction import HELDOUT

    heldout = load_corpus(HELDOUT)
    families = by_family(heldout, ours())
    assert {name for name, row in families.items() if row["recall"] < 0.9} == set(), families
    overall = score(heldout, ours())["all"]
    assert overall["recall"] >= 0.97 and overall["precision"] >= 0.99, overall


def test_the_held_out_half_is_what_its_generator_writes() -> None:
    """Frozen: regenerating with the recorded seed gives the committed file (a changed template is a new seed)."""
    import json

    from bench.redaction import HELDOUT
    from bench.redaction_heldout import generate

    assert [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()] == generate()
