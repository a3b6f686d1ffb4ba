"""The pack question format: one JSON object per line (see the README's "Scenario packs")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import (
    LoadIssue,
    RecordInvalid,
    foundations_field,
    int_in_range,
    load_jsonl_records,
    text_field,
)
from scenarios.rot import RoT
from scenarios.types import SPLITS, MoralQuestion

QUESTION_KEYS = (
    "id",
    "question",
    "paraphrases",
    "rot",
    "answers",
    "explanation",
    "related_question",
    "related_answer",
    "related_disagree_answer",
    "split",
)
ROT_KEYS = ("text", "foundations", "consensus", "severity", "judgment", "action", "situation")


def parse_rot(data: Any, extra_keys: tuple[str, ...] = ()) -> RoT:
    """An RoT object (consensus and severity on the MIC 1-5 scales); errors name bare keys."""
    if not isinstance(data, dict):
        raise RecordInvalid(None, "must be an object with 'text', 'foundations', ...")
    unknown = sorted(set(data) - set(ROT_KEYS) - set(extra_keys))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    return RoT(
        text=text_field(data, "text"),
        foundations=foundations_field(data.get("foundations"), "foundations"),
        consensus=int_in_range(data.get("consensus"), "consensus", 1, 5),
        severity=int_in_range(data.get("severity"), "severity", 1, 5),
        judgment=data.get("judgment"),
        action=data.get("action"),
        situation=data.get("situation"),
    )


def _with_prefix(prefix: str, exc: RecordInvalid) -> RecordInvalid:
    return RecordInvalid(f"{prefix}.{exc.field}" if exc.field else prefix, exc.reason)


def parse_question(data: Any, min_paraphrases: int) -> MoralQuestion:
    if not isinstance(data, dict):
        raise RecordInvalid(None, f"expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(QUESTION_KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    paraphrases = data.get("paraphrases")
    if not isinstance(paraphrases, list):
        raise RecordInvalid("paraphrases", "must be a list of strings")
    if len(paraphrases) < min_paraphrases:
        raise RecordInvalid(
            "paraphrases",
            f"has {len(paraphrases)} paraphrases, at least {min_paraphrases} required",
        )
    cleaned = []
    for i, p in enumerate(paraphrases):
        if not isinstance(p, str) or not p.strip():
            raise RecordInvalid(f"paraphrases[{i}]", "must be a non-empty string")
        cleaned.append(p.strip())
    try:
        rot = parse_rot(data.get("rot"))
    except RecordInvalid as exc:
        raise _with_prefix("rot", exc) from None
    answers = data.get("answers")
    if not isinstance(answers, dict):
        raise RecordInvalid("answers", "must be an object with 'agree' and 'disagree'")
    try:
        agree, disagree = text_field(answers, "agree"), text_field(answers, "disagree")
    except RecordInvalid as exc:
        raise _with_prefix("answers", exc) from None
    split = data.get("split")
    if split not in SPLITS:
        raise RecordInvalid("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
    return MoralQuestion(
        id=text_field(data, "id"),
        question=text_field(data, "question"),
        paraphrases=tuple(cleaned),
        rot=rot,
        agree_answer=agree,
        disagree_answer=disagree,
        explanation=text_field(data, "explanation"),
        related_question=text_field(data, "related_question"),
        split=split,
        related_answer=text_field(data, "related_answer") if "related_answer" in data else "",
        related_disagree_answer=(
            text_field(data, "related_disagree_answer") if "related_disagree_answer" in data else ""
        ),
    )


def load_questions(
    path: str | Path, *, min_paraphrases: int = 5, skip_invalid: bool = False
) -> tuple[list[MoralQuestion], list[LoadIssue]]:
    """Load a question JSONL file; ids must be unique within it."""
    return load_jsonl_records(
        path, lambda data: parse_question(data, min_paraphrases), skip_invalid
    )


def question_to_dict(q: MoralQuestion) -> dict[str, Any]:
    """The on-disk form, for writing packs."""
    return {
        "id": q.id,
        "question": q.question,
        "paraphrases": list(q.paraphrases),
        "rot": q.rot.to_dict(),
        "answers": {"agree": q.agree_answer, "disagree": q.disagree_answer},
        "explanation": q.explanation,
        "related_question": q.related_question,
        **({"related_answer": q.related_answer} if q.related_answer else {}),
        **(
            {"related_disagree_answer": q.related_disagree_answer}
            if q.related_disagree_answer
            else {}
        ),
        "split": q.split,
    }
