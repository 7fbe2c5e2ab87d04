"""bench/redaction: precision and recall of the redactor, per kind, on the labelled corpus.

`tests/data/redaction/corpus.jsonl` holds one example per line: `text`, the `secrets` in it as
`[kind, value]` pairs (empty for a negative example) and a `note`. Scoring:

- recall of kind K: share of the labelled K values that no longer appear in the redacted text
  (hidden is hidden, whichever marker hid it);
- precision of kind K: share of the redactor's K matches that overlap a labelled secret; a match in a
  negative example (a date, a version, an order number, an IP ...) is a false positive.

The baseline is the first redactor (its patterns are kept below, verbatim), measured
on the same corpus in the same run. `python -m bench.redaction` prints the table for the README.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "redaction" / "corpus.jsonl"
HELDOUT = CORPUS.with_name("heldout.jsonl")
"""Generated from templates the rules were not tuned on (bench/redaction_heldout.py), frozen before tuning."""


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(corpus: list[dict[str, Any]],
          redact: Callable[[str, list[tuple[str, str]]], str]) -> dict[str, dict[str, float | int]]:
    """Per kind (and `all`): tp, fp, caught, labelled, precision, recall. `redact(text, found)` fills `found`
    with (kind, hidden text) pairs and returns the redacted text."""
    labelled: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    misses: list[str] = []
    false_positives: list[str] = []
    for example in corpus:
        found: list[tuple[str, str]] = []
        out = redact(example["text"], found)
        values = [v for _, v in example["secrets"]]
        for kind, value in example["secrets"]:
            labelled[kind] += 1
            if value in out:
                misses.append(f"{kind}: {example['text']!r}")
            else:
                caught[kind] += 1
        for kind, hidden in found:
            if any(v in hidden or hidden in v for v in values if v and hidden):
                tp[kind] += 1
            else:
                fp[kind] += 1
                false_positives.append(f"{kind}: {hidden!r} in {example['text']!r}")
    kinds = sorted(set(labelled) | set(tp) | set(fp))
    table: dict[str, dict[str, Any]] = {}
    for kind in [*kinds, "all"]:
        t = sum(tp.values()) if kind == "all" else tp[kind]
        f = sum(fp.values()) if kind == "all" else fp[kind]
        c = sum(caught.values()) if kind == "all" else caught[kind]
        n = sum(labelled.values()) if kind == "all" else labelled[kind]
        table[kind] = {"tp": t, "fp": f, "caught": c, "labelled": n,
                       "precision": t / (t + f) if t + f else 1.0, "recall": c / n if n else 1.0}
    table["all"]["misses"] = misses  # type: ignore[assignment]
    table["all"]["false_positives"] = false_positives  # type: ignore[assignment]
    return table


def family(example: dict[str, Any]) -> str:
    """The example's family (the shapes corpus), else the kind of its first secret (the older corpus); an older
    negative counts with `negatives` (its precision is the share of matches it did not cause)."""
    if example.get("family"):
        return str(example["family"])
    return str(example["secrets"][0][0]) if example["secrets"] else "negatives"


def by_family(corpus: list[dict[str, Any]],
              redact: Callable[[str, list[tuple[str, str]]], str]) -> dict[str, dict[str, Any]]:
    """`score` per family: recall of the family's secrets and precision of the matches in its examples."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for example in corpus:
        groups.setdefault(family(example), []).append(example)
    return {name: score(examples, redact)["all"] for name, examples in sorted(groups.items())}


_PSEUDONYM_KIND = {"name": "person", "resident_id": "cn_id", "phone": "phone", "passport": "passport",
                   "address": "address", "record_no": "record_no", "birth_date": "birth_date", "contact": "contact"}


def ours() -> Callable[[str, list[tuple[str, str]]], str]:
    """What a trial log's text becomes before an LLM: subjects' personal data pseudonymised, then redacted."""
    from chronicle.redaction.pseudonyms import Pseudonyms
    from chronicle.redaction.redactor import Redactor

    redactor = Redactor.build()

    def redact(text: str, found: list[tuple[str, str]]) -> str:
        names = Pseudonyms()
        text = names.apply(text)
        found += [(_PSEUDONYM_KIND[family], value) for family, value in names.new]
        return redactor.redact(text, found=found)

    return redact


# --- the first redactor, verbatim (the baseline) -----------------------------------------------
_A = "A-Za-z0-9"
_ND = r"(?!\[REDACTED:)"
_PV = rf"""(?:(?P<q>["'])(?P<qv>{_ND}[^"'\n]+)|{_ND}[^\s"'`<>，。；、]+)"""
_PAIR = rf"""(?P<keep>(?<![{_A}])(?:[{_A}_.-]*[_.-])?(?:{{names}})["']?[ \t]*[:=：][ \t]*){_PV}"""
_BEFORE = [
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)", re.S),
    ("jwt", rf"(?<![{_A}_-])eyJ[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}\.[{_A}_-]{{8,}}", 0),
    ("bearer_token", rf"(?P<keep>\bBearer\s+){_ND}[{_A}._~+/=-]{{8,}}", re.I),
    ("api_key", rf"(?<![{_A}_-])(?:sk-(?:proj-|ant-)?[{_A}_-]{{16,}}|gh[pousr]_[{_A}]{{20,}}|github_pat_[{_A}_]{{20,}}"
                rf"|(?:AKIA|ASIA)[0-9A-Z]{{16}}|xox[abposr]-[{_A}-]{{10,}}|AIza[{_A}_-]{{30,}})", 0),
    ("password", _PAIR.format(names="password|passwd|pwd|密码|口令"), re.I),
    ("secret", _PAIR.format(names=r"secret|token|api[_-]?key|access[_-]?key|private[_-]?key|[A-Za-z0-9]*_key|密钥"),
     re.I),
    ("email", rf"(?<![{_A}._%+-])[{_A}._%+-]+@[{_A}-]+(?:\.[{_A}-]+)*\.[A-Za-z]{{2,}}", 0),
    ("cn_id", r"(?<!\d)\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])", 0),
    ("phone", r"(?<![\d+])(?:\+?86[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}(?!\d)", 0),
    ("phone", r"(?<![\w+])\+[1-9]\d{0,3}(?:[ -]?\(?\d{1,4}\)?){2,5}(?!\d)", 0),
]


