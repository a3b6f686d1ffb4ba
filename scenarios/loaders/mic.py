"""Moral Integrity Corpus (MIC) CSV.

Columns used: Q, A, rot, A_agrees, rot-agree, violation-severity, moral, split.

A_agrees is 0 (disagree), 1 (neutral) or 2 (agree); rot-agree is the 1-5 consensus scale and
violation-severity the 1-5 severity scale; moral lists foundations joined by "|".
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
from scenarios.types import SPLITS, AgreementExample, Label

MIC_COLUMNS = ("Q", "A", "rot", "A_agrees", "rot-agree", "violation-severity", "moral", "split")
A_AGREES_LABELS: dict[int, Label] = {0: "disagree", 1: "neutral", 2: "agree"}


@dataclass(frozen=True)
class MicRow:
    """One MIC annotation: a question, a chatbot answer, an RoT, and the answer's agreement."""

    line: int
    question: str
    answer: str
    rot: RoT
    label: Label
    split: str

    def to_example(self, source: str = "mic") -> AgreementExample:
        return AgreementExample(
            id=f"{source}-{self.line}",
            question=self.question,
            answer=self.answer,
            rot=self.rot.text,
            label=self.label,
            split=self.split,  # type: ignore[arg-type]
            kind=source,
        )


def load_mic(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[MicRow], list[LoadIssue]]:
    collector = Collector(Path(path), skip_invalid)
    out: list[MicRow] = []
    for number, row in read_csv_rows(collector, MIC_COLUMNS):
        try:
            label_code = int_in_range(row["A_agrees"], "A_agrees", 0, 2)
            split = row["split"].strip()
            if split not in SPLITS:
                raise RecordInvalid("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
            rot = RoT(
                text=text_field(row, "rot"),
                foundations=foundations_field(row["moral"], "moral"),
                consensus=int_in_range(row["rot-agree"], "rot-agree", 1, 5, allow_none=True),
                severity=int_in_range(
                    row["violation-severity"], "violation-severity", 1, 5, allow_none=True
                ),
            )
            out.append(
                MicRow(
                    line=number,
                    question=text_field(row, "Q"),
                    answer=text_field(row, "A"),
                    rot=rot,
                    label=A_AGREES_LABELS[int(label_code)],  # type: ignore[arg-type]
                    split=split,
                )
            )
        except RecordInvalid as exc:
            collector.problem(f"line {number}", exc.field, exc.reason)
    return out, collector.issues
