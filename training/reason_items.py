"""Expand written reasons into labelled agreement examples (the `reasons` source).

S_ME scores a bot's answer against the reason it gives when asked "Why?", read as a rule
(docs/methods.md §4), so the factored scorer's direction half must read a reason's side on the
question's act. Writers gave, for each question of the factorial sets, reasons that support
doing the act ("for") and reasons that oppose it ("against"), in several styles (plain,
negated, the question's own judgment word, rambling, a general principle, no "because").

Each reason becomes an example against the question's RoT for the act and its RoT against it,
its label fixed by the factored scorer's sign rule (training.factorial_items.LABEL: a reason
for the act agrees with the RoT for it). A rater labelled each reason's side blind, seeing only
the question, one of its RoTs as an anchor and the reason; the rater's side is expanded the
same way, so training.scorer_data keeps a reason's examples only when both saw the same side.
Questions keep the split of their factorial set. Usage:

    python -m training.reason_items --questions 'data/agreement_raw/rs/questions_w*.jsonl' \
        --reasons 'data/agreement_raw/rs/reasons_w*.jsonl' \
        --ratings 'data/agreement_raw/rs/ratings_w*.jsonl' --out data/agreement_raw/rs/expanded
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from training.factorial_items import rows_against_rots
from training.scorer_data import read_jsonl

SIDE_STANCE = {"for": "endorse", "against": "reject", "neither": "none"}
"""A reason's side on the act -> the stance name of training.factorial_items."""


def expand_reason(question: dict[str, Any], reason: dict[str, Any], side: str) -> list[dict]:
    """One reason as an example against each RoT its question has, labelled from `side`."""
    if side not in SIDE_STANCE:
        raise ValueError(f"{reason.get('id', '?')}: side {side!r} not in {tuple(SIDE_STANCE)}")
    return rows_against_rots(
        reason["id"], question["qid"], question["question"],
        {"for": question.get("rot_for"), "against": question.get("rot_against")},
        reason["reason"], SIDE_STANCE[side],
        phenomenon="explanation", style=str(reason.get("style") or "unspecified"),
    )  # fmt: skip


Expand = Callable[[dict[str, Any], dict[str, Any], str], list[dict]]
"""(question, written item, a reader's judgment of it) -> the item's rows against the
question's RoTs, labelled from that judgment."""


def expand_all(
    questions: list[dict[str, Any]],
    reasons: list[dict[str, Any]],
    ratings: dict[str, str],
    expand: Expand = expand_reason,
    judged: str = "side",
) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """Expanded rows per split (the writer's judgment, field `judged`, as label) and the
    rater's judgment expanded to the same row ids; items without a rating are left out. Other
    items written against the factorial questions (training.concession_items) pass their own
    `expand` and field."""
    by_qid = {q["qid"]: q for q in questions}
    rows: dict[str, list[dict]] = {}
    row_ratings: dict[str, str] = {}
    for reason in reasons:
        question = by_qid.get(reason.get("qid", ""))
        if question is None:
            qid = reason.get("qid")
            raise ValueError(f"{reason.get('id', '?')}: qid {qid!r} is not a question")
        if reason["id"] not in ratings:
            continue
        written = expand(question, reason, reason[judged])
        rated = expand(question, reason, ratings[reason["id"]])
        rows.setdefault(question["split"], []).extend(written)
        row_ratings.update({r["id"]: r["label"] for r in rated})
    return rows, row_ratings


def write_expanded(out: Path, rows: dict[str, list[dict]], row_ratings: dict[str, str]) -> None:
    """`expanded_{split}.jsonl` per split and `ratings_expanded.jsonl`, the inputs of
    training.scorer_data."""
    out.mkdir(parents=True, exist_ok=True)
    for split, split_rows in rows.items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in split_rows)
        (out / f"expanded_{split}.jsonl").write_text(text, encoding="utf-8")
    text = "".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in row_ratings.items())
    (out / "ratings_expanded.jsonl").write_text(text, encoding="utf-8")
    print({split: len(r) for split, r in rows.items()}, f"{len(row_ratings)} rated rows")


def expand_cli(
    argv: list[str] | None, description: str, items_flag: str, rating_field: str,
    expand: Expand, judged: str,
) -> None:  # fmt: skip
    """The command line of every expander of items written against the factorial questions:
    questions, written items (`--{items_flag}`) and blind ratings in, expanded files out."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--questions", nargs="+", required=True)
    parser.add_argument(f"--{items_flag}", nargs="+", required=True)
    parser.add_argument("--ratings", nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True, help="Folder for the expanded files.")
    args = parser.parse_args(argv)
    ratings = {r["id"]: r[rating_field] for r in read_jsonl(args.ratings)}
    items = read_jsonl(getattr(args, items_flag))
    rows, row_ratings = expand_all(read_jsonl(args.questions), items, ratings, expand, judged)
    write_expanded(args.out, rows, row_ratings)


def main(argv: list[str] | None = None) -> None:
    expand_cli(argv, __doc__.split("\n\n")[0], "reasons", "label", expand_reason, "side")


if __name__ == "__main__":
    main()
