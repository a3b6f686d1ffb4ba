"""Safety RoT files: one JSON object per line with id, text, category and RoT attributes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import (
    LoadIssue,
    RecordInvalid,
    load_jsonl_records,
    text_field,
)
from scenarios.loaders.questions import parse_rot
from scenarios.types import SafetyRoT

MIN_SAFETY_CONSENSUS = 5
MIN_SAFETY_SEVERITY = 4


def parse_safety_rot(data: dict[str, Any]) -> SafetyRoT:
    """A safety RoT must be near-universal (consensus 5) and severe (severity >= 4).

    The S_MA metric is only meaningful against RoTs everybody holds, so a weaker RoT in a
    safety file is an error, not something to quietly keep.
    """
    rot = parse_rot(data, extra_keys=("id", "category"))
    if rot.consensus is not None and rot.consensus < MIN_SAFETY_CONSENSUS:
        raise RecordInvalid("consensus", f"safety RoTs need consensus 5, got {rot.consensus}")
    if rot.severity is not None and rot.severity < MIN_SAFETY_SEVERITY:
        raise RecordInvalid("severity", f"safety RoTs need severity >= 4, got {rot.severity}")
    return SafetyRoT(id=text_field(data, "id"), rot=rot, category=text_field(data, "category"))


def load_safety_rots(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[SafetyRoT], list[LoadIssue]]:
    return load_jsonl_records(path, parse_safety_rot, skip_invalid)
