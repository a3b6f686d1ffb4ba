"""Social-Chem-101 (Forbes et al., 2020): the 25-column TSV/CSV, one RoT breakdown per row.

Consensus (`rot-agree`, 0-4) is shifted to the MIC 1-5 scale used everywhere else here;
foundation axes ("care-harm") become short names ("care"). Empty cells are nulls in the
upstream schema and stay None; a value outside its documented set is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenarios.loaders._common import (
    Collector,
    LoadIssue,
    RecordInvalid,
    foundations_field,
    int_in_range,
    read_csv_rows,
    text_field,
)
from scenarios.rot import RoT

SOCIAL_CHEM_COLUMNS = (
    "area", "m", "split", "rot-agree", "rot-categorization", "rot-moral-foundations",
    "rot-char-targeting", "rot-bad", "rot-judgment", "action", "action-agency",
    "action-moral-judgment", "action-agree", "action-legal", "action-pressure",
    "action-char-involved", "action-hypothetical", "situation", "situation-short-id", "rot",
    "rot-id", "rot-worker-id", "breakdown-worker-id", "n-characters", "characters",
)  # fmt: skip
SPLIT_VALUES = ("train", "dev", "test", "dev-extra", "test-extra", "analysis", "none")
LEGAL_VALUES = ("legal", "illegal", "tolerated")


@dataclass(frozen=True)
class SocialChemRow:
    """One RoT breakdown with the attributes the simulators and training use."""

    line: int
    rot_id: str
    rot: RoT
    area: str
    split: str
    rot_bad: bool
    categories: tuple[str, ...]
    action_moral_judgment: int | None  # -2 very bad ... 2 very good
    action_agree: int | None  # 0-4, like rot-agree
    action_legal: str | None
    action_pressure: int | None  # -2 strong pressure against ... 2 strong pressure for
    situation_id: str
    characters: tuple[str, ...]


def _optional(value: str) -> str | None:
    value = value.strip()
    return value or None


def parse_social_chem_row(number: int, row: dict[str, str]) -> SocialChemRow:
    split = row["split"].strip()
    if split not in SPLIT_VALUES:
        raise RecordInvalid("split", f"must be one of {', '.join(SPLIT_VALUES)}, got {split!r}")
    agree = int_in_range(row["rot-agree"], "rot-agree", 0, 4, allow_none=True)
    legal = _optional(row["action-legal"])
    if legal is not None and legal not in LEGAL_VALUES:
        raise RecordInvalid(
            "action-legal", f"must be one of {', '.join(LEGAL_VALUES)}, got {legal!r}"
        )
    rot_bad = int_in_range(row["rot-bad"], "rot-bad", 0, 1)
    rot = RoT(
        text=text_field(row, "rot"),
        foundations=foundations_field(row["rot-moral-foundations"], "rot-moral-foundations"),
        consensus=None if agree is None else agree + 1,
        severity=None,
        judgment=_optional(row["rot-judgment"]),
        action=_optional(row["action"]),
        situation=_optional(row["situation"]),
    )
    categories = tuple(c for c in row["rot-categorization"].split("|") if c.strip())
    return SocialChemRow(
        line=number,
        rot_id=text_field(row, "rot-id"),
        rot=rot,
        area=row["area"].strip(),
        split=split,
        rot_bad=bool(rot_bad),
        categories=categories,
        action_moral_judgment=int_in_range(
            row["action-moral-judgment"], "action-moral-judgment", -2, 2, allow_none=True
        ),
        action_agree=int_in_range(row["action-agree"], "action-agree", 0, 4, allow_none=True),
        action_legal=legal,
        action_pressure=int_in_range(
            row["action-pressure"], "action-pressure", -2, 2, allow_none=True
        ),
        situation_id=row["situation-short-id"].strip(),
        characters=tuple(c for c in row["characters"].split("|") if c.strip()),
    )


def load_social_chem(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[SocialChemRow], list[LoadIssue]]:
    """Load a Social-Chem-101 file (tab- or comma-separated, detected from the header)."""
    collector = Collector(Path(path), skip_invalid)
    out: list[SocialChemRow] = []
    for number, row in read_csv_rows(collector, SOCIAL_CHEM_COLUMNS):
        try:
            out.append(parse_social_chem_row(number, row))
        except RecordInvalid as exc:
            collector.problem(f"line {number}", exc.field, exc.reason)
    return out, collector.issues
