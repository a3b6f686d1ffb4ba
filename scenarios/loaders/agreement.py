"""Hand-labelled agreement examples: one JSON object per line.

Keys: id, question, answer (may be empty: an empty reply is a real case), rot, label
(agree / neutral / disagree), split, and optionally phenomenon (negation, sarcasm, ...).
"""

from __future__ import annotations

import json
from pathlib import Path

from scenarios.loaders._common import (
    Collector,
    LoadIssue,
    RecordInvalid,
    read_utf8_lines,
    text_field,
)
from scenarios.types import LABELS, SPLITS, AgreementExample

KEYS = ("id", "question", "answer", "rot", "label", "split", "phenomenon")


def load_agreement_examples(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[AgreementExample], list[LoadIssue]]:
    collector = Collector(Path(path), skip_invalid)
    out: list[AgreementExample] = []
    seen: dict[str, int] = {}
    for number, line in read_utf8_lines(collector):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            collector.problem(where, None, f"invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        try:
            if not isinstance(data, dict):
                raise RecordInvalid(None, "expected a JSON object")
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
            phenomenon = data.get("phenomenon") or "hard"
            example = AgreementExample(
                id=text_field(data, "id"),
                question=text_field(data, "question"),
                answer=answer.strip(),
                rot=text_field(data, "rot"),
                label=label,
                split=split,
                kind=f"hard:{phenomenon}",
            )
        except RecordInvalid as exc:
            collector.problem(where, exc.field, exc.reason)
            continue
        if example.id in seen:
            collector.problem(
                where, "id", f"duplicate id '{example.id}' (first on line {seen[example.id]})"
            )
            continue
        seen[example.id] = number
        out.append(example)
    return out, collector.issues
