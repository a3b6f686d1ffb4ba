"""Hand-labelled agreement examples: one JSON object per line.

Keys: id, question (may be empty: a narrated action judged against a norm has none), answer
(may be empty: an empty reply is a real case), rot, label
(agree / neutral / disagree), split, and optionally phenomenon (negation, sarcasm, ...) and
source (how the example was made: `hard` by default, `written` for the broad written corpus,
`bot` for labelled bot replies, `signs` for the separately written sign test set). The
example's kind is `{source}:{phenomenon}`, so figures can be sliced by either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import LoadIssue, RecordInvalid, load_jsonl_records, text_field
from scenarios.types import LABELS, SPLITS, AgreementExample

KEYS = ("id", "question", "answer", "rot", "label", "split", "phenomenon", "source")


def parse_agreement_example(data: dict[str, Any]) -> AgreementExample:
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    answer = data.get("answer")
    if not isinstance(answer, str):
        raise RecordInvalid("answer", "must be a string (it may be empty)")
    question = data.get("question")
    if not isinstance(question, str):
        raise RecordInvalid("question", "must be a string (empty for a narrated action)")
    label = data.get("label")
    if label not in LABELS:
        raise RecordInvalid("label", f"must be one of {', '.join(LABELS)}, got {label!r}")
    split = data.get("split")
    if split not in SPLITS:
        raise RecordInvalid("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
    return AgreementExample(
        id=text_field(data, "id"),
        question=question.strip(),
        answer=answer.strip(),
        rot=text_field(data, "rot"),
        label=label,
        split=split,
        kind=f"{_source(data)}:{data.get('phenomenon') or 'unspecified'}",
    )


def _source(data: dict[str, Any]) -> str:
    source = data.get("source", "hard")
    if not isinstance(source, str) or not source.strip() or ":" in source:
        raise RecordInvalid("source", f"must be a word such as hard or written, got {source!r}")
    return source.strip()


def load_agreement_examples(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[AgreementExample], list[LoadIssue]]:
    return load_jsonl_records(path, parse_agreement_example, skip_invalid)
