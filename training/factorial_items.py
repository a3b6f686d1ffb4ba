"""Expand written question × answer × RoT items into labelled agreement examples.

A writer gives one question about an act, one RoT for the act and one against it, and answers
with their stance on doing the act (endorse / reject / none). Each answer is then an example
against both RoTs, its label fixed by the stance and the RoT's direction: the same "Sure, go
ahead" agrees with the RoT for the act and disagrees with the one against it, which is the
composition a single cross-encoder otherwise fails to learn (docs/methods.md §3). Raters later
label every expanded example blind (training.scorer_data keeps those both agree on). Usage:

    python -m training.factorial_items --items 'data/agreement_raw/qf/w*/part*.jsonl' \
        --out data/agreement_raw/qf/expanded.jsonl --directions data/agreement_raw/qf/dirs.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from training.factored_data import STANCE_LABEL
from training.scorer_data import read_jsonl

STANCE_CLASS = {"endorse": "agree", "reject": "disagree", "none": "neutral"}
"""A writer's stance name -> the stance classifier's label (training.factored_data)."""
STANCES = tuple(STANCE_CLASS)
LABEL = {
    (stance, direction): label
    for (label, direction), stance_class in STANCE_LABEL.items()
    for stance, cls in STANCE_CLASS.items()
    if cls == stance_class
}
"""(answer's stance on the act, RoT's direction on it) -> agreement label: the factored
scorer's sign rule (`STANCE_LABEL`) read backwards, so the two can never disagree."""


def rows_against_rots(
    row_id: str, item: str, question: str, rots: dict[str, str | None], answer: str, stance: str,
    **fields: str,
) -> list[dict[str, Any]]:  # fmt: skip
    """One answer as an example against each RoT given ({"for": ..., "against": ...}; a missing
    one is skipped), labelled by the sign rule (`LABEL`); ids are `{row_id}-{direction}`."""
    return [
        {
            "id": f"{row_id}-{direction}",
            "item": item,
            "question": question,
            "answer": answer,
            "rot": rot,
            "label": LABEL[(stance, direction)],
            **fields,
        }
        for direction, rot in rots.items()
        if rot
    ]


def expand_item(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Every answer of one item against its RoT for and its RoT against the act."""
    for key in ("item", "question", "rot_for", "rot_against", "answers"):
        if key not in item:
            raise ValueError(f"{item.get('item', '?')}: missing field {key!r}")
    rots = {"for": item["rot_for"], "against": item["rot_against"]}
    rows = []
    for k, answer in enumerate(item["answers"], 1):
        stance = answer.get("stance")
        if stance not in STANCES:
            raise ValueError(f"{item['item']}: answer {k}: stance {stance!r} not in {STANCES}")
        rows += rows_against_rots(
            f"{item['item']}-a{k}", item["item"], item["question"], rots, answer["text"], stance,
            phenomenon=str(answer.get("style") or "unspecified"),
        )  # fmt: skip
    return rows


def stated_directions(item: dict[str, Any]) -> list[dict[str, str]]:
    """The two (question, RoT) directions an item states, in the pack's directions format."""
    return [
        {"question": item["question"], "rot": item[f"rot_{d}"], "direction": d}
        for d in ("for", "against")
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--directions", type=Path, required=True)
    args = parser.parse_args(argv)
    items = read_jsonl(args.items)
    rows = [row for item in items for row in expand_item(item)]
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    dirs = [d for item in items for d in stated_directions(item)]
    args.directions.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dirs))
    print(f"{len(items)} items -> {len(rows)} examples, {len(dirs)} stated directions")


if __name__ == "__main__":
    main()
