"""Assemble second-rated labelled examples into a pack file, with the checks that make them usable.

Written examples (and labelled bot replies) come from one writer per file folder; every example is
labelled again, blind, by a different rater. This module keeps the examples both agree on, reports
the agreement rate and Cohen's kappa, drops anything that leaks a question or RoT of the pack's
dev/test splits (exact or near-duplicate by MiniLM cosine), drops duplicates, puts a small share of
RoTs in a dev split (so the scorer's epoch can be chosen on this distribution too), and writes
the pack's JSONL. Usage:

    python -m training.scorer_data --items 'data/agreement_raw/w*/part*.jsonl' \
        --ratings 'data/agreement_raw/ratings/*.jsonl' --source written \
        --out scenarios/packs/core/agreement_written.jsonl
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scenarios.phrases import strip_because
from scenarios.types import LABELS

NEAR_DUPLICATE = 0.9
"""MiniLM cosine at or above which a question or RoT counts as a dev/test one."""


def normalise_text(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", " ".join(text.lower().split()))


def cohens_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Agreement beyond chance between two raters over the same items."""
    n = len(a)
    if n == 0:
        raise ValueError("no doubly-rated items")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


@dataclass
class Assembly:
    kept: list[dict[str, Any]]
    report: dict[str, Any] = field(default_factory=dict)


