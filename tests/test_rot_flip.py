"""Reversing a RoT's direction for counterfactual scorer training: only safe wordings flip."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scenarios.rot_flip import flip_rot
from scenarios.types import AgreementExample
from training.scorer import add_rot_flips


@pytest.mark.parametrize(
    ("rot", "flipped"),
    [
        ("You should return the wallet.", "You shouldn't return the wallet."),
        ("You shouldn't lie to friends.", "You should lie to friends."),
        ("Parents should not hit their kids.", "Parents should hit their kids."),
        ("It's wrong to read someone's diary.", "It's okay to read someone's diary."),
        ("It's okay to take a day off.", "It's wrong to take a day off."),
        ("It's good to thank people.", "It's bad to thank people."),
        ("You should never steal.", None),  # "should" would not be its opposite
        ("You should always pay.", None),
        ("It's rude to interrupt.", None),  # no unambiguous opposite
    ],
)
def test_only_unambiguous_wordings_flip(rot: str, flipped: str | None) -> None:
    assert flip_rot(rot) == flipped


def test_twins_swap_the_label_and_come_from_the_named_source_only() -> None:
    base = AgreementExample(
        id="w-1", question="Found a wallet. Keep it?", answer="Hand it in.",
        rot="You should return a lost wallet.", label="agree", split="train", kind="written:x",
    )  # fmt: skip
    examples = [
        base,
        replace(base, id="w-2", label="neutral"),  # neutral: not flipped
        replace(base, id="w-3", rot="It's rude to stare."),  # no safe opposite
        replace(base, id="d-1", kind="own-rot"),  # another source
    ]
    out = add_rot_flips(examples, {"written": 5}, seed=0)
    twins = out[len(examples) :]
    assert [(t.id, t.rot, t.label, t.kind) for t in twins] == [
        ("w-1/flipped", "You shouldn't return a lost wallet.", "disagree", "flipped:written:x")
    ]
    assert add_rot_flips(examples, {}, seed=0) == examples
