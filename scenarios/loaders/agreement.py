"""Hand-labelled agreement examples: one JSON object per line.

Keys: id, question, answer (may be empty: an empty reply is a real case), rot, label
(agree / neutral / disagree), split, and optionally phenomenon (negation, sarcasm, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import LoadIssue, RecordInvalid, load_jsonl_records, text_field
from scenarios.types import LABELS, SPLITS, AgreementExample

KEYS = ("id", "question", "answer", "rot", "label", "split", "phenomenon")


def parse_agreement_example(data: dict[str, Any]) -> AgreementExample:
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    answer = data.get("answer")
    if not isinstance(answer, str):
        raise RecordInvalid("answer", "must be a string (it may be empty)")
    label = data.get("label")
    if label not in LABELS:
        raise RecordInvalid("label", f"must be one of {', '.join(LABELS)}, got {label!r}")
    split = data.get("split")
    if split not in SPLITS:
        raise RecordInvalid("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
    return AgreementExample(
        id=text_field(data, "id"),
        question=text_field(data, "question"),
        answer=answer.strip(),
        rot=text_field(data, "rot"),
        label=label,
        split=split,
        kind=f"hard:{data.get('phenomenon') or 'hard'}",
    )


def load_agreement_examples(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[AgreementExample], list[LoadIssue]]:
    return load_jsonl_records(path, parse_agreement_example, skip_invalid)
