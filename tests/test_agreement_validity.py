"""Scorer-validity figures on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.agreement_validity import (
    confusion_matrix,
    labelled_report,
    macro_f1,
    pair_report,
    pairwise_hits,
    sign_hits,
)

# Four items; rows are P(agree), P(neutral), P(disagree).
PROBS = np.array(
    [
        [0.6, 0.3, 0.1],  # gold agree, predicted agree, AS +0.5
        [0.2, 0.5, 0.3],  # gold agree, predicted neutral, AS -0.1 (wrong sign)
        [0.1, 0.2, 0.7],  # gold disagree, predicted disagree, AS -0.6
        [0.4, 0.4, 0.2],  # gold neutral, predicted agree (argmax takes the first of a tie)
    ]
)
GOLD = ["agree", "agree", "disagree", "neutral"]


def test_confusion_and_macro_f1_by_hand() -> None:
    predicted = ["agree", "neutral", "disagree", "agree"]
    counts = confusion_matrix(GOLD, predicted)
    assert counts["agree"] == {"agree": 1, "neutral": 1, "disagree": 0}
    assert counts["neutral"] == {"agree": 1, "neutral": 0, "disagree": 0}
    assert counts["disagree"] == {"agree": 0, "neutral": 0, "disagree": 1}
    # agree: tp 1, fp 1, fn 1 -> 0.5; neutral: tp 0 -> 0; disagree: tp 1 -> 1.0
    assert macro_f1(counts) == pytest.approx((0.5 + 0.0 + 1.0) / 3)


def test_sign_hits_ignore_neutral_and_count_zero_as_a_miss() -> None:
    assert sign_hits(["agree", "disagree", "neutral", "agree"], [0.2, -0.1, 0.9, 0.0]) == (2, 3)


def test_pairwise_is_strict() -> None:
    assert pairwise_hits([0.5, 0.1, -0.2], [0.4, 0.1, -0.3]) == 2


def test_labelled_report_by_hand() -> None:
    report = labelled_report("hand", GOLD, PROBS, ["neg", "neg", "neg", "flat"])
    assert report.n == 4
    assert report.accuracy == pytest.approx(0.5)
    assert report.sign_accuracy == pytest.approx(2 / 3)
    assert report.n_signed == 3
    assert report.by_phenomenon["neg"] == {
        "n": 3,
        "accuracy": pytest.approx(2 / 3),
        "sign_accuracy": pytest.approx(2 / 3),
        "n_signed": 3,
    }
    assert report.by_phenomenon["flat"]["sign_accuracy"] is None
    assert report.to_dict()["confusion"]["neutral"]["agree"] == 1


def test_pair_report_by_hand() -> None:
    report = pair_report("pairs", [0.5, -0.1], [0.2, 0.3])
    assert report.pairwise_accuracy == pytest.approx(0.5)
    # follow: +0.5 right, -0.1 wrong; break: +0.2 wrong, +0.3 wrong
    assert report.sign_accuracy == pytest.approx(0.25)
    assert report.mean_as_follow == pytest.approx(0.2)


def test_empty_sets_are_refused() -> None:
    with pytest.raises(ValueError, match="no items"):
        labelled_report("x", [], np.zeros((0, 3)))
    with pytest.raises(ValueError, match="same, non-zero"):
        pair_report("x", [0.1], [])
