"""DIT likelihood-mode arithmetic on hand-made numbers: P(r), E[r], ties, order averaging, and
the positional-bias reliability line."""

from __future__ import annotations

import math

import pytest

from evaluators.dit import (
    expected_rating,
    order_averaged_p,
    position_reliable,
    rank_by_expected,
    rating_probabilities,
)
from scenarios.types import Dilemma, Statement

STAGES = ["6", "5", "4", "3", "2", "M", "2", "3", "4", "5", "6", "M"]


def dilemma() -> Dilemma:
    statements = tuple(Statement(f"s{i}", s) for i, s in enumerate(STAGES))
    return Dilemma("d", "t", "", "story", "q?", ("a", "b", "c"), statements)


def test_probabilities_and_expected_rating_by_hand() -> None:
    probs = rating_probabilities([math.log(v) for v in (0.1, 0.2, 0.3, 0.4, 1e-300)])
    assert probs == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.0])
    assert expected_rating(probs) == pytest.approx(0.1 + 0.4 + 0.9 + 1.6)  # 3.0
    # a constant added to every candidate (a prompt cost) changes nothing
    assert rating_probabilities([-5, -5, -5, -5, -5]) == pytest.approx([0.2] * 5)
    assert expected_rating([0.2] * 5) == pytest.approx(3.0)


def test_ties_go_by_statement_not_by_position() -> None:
    keys = [f"d/{i}" for i in range(4)]
    flat = rank_by_expected([3.0] * 4, keys)
    # the same statements shown in reverse keep their order among themselves
    assert [keys[i] for i in flat] == [
        list(reversed(keys))[i] for i in rank_by_expected([3.0] * 4, list(reversed(keys)))
    ]
    assert rank_by_expected([1.0, 4.0, 2.0, 5.0], keys) == [3, 1, 2, 0]


def test_order_averaging_reduces_position() -> None:
    """A bot that rates whatever is shown in positions 1-4 at 5 and the rest at 1.

    Shown in the original order it puts 5 on s0-s3 (stages 6, 5, 4, 3); shown reversed, on
    s11-s8 (M, 6, 5, 4). Averaged: s0-s3 and s8-s11 are each 3.0, the middle 1.0, so the top four
    are decided by the tie rule among eight statements of which four (s0, s1, s9, s10) are
    stage 5/6 -- neither presentation's own P survives."""
    d = dilemma()
    forward, backward = tuple(range(12)), tuple(reversed(range(12)))
    first = [5.0] * 4 + [1.0] * 8
    reversed_shown = [1.0] * 8 + [5.0] * 4
    out = order_averaged_p([("d", forward, first), ("d", backward, reversed_shown)], [d])
    assert out is not None and out["administrations"] == {"d": 2}
    assert out["statement_orders"] == {"d": 2}
    keys = [f"d/{i}" for i in range(12)]
    mean = [3.0] * 4 + [1.0] * 4 + [3.0] * 4
    top = rank_by_expected(mean, keys)[:4]
    assert set(top) <= {0, 1, 2, 3, 8, 9, 10, 11}
    points = sum(p for p, i in zip((4, 3, 2, 1), top, strict=True) if STAGES[i] in ("5", "6"))
    assert out["p_score"] == pytest.approx(10.0 * points)
    # a content-driven bot: stage 5/6 rated 5 in any order -> P = 100
    content = [5.0 if s in ("5", "6") else 2.0 for s in STAGES]
    runs = [("d", forward, content), ("d", backward, content), ("d", forward, content)]
    assert order_averaged_p(runs, [d])["p_score"] == pytest.approx(100.0)  # type: ignore[index]
    # one statement order averages nothing away: no figure
    assert order_averaged_p([("d", forward, content)] * 3, [d]) is None
    assert order_averaged_p([], [d]) is None
    with pytest.raises(ValueError, match="12 statements"):
        order_averaged_p([("d", forward, [1.0] * 5)], [d])


def test_position_reliability_line() -> None:
    # chance 1/3 over 4 x 24 = 96 ranked items: se = sqrt(2/9 / 96) = 0.0481, line 0.3333 + 0.0791
    line = 1 / 3 + 1.645 * math.sqrt((1 / 3) * (2 / 3) / 96)
    assert position_reliable(line - 1e-6, 1 / 3, 24) is True
    assert position_reliable(line + 1e-6, 1 / 3, 24) is False
    assert position_reliable(1.0, 1 / 3, 2) is False  # always ranking the first four shown
    assert position_reliable(None, 1 / 3, 0) is None
