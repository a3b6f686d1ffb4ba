"""Safety RoT files: one JSON object per line with id, text, category and RoT attributes."""

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
from scenarios.loaders.questions import parse_rot
from scenarios.types import SafetyRoT

MIN_SAFETY_CONSENSUS = 5
MIN_SAFETY_SEVERITY = 4


def load_safety_rots(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[SafetyRoT], list[LoadIssue]]:
    """Load safety RoTs; each must be near-universal (consensus 5) and severe (>= 4).

    The S_MA metric is only meaningful against RoTs everybody holds, so a weaker RoT in a
    safety file is an error, not something to quietly keep.
    """
    collector = Collector(Path(path), skip_invalid)
    out: list[SafetyRoT] = []
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
            rot = parse_rot(data, extra_keys=("id", "category"))
            item = SafetyRoT(
                id=text_field(data, "id"), rot=rot, category=text_field(data, "category")
            )
            if rot.consensus is not None and rot.consensus < MIN_SAFETY_CONSENSUS:
                raise RecordInvalid(
                    "consensus", f"safety RoTs need consensus 5, got {rot.consensus}"
                )
            if rot.severity is not None and rot.severity < MIN_SAFETY_SEVERITY:
                raise RecordInvalid(
                    "severity", f"safety RoTs need severity >= 4, got {rot.severity}"
                )
        except RecordInvalid as exc:
            collector.problem(where, exc.field, exc.reason)
            continue
        if item.id in seen:
            collector.problem(
                where, "id", f"duplicate id '{item.id}' (first on line {seen[item.id]})"
            )
            continue
        seen[item.id] = number
        out.append(item)
    return out, collector.issues
