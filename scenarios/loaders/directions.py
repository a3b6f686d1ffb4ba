"""RoT directions: which way a rule of thumb points on the act a question asks about.

One JSON object per line: question, rot, direction (for / against / unrelated / open) and
optionally second_rater (the same judgment by a second, independent reader). "for": an answer
"yes, go ahead" agrees with the RoT; "against": it disagrees; "unrelated": the RoT says nothing
about the act; "open": the question proposes no act to approve or reject. The factored
agreement scorer (evaluators.factored) learns its direction classifier from these and, in a
run, takes a pack's stated direction for its own (question, RoT) pairs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import LoadIssue, RecordInvalid, load_jsonl_records, text_field
from scenarios.types import RotDirection

DIRECTIONS: tuple[str, ...] = ("for", "against", "unrelated", "open")
KEYS = ("question", "rot", "direction", "second_rater")


def parse_rot_direction(data: dict[str, Any]) -> RotDirection:
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    for key in ("direction", "second_rater"):
        value = data.get(key)
        if (key == "direction" or value is not None) and value not in DIRECTIONS:
            raise RecordInvalid(key, f"must be one of {', '.join(DIRECTIONS)}, got {value!r}")
    return RotDirection(
        question=text_field(data, "question"),
        rot=text_field(data, "rot"),
        direction=data["direction"],
        second_rater=data.get("second_rater"),
    )


def load_rot_directions(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[RotDirection], list[LoadIssue]]:
    return load_jsonl_records(path, parse_rot_direction, skip_invalid)