def before() -> Callable[[str, list[tuple[str, str]]], str]:
    compiled = [(kind, re.compile(p, flags)) for kind, p, flags in _BEFORE]

    def redact(text: str, found: list[tuple[str, str]]) -> str:
        for kind, pattern in compiled:
            def sub(m: re.Match[str], kind: str = kind) -> str:
                if kind == "phone" and not 8 <= sum(c.isdigit() for c in m.group(0)) <= 15:
                    return m.group(0)
                keep = (m.group("keep") or "") if "keep" in m.re.groupindex else ""
                quote = (m.group("q") or "") if "q" in m.re.groupindex else ""
                found.append((kind, m.group(0)[len(keep) + len(quote):]))
                return f"{keep}{quote}[REDACTED:{kind}]"
            text = pattern.sub(sub, text)
        return text

    return redact


def markdown(table: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> str:
    lines = ["| kind | labelled | recall | precision | recall before | precision before |", "|---|---|---|---|---|---|"]
    for kind, row in table.items():
        b = baseline.get(kind, {"recall": 0.0, "precision": 1.0, "tp": 0, "fp": 0})
        lines.append(f"| {kind} | {row['labelled']} | {row['recall']:.3f} | {row['precision']:.3f} | "
                     f"{b['recall']:.3f} | {b['precision']:.3f} |")
    return "\n".join(lines)


def family_markdown(families: dict[str, dict[str, Any]]) -> str:
    lines = ["| family | examples with secrets / without | labelled | recall | precision |", "|---|---|---|---|---|"]
    for name, row in families.items():
        lines.append(f"| {name} | {row['examples']} | {row['labelled']} | {row['recall']:.3f} "
                     f"| {row['precision']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    from bench._util import result

    corpus = load_corpus()
    table, baseline = score(corpus, ours()), score(corpus, before())
    negatives = sum(1 for e in corpus if not e["secrets"])
    print(f"corpus: {len(corpus)} examples ({len(corpus) - negatives} with secrets, {negatives} without), "
          f"{table['all']['labelled']} labelled secrets")
    print(markdown(table, baseline))
    families = by_family(corpus, ours())
    for name, examples in _examples_per_family(corpus).items():
        families[name]["examples"] = examples
    print()
    print(family_markdown(families))
    heldout = load_corpus(HELDOUT)
    held, held_before = score(heldout, ours()), score(heldout, before())
    held_families = by_family(heldout, ours())
    for name, examples in _examples_per_family(heldout).items():
        held_families[name]["examples"] = examples
    print(f"\nheld-out half: {len(heldout)} examples, {held['all']['labelled']} labelled values; recall "
          f"{held['all']['recall']:.3f} precision {held['all']['precision']:.3f} (the first redactor: "
          f"{held_before['all']['recall']:.3f} / {held_before['all']['precision']:.3f})")
    print(family_markdown(held_families))
    for line in held["all"]["misses"]:
        print("  held-out missed", line)
    for line in held["all"]["false_positives"]:
        print("  held-out false positive", line)
    worst = min(row["recall"] for row in families.values())
    for line in table["all"]["misses"]:
        print("  missed", line)
    for line in table["all"]["false_positives"]:
        print("  false positive", line)
    overall, base = table["all"], baseline["all"]
    result("redaction", measure=(f"recall on {overall['labelled']} labelled secrets, {len(corpus)} examples "
                                 f"(precision {overall['precision']:.3f}; before: {base['precision']:.3f})"),
           ours=overall["recall"], baseline=base["recall"], baseline_name="the first redactor", unit="",
           goal="recall >= 0.97, precision >= 0.99, no family below 0.9 recall",
           ok=overall["recall"] >= 0.97 and overall["precision"] >= 0.99 and worst >= 0.9,
           extra={"precision": overall["precision"], "baseline_precision": base["precision"],
                  "per_family": {k: {m: v[m] for m in ("labelled", "recall", "precision")}
                                 for k, v in families.items()},
                  "per_kind": {k: {m: v[m] for m in ("labelled", "recall", "precision")} for k, v in table.items()},
                  "heldout": {"recall": held["all"]["recall"], "precision": held["all"]["precision"],
                              "per_family": {k: {m: v[m] for m in ("labelled", "recall", "precision")}
                                             for k, v in held_families.items()}}})


def _examples_per_family(corpus: list[dict[str, Any]]) -> dict[str, str]:
    counts: dict[str, list[int]] = {}
    for example in corpus:
        pair = counts.setdefault(family(example), [0, 0])
        pair[0 if example["secrets"] else 1] += 1
    return {name: f"{a} / {b}" for name, (a, b) in counts.items()}


if __name__ == "__main__":
    main()
