"""Scorer training on MIC-format data: the §3 augmentation by hand, and the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evaluators.agreement import AgreementItem, AgreementScorer
from moralsim.cli import app
from scenarios.agreement_examples import augment_agreement_examples
from scenarios.types import AgreementExample

HEADER = "Q,A,rot,A_agrees,rot-agree,violation-severity,moral,split\n"
ROWS = [
    ("is it okay to lie ?", "no you should not lie .", "it is wrong to lie .", 2, "train"),
    ("is it okay to lie ?", "yes it is okay .", "it is wrong to lie .", 0, "train"),
    ("should you lie to a friend ?", "no .", "you should not lie to a friend .", 2, "train"),
    ("is it wrong to lie ?", "yes it is wrong .", "it is wrong to lie .", 2, "dev"),
    ("should you lie ?", "yes you should .", "you should not lie .", 0, "dev"),
]


def example(i: int, q: str, a: str, rot: str, label: str, split: str) -> AgreementExample:
    return AgreementExample(f"e{i}", q, a, rot, label, split, "mic")  # type: ignore[arg-type]


def test_augmentation_adds_four_neutrals_per_question() -> None:
    rows = [example(i, q, a, r, ["disagree", "neutral", "agree"][y], s) for i, (q, a, r, y, s)
            in enumerate(ROWS)]  # fmt: skip
    out = augment_agreement_examples(rows, seed=1)
    added = out[len(rows) :]
    # train has 2 distinct questions with another question's RoT to borrow: 4 neutrals each;
    # dev has 2 questions, each with the other's RoT: 4 each
    assert len(added) == 4 * 4 and all(e.label == "neutral" for e in added)
    kinds = [e.kind for e in added if e.question == "is it okay to lie ?"]
    assert kinds == ["mismatched-rot", "non-answer", "empty-answer", "restated-answer"]
    mismatched = next(e for e in added if e.kind == "mismatched-rot" and e.split == "train")
    assert mismatched.rot == "you should not lie to a friend ."
    restated = next(e for e in added if e.kind == "restated-answer")
    assert restated.rot == restated.answer
    assert {e.split for e in added if e.question == "should you lie ?"} == {"dev"}
    assert augment_agreement_examples(rows, seed=1) == out  # seeded


def test_train_scorer_on_mic_saves_a_folder_the_scorer_loads(
    tiny_encoder: Path, tmp_path: Path
) -> None:
    csv = tmp_path / "mic.csv"
    csv.write_text(HEADER + "".join(f'"{q}","{a}","{r}",{y},4,2,care-harm,{s}\n'
                                    for q, a, r, y, s in ROWS))  # fmt: skip
    out = tmp_path / "scorer"
    result = CliRunner().invoke(
        app,
        ["train", "scorer", "--output", str(out), "--mic", str(csv),
         "--base-model", str(tiny_encoder), "--epochs", "1", "--batch-size", "4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "5 MIC rows + 16 neutral augmentations" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dev"]["n"] == 2 + 8
    value = AgreementScorer(str(out)).score(
        [AgreementItem("is it okay to lie ?", "no", "it is wrong to lie .")]
    )
    assert -1.0 <= float(value[0]) <= 1.0