def read_jsonl(patterns: Sequence[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(
                            f"{path}: line {number}: invalid JSON ({exc.msg})"
                        ) from None
    return rows


def second_rated(
    items: Sequence[dict[str, Any]], ratings: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Items whose second label matches the first; the agreement figures per phenomenon."""
    rated = [i for i in items if i["id"] in ratings]
    first = [i["label"] for i in rated]
    second = [ratings[i["id"]] for i in rated]
    by: dict[str, list[bool]] = {}
    for item, label in zip(rated, second, strict=True):
        by.setdefault(item.get("phenomenon", "unspecified"), []).append(item["label"] == label)
    kept = [i for i, label in zip(rated, second, strict=True) if i["label"] == label]
    return kept, {
        "written": len(items),
        "second_rated": len(rated),
        "agreement_rate": sum(x == y for x, y in zip(first, second, strict=True)) / len(rated),
        "cohens_kappa": cohens_kappa(first, second),
        "agreement_by_phenomenon": {k: sum(v) / len(v) for k, v in sorted(by.items())},
        "kept_after_rating": len(kept),
    }


def question_rules(q: Any) -> tuple[str, str]:
    """The texts a pack question's examples use as rules: its RoT and its explanation read as
    one (the own-explanation examples, S_ME)."""
    return q.rot.text, strip_because(q.explanation)


def held_out_texts(pack: Any) -> tuple[list[str], list[str]]:
    """Questions (with paraphrases and related questions) and RoTs of the dev and test splits."""
    questions, rots = [], []
    for q in pack.questions:
        if q.split in ("dev", "test"):
            questions += [q.question, *q.paraphrases, q.related_question]
            rots += question_rules(q)
    for e in pack.agreement_examples:
        # Hand-written held-out sets (hard cases, the sign sets); not bot replies, which are
        # asked from train questions, nor the examples derived from the questions above.
        if e.split in ("dev", "test") and e.kind.split(":", 1)[0] in ("hard", "signs", "signs-dev"):
            questions.append(e.question)
            rots.append(e.rot)
    return [q for q in questions if q.strip()], rots


def train_rots(pack: Any) -> set[str]:
    """RoTs the pack already trains on: a new example with one of them must not go to dev."""
    rots = {
        normalise_text(text)
        for q in pack.questions
        if q.split == "train"
        for text in question_rules(q)
    }
    rots |= {
        normalise_text(e.rot)
        for e in pack.agreement_examples
        if e.split == "train" and e.kind.startswith("hard:")
    }
    return rots


def leaking(
    rows: Sequence[dict[str, Any]],
    held_questions: Sequence[str],
    held_rots: Sequence[str],
    embed: Callable[[Sequence[str]], np.ndarray],
    threshold: float = NEAR_DUPLICATE,
) -> set[int]:
    """Indices of rows whose question or RoT is (nearly) a held-out one."""
    exact_q = {normalise_text(t) for t in held_questions}
    exact_r = {normalise_text(t) for t in held_rots}
    bad = {
        i
        for i, r in enumerate(rows)
        if normalise_text(r["rot"]) in exact_r
        or (r["question"].strip() and normalise_text(r["question"]) in exact_q)
    }
    for key, held in (("question", held_questions), ("rot", held_rots)):
        texts = [r[key] for r in rows]
        if not held:
            continue
        sims = embed(texts) @ embed(list(held)).T
        for i, row_max in enumerate(sims.max(axis=1)):
            if texts[i].strip() and row_max >= threshold:
                bad.add(i)
    return bad


def dev_share(rot: str, share: float) -> bool:
    """A stable pseudo-random choice by RoT text: the same RoT always lands in the same split."""
    digest = hashlib.sha256(normalise_text(rot).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < share


def _split(
    row: dict[str, Any], dev_fraction: float, group: str | None, test: float, dev_group: str
) -> str:
    if group and dev_share(str(row[group]), test):
        return "test"
    return "dev" if dev_share(str(row[dev_group]), dev_fraction) else "train"


def assemble(
    items: Sequence[dict[str, Any]],
    ratings: dict[str, str],
    pack: Any,
    embed: Callable[[Sequence[str]], np.ndarray],
    source: str,
    dev_fraction: float = 0.05,
    split: str | None = None,
    test_group: str | None = None,
    test_fraction: float = 0.0,
    extra_held_rots: Sequence[str] = (),
    dev_group: str = "rot",
) -> Assembly:
    """Second-rated, de-duplicated, leak-free rows in the pack's format.

    `extra_held_rots` are rules from outside the pack that must not be trained on either (the
    Moral Stories dev norms: validation only), dropped exact or near-duplicate like the pack's.

    `dev_group` is the key whose value goes to dev together: the RoT by default; the written
    item for question x answer x RoT items, whose question comes with two RoTs and must not be
    in dev with one and in train with the other.

    Splits: `split` for every row if given; else a row whose `test_group` value (e.g. the
    question id of a bot reply) falls in `test_fraction` goes to test -- all rows of a group
    together -- and the rest go to dev or train by RoT (`dev_fraction`).
    """
    for item in items:
        if item.get("label") not in LABELS:
            raise ValueError(
                f"{item.get('id')}: label {item.get('label')!r} is not one of {LABELS}"
            )
    kept, report = second_rated(items, ratings)
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for row in kept:
        key = (
            normalise_text(row["question"]),
            normalise_text(row["answer"]),
            normalise_text(row["rot"]),
        )
        if key not in seen:
            seen.add(key)
            unique.append(row)
    report["duplicates_dropped"] = len(kept) - len(unique)
    held_q, held_r = held_out_texts(pack)
    held_r = [*held_r, *extra_held_rots]
    if split == "test":
        # A test set must not share an RoT with anything the pack trains or selects on.
        seen_rots = train_rots(pack) | {
            normalise_text(e.rot)
            for e in pack.agreement_examples
            if e.split == "dev" and e.kind.startswith("hard:")
        }
        seen_rots |= {
            normalise_text(text)
            for q in pack.questions
            if q.split == "dev"
            for text in question_rules(q)
        }
        bad = {i for i, r in enumerate(unique) if normalise_text(r["rot"]) in seen_rots}
    else:
        bad = leaking(unique, held_q, held_r, embed)
    report["leaks_dropped"] = len(bad)
    trained = train_rots(pack)
    kept_rows = [row for i, row in enumerate(unique) if i not in bad]
    for row in kept_rows if split is None else []:
        if dev_group not in row:
            raise ValueError(f"{row['id']}: no {dev_group!r} to group the dev split by")
    # a group with a RoT the pack already trains on goes to train whole, never split in two
    to_train = {str(r[dev_group]) for r in kept_rows if normalise_text(r["rot"]) in trained}
    out = []
    for row in kept_rows:
        chosen = split or _split(row, dev_fraction, test_group, test_fraction, dev_group)
        if chosen == "dev" and str(row[dev_group]) in to_train:
            chosen = "train"
        out.append(
            {
                "id": row["id"],
                "question": row["question"].strip(),
                "answer": row["answer"].strip(),
                "rot": row["rot"].strip(),
                "label": row["label"],
                "split": chosen,
                "phenomenon": row.get("phenomenon", "unspecified"),
                "source": source,
            }
        )
    report["kept"] = len(out)
    report["by_split"] = dict(Counter(r["split"] for r in out))
    report["by_label"] = dict(Counter(r["label"] for r in out))
    report["by_phenomenon"] = dict(sorted(Counter(r["phenomenon"] for r in out).items()))
    return Assembly(out, report)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", nargs="+", required=True, help="Glob(s) of labelled items.")
    parser.add_argument("--ratings", nargs="+", required=True, help="Glob(s) of {id, label} rows.")
    parser.add_argument("--source", required=True)
    parser.add_argument("--split", default=None, help="Put every example in this split.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--test-group", default=None, help="Key whose values go to test together.")
    parser.add_argument("--test-fraction", type=float, default=0.0)
    parser.add_argument("--dev-fraction", type=float, default=0.05)
    parser.add_argument("--dev-group", default="rot", help="Key whose values go to dev together.")
    parser.add_argument("--pack", default="core")
    parser.add_argument(
        "--moral-stories",
        type=Path,
        default=None,
        help="Moral Stories dev JSONL: rows whose RoT is (nearly) one of its norms are dropped.",
    )
    args = parser.parse_args(argv)

    from agents.models import load_sentence_encoder
    from evaluators.stack import encode_normalized
    from scenarios.pack import load_pack

    items = read_jsonl(args.items)
    ratings = {r["id"]: r["label"] for r in read_jsonl(args.ratings)}
    encoder = load_sentence_encoder("minilm-l6")
    norms: list[str] = []
    if args.moral_stories:
        from scenarios.loaders import load_moral_stories

        norms = sorted({p.norm for p in load_moral_stories(args.moral_stories)[0]})
    result = assemble(
        items,
        ratings,
        load_pack(args.pack).pack,
        lambda texts: encode_normalized(encoder, texts),
        args.source,
        dev_fraction=args.dev_fraction,
        split=args.split,
        test_group=args.test_group,
        test_fraction=args.test_fraction,
        extra_held_rots=norms,
        dev_group=args.dev_group,
    )
    with args.out.open("w", encoding="utf-8") as fh:
        for row in result.kept:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    text = json.dumps(result.report, indent=2)
    print(text)
    if args.report:
        args.report.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
