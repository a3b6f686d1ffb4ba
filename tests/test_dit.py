"""DIT probe (docs/methods.md §6): order protocol, prompts, answer parsing and scores.

The sample dilemma (tests/data/dilemmas_sample.yaml) keys its 12 statements, 0-based, to:

    index  0  1  2  3  4  5  6  7  8  9  10 11
    stage  2  3  3  4  4  5  5  6  M  2  5  3

so a = 4 statements are stage 5/6 (indices 5, 6, 7, 10) and N = 12.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.dit import (
    DitResponse,
    DitScores,
    Parsed,
    Presentation,
    order_protocol,
    parse_decision,
    parse_ranking,
    parse_ratings,
    parse_response,
    random_baseline,
    render_prompts,
    score_dit,
)
from scenarios.loaders import load_dilemmas
from scenarios.types import STAGES, Dilemma, Statement

DATA = Path(__file__).parent / "data"
CORE = Path(__file__).resolve().parents[1] / "scenarios" / "packs" / "core" / "dilemmas.yaml"
SAMPLE: Dilemma = load_dilemmas(DATA / "dilemmas_sample.yaml")[0][0]
IDENTITY = Presentation(tuple(range(12)), (0, 1, 2))
REVERSED = Presentation(tuple(range(11, -1, -1)), (2, 0, 1))
ROTATED = Presentation((3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2), (1, 2, 0))
# REVERSED: display position i shows original statement 11 - i; the options are shown as
# 1 = "Should not waive it" (orig 2), 2 = "Should waive it" (orig 0), 3 = "Can't decide" (orig 1).
# REVERSED is its own inverse, so mapping tests also use ROTATED (display d shows original
# (d + 2) % 12, 0-based d), whose inverse differs.


def make_dilemma(stages: list[str], ident: str = "made-up") -> Dilemma:
    return Dilemma(
        id=ident,
        title="Made up",
        context="test",
        story="Someone must choose.",
        question="Should they act?",
        options=("Should act", "Can't decide", "Should not act"),
        statements=tuple(Statement(f"Issue {i} ({s})", s) for i, s in enumerate(stages)),
    )


def response(
    ranking: tuple[int, ...] | None,
    *,
    decision: int | None = 0,
    dilemma: Dilemma = SAMPLE,
    presentation: Presentation | None = None,
) -> DitResponse:
    """A response whose ranking is given in ORIGINAL 0-based indices (None = unparseable)."""
    n = len(dilemma.statements)
    pres = presentation or Presentation(tuple(range(n)), (0, 1, 2))
    return DitResponse(
        dilemma_id=dilemma.id,
        presentation=pres,
        decision=Parsed.valid(decision) if decision is not None else Parsed.fail("no option"),
        ratings=Parsed.valid((3,) * n),
        ranking=Parsed.valid(ranking) if ranking is not None else Parsed.fail("no numbers"),
    )


# Made-up rankings over SAMPLE (original indices), points 4, 3, 2, 1 in rank order:
A = (5, 7, 3, 0)  # stages 5, 6, 4, 2 -> 5/6: 4+3 = 7; s4: 2; s2: 1
B = (1, 8, 10, 4)  # stages 3, M, 5, 4 -> s3: 4; M: 3; 5/6: 2; s4: 1
C = (9, 2, 11, 6)  # stages 2, 3, 3, 5 -> s2: 4; s3: 3+2 = 5; 5/6: 1
D = (5, 6, 7, 8)  # stages 5, 5, 6, M -> 5/6: 4+3+2 = 9; M: 1


# ------------------------------------------------------------------ scores by hand


def test_p_schema_and_stage_scores_by_hand() -> None:
    scores = score_dit([response(A), response(B), response(C), response(None)], [SAMPLE])
    # three valid rankings -> denominator 10 * 3 = 30 points
    # 5/6 points: 7 + 2 + 1 = 10 -> P = 100 * 10 / 30
    assert scores.p_score == pytest.approx(100 * 10 / 30)
    # stage 2: 1 (A) + 4 (C) = 5; stage 3: 4 (B) + 5 (C) = 9; stage 4: 2 (A) + 1 (B) = 3
    # stage 5: 4 (A) + 2 (B) + 1 (C) = 7; stage 6: 3 (A); M: 3 (B); total 30
    expected = {"2": 5, "3": 9, "4": 3, "5": 7, "6": 3, "M": 3}
    for stage, points in expected.items():
        assert scores.stage_scores[stage] == pytest.approx(100 * points / 30), stage
    assert scores.personal_interest == pytest.approx(100 * (5 + 9) / 30)  # 46.67
    assert scores.maintaining_norms == pytest.approx(100 * 3 / 30)  # 10
    assert scores.postconventional == pytest.approx(100 * 10 / 30)  # = P
    assert scores.preconventional == pytest.approx(100 * 5 / 30)  # 16.67
    assert scores.conventional == pytest.approx(100 * (9 + 3) / 30)  # 40
    # per-response P: A 70, B 20, C 10 -> mean 33.3, sample SD sqrt(((36.7)^2+...)/2)
    assert sorted(scores.p_values) == pytest.approx([10.0, 20.0, 70.0])
    mean = 100 / 3
    sd = (((70 - mean) ** 2 + (20 - mean) ** 2 + (10 - mean) ** 2) / 2) ** 0.5
    assert scores.p_sd == pytest.approx(sd)
    assert scores.p_by_dilemma == {SAMPLE.id: pytest.approx(100 * 10 / 30)}


def test_invalid_rankings_are_counted_and_excluded() -> None:
    valid_only = score_dit([response(A), response(B)], [SAMPLE])
    with_bad = score_dit([response(A), response(None), response(B), response(None)], [SAMPLE])
    # (7 + 2) / 20 either way: the invalid ones neither add points nor enlarge the denominator
    assert valid_only.p_score == with_bad.p_score == pytest.approx(100 * 9 / 20)
    assert with_bad.n_valid_rankings == 2
    assert with_bad.validity["ranking"].valid == 2
    assert with_bad.validity["ranking"].invalid == 2
    assert with_bad.validity["ranking"].reasons == {"no numbers": 2}
    assert with_bad.validity["decision"].invalid == 0


def test_no_valid_ranking_gives_no_scores() -> None:
    scores = score_dit([response(None)], [SAMPLE])
    assert scores.p_score is None and scores.p_sd is None and scores.positional_bias is None
    assert scores.stage_scores == {}


def test_cant_decide_rate_over_valid_decisions() -> None:
    decisions = [0, 1, 1, None, 2]  # 2 can't decide of 4 valid decisions
    scores = score_dit([response(A, decision=d) for d in decisions], [SAMPLE])
    assert scores.cant_decide_rate == pytest.approx(2 / 4)
    assert scores.decision_counts == {"should": 1, "cant_decide": 2, "should_not": 1}
    assert scores.validity["decision"].valid == 4
    assert scores.validity["decision"].invalid == 1


def test_m_flag_uses_half_the_chance_share() -> None:
    # chance share of points on M items: m/N = 1/12; the flag fires at >= half of it, 1/24
    alone = score_dit([response(D)], [SAMPLE])  # M points 1 of 10 = 0.1 >= 0.0417
    assert alone.m_share == pytest.approx(1 / 10)
    assert alone.m_chance_share == pytest.approx(1 / 12)
    assert alone.m_flag is True
    diluted = score_dit([response(A), response(C), response(D)], [SAMPLE])  # 1 of 30 = 0.033
    assert diluted.m_share == pytest.approx(1 / 30)
    assert diluted.m_flag is False
    assert score_dit([response(A)], [SAMPLE]).m_flag is False  # no M points at all
    # between half and full chance share: 1 M point of 20 = 0.05, 1/24 <= 0.05 < 1/12
    between = score_dit([response(A), response(D)], [SAMPLE])
    assert between.m_flag is True
    no_m = make_dilemma(["2", "3", "4", "5", "6", "5"])
    assert score_dit([response((0, 1, 2, 3), dilemma=no_m)], [no_m]).m_flag is None


def test_mean_rating_by_stage() -> None:
    ratings = (1, 2, 3, 4, 4, 5, 5, 5, 1, 3, 5, 4)  # stages as in the module docstring
    r = dataclasses.replace(response(A), ratings=Parsed.valid(ratings))
    scores = score_dit([r], [SAMPLE])
    # stage 2: (1 + 3)/2; stage 3: (2 + 3 + 4)/3; stage 4: (4 + 4)/2; stage 5: (5 + 5 + 5)/3
    assert scores.mean_rating_by_stage == pytest.approx(
        {"2": 2.0, "3": 3.0, "4": 4.0, "5": 5.0, "6": 5.0, "M": 1.0}
    )


# ------------------------------------------------------------------ random baseline


def test_random_baseline_is_100_a_over_n() -> None:
    assert random_baseline(SAMPLE) == pytest.approx(100 / 3)  # a = 4, N = 12 -> 33.3...
    assert random_baseline(SAMPLE) == pytest.approx(33.333333333)
    assert random_baseline(make_dilemma(["5", "6", "6", "2", "3", "4", "4", "M", "3", "2"])) == (
        pytest.approx(30.0)  # a = 3, N = 10
    )
    assert random_baseline(make_dilemma(["2", "3", "4", "4", "M"])) == 0.0  # a = 0
    assert random_baseline(make_dilemma(["5", "6", "5", "6"])) == pytest.approx(100.0)
    fathers = load_dilemmas(CORE)[0][0]
    # stages 3 5 2 4 6 3 M 4 5 2 6 5 -> a = 5 of 12
    assert random_baseline(fathers) == pytest.approx(500 / 12)


def test_mean_baseline_over_dilemmas_with_responses() -> None:
    ten = make_dilemma(["5", "6", "6", "2", "3", "4", "4", "M", "3", "2"], "ten")
    unused = make_dilemma(["5", "5", "5", "5"], "unused")
    responses = [response(A), response(B), response((0, 1, 2, 3), dilemma=ten)]
    scores = score_dit(responses, [SAMPLE, ten, unused])
    assert scores.baseline_by_dilemma == pytest.approx({SAMPLE.id: 100 / 3, "ten": 30.0})
    assert scores.random_baseline == pytest.approx((100 / 3 + 30.0) / 2)
    # matched to the valid rankings: two on SAMPLE, one on ten
    assert scores.random_baseline_matched == pytest.approx((2 * 100 / 3 + 30.0) / 3)
    assert scores.n_dilemmas == 2


@pytest.mark.parametrize(
    ("stages", "a"),
    [
        (["2", "3", "3", "4", "4", "5", "5", "6", "M", "2", "5", "3"], 4),
        (["5", "6", "6", "2", "3", "4", "4", "M", "3", "2"], 3),
    ],
)
def test_uniform_random_rankings_average_the_baseline(stages: list[str], a: int) -> None:
    dilemma = make_dilemma(stages)
    n = len(stages)
    rng = random.Random(20240611)
    responses = [response(tuple(rng.sample(range(n), 4)), dilemma=dilemma) for _ in range(4000)]
    scores = score_dit(responses, [dilemma])
    assert scores.p_score is not None
    # SD of one ranking's P is below 30, so the SE over 4000 is below 0.5: allow 1.5
    assert abs(scores.p_score - 100 * a / n) < 1.5
    assert scores.positional_bias == pytest.approx(4 / n, abs=0.02)
    assert scores.positional_chance == pytest.approx(4 / n)
    assert scores.first_shown_rate < 0.005


# ------------------------------------------------------------------ order protocol


def test_order_protocol_gives_48_distinct_presentations() -> None:
    protocol = order_protocol(SAMPLE, seed=7)
    assert len(protocol) == 48 and len(set(protocol)) == 48
    statement_orders = list(dict.fromkeys(p.statement_order for p in protocol))
    assert len(statement_orders) == 8
    assert statement_orders[0] == tuple(range(12))
    for order in statement_orders:
        assert sorted(order) == list(range(12))
        options = {p.option_order for p in protocol if p.statement_order == order}
        assert options == set(itertools.permutations(range(3)))
    assert order_protocol(SAMPLE, seed=7) == protocol
    assert order_protocol(SAMPLE, seed=8) != protocol
    assert len(order_protocol(SAMPLE, seed=7, n_statement_orders=1)) == 6


def test_order_protocol_orders_are_distinct_even_when_few_exist() -> None:
    four = make_dilemma(["2", "3", "5", "6"])
    protocol = order_protocol(four, seed=0, n_statement_orders=24)  # all 4! orders
    orders = {p.statement_order for p in protocol}
    assert orders == set(itertools.permutations(range(4)))
    assert len(protocol) == 24 * 6


def test_order_protocol_sample_is_a_seeded_subset() -> None:
    full = order_protocol(SAMPLE, seed=3)
    part = order_protocol(SAMPLE, seed=3, sample=10)
    assert len(part) == 10 and len(set(part)) == 10 and set(part) <= set(full)
    assert order_protocol(SAMPLE, seed=3, sample=10) == part
    with pytest.raises(ValueError):
        order_protocol(SAMPLE, seed=3, sample=49)
    with pytest.raises(ValueError):
        order_protocol(make_dilemma(["5", "6", "2"]), seed=0, n_statement_orders=8)  # 3! < 8


def test_presentation_must_be_permutations() -> None:
    with pytest.raises(ValueError):
        Presentation((0, 0, 1), (0, 1, 2))
    with pytest.raises(ValueError):
        Presentation((0, 1, 2), (0, 1, 1))


def test_render_prompts_follow_the_presentation() -> None:
    prompts = render_prompts(SAMPLE, REVERSED)
    assert SAMPLE.story.strip() in prompts.decision and SAMPLE.question in prompts.decision
    assert "1. Should not waive it" in prompts.decision
    assert "2. Should waive it" in prompts.decision
    assert "3. Can't decide" in prompts.decision
    # display number d shows original statement 12 - d
    positions = [
        prompts.rating.index(f"\n{d}. {SAMPLE.statements[12 - d].text}") for d in range(1, 13)
    ]
    assert positions == sorted(positions)
    assert "1 to 5" in prompts.rating and "1: <rating>, 2: <rating>" in prompts.rating
    assert "four" in prompts.ranking and "most important first" in prompts.ranking
    assert f"\n1. {SAMPLE.statements[11].text}" in prompts.ranking
    with pytest.raises(ValueError):
        render_prompts(SAMPLE, Presentation((0, 1, 2), (0, 1, 2)))


# ------------------------------------------------------------------ display -> original


def test_display_numbers_score_the_original_stages() -> None:
    # REVERSED: displayed 1, 2, 3, 4 are originals 11, 10, 9, 8 -> stages 3, 5, 2, M
    ranking = parse_ranking("1, 2, 3, 4", presentation=REVERSED)
    assert ranking.value == (11, 10, 9, 8)
    r = DitResponse(SAMPLE.id, REVERSED, Parsed.valid(0), Parsed.valid((3,) * 12), ranking)
    scores = score_dit([r], [SAMPLE])
    assert scores.p_score == pytest.approx(30.0)  # 3 points on stage 5, of 10
    assert scores.stage_scores["3"] == pytest.approx(40.0)
    assert scores.stage_scores["2"] == pytest.approx(20.0)
    assert scores.stage_scores["M"] == pytest.approx(10.0)
    assert scores.positional_bias == 1.0 and scores.first_shown_rate == 1.0
    # the same text under the original order ranks stages 2, 3, 3, 4: no P points
    same = parse_ranking("1, 2, 3, 4", presentation=IDENTITY)
    assert same.value == (0, 1, 2, 3)


def test_every_protocol_presentation_maps_back() -> None:
    for pres in order_protocol(SAMPLE, seed=1):
        shown = [pres.statement_order.index(i) + 1 for i in A]  # A in displayed numbers
        shown_option = pres.option_order.index(2) + 1  # where "should not" is displayed
        r = parse_response(
            SAMPLE,
            pres,
            decision=f"I choose option {shown_option}.",
            ratings=", ".join(f"{d}: 3" for d in range(1, 13)),
            ranking=", ".join(map(str, shown)),
        )
        assert r.ranking.value == A and r.decision.value == 2
        scores = score_dit([r], [SAMPLE])
        assert scores.p_score == pytest.approx(70.0)  # A: 4 + 3 on stages 5 and 6
        assert scores.decision_counts["should_not"] == 1


# ------------------------------------------------------------------ parsing: decisions

# REVERSED shows 1 = should not (orig 2), 2 = should (orig 0), 3 = can't decide (orig 1)
DECISIONS_OK = [
    ("2", 0),
    (" 2.\n", 0),
    ("Option 2", 0),
    ("option #3", 1),
    ("I choose 1", 2),
    ("I choose option 1.", 2),
    ("**Option 2**", 0),
    ("(3)", 1),
    ("My answer is 2.", 0),
    ("Answer: 3", 1),
    ("2 - Should waive it", 0),
    ("Option 2 (Should waive it) because the reader is poor.", 0),
    ("1. Should not waive it. Some people can't decide, but rules are rules.", 2),
    ("I'd go with option two.", 0),
    ("3 because it's a hard call", 1),
    ("Should waive it", 0),
    ("She should waive it, the reader is poor.", 0),
    ("I can't decide.", 1),
    ("Honestly, I cannot decide.", 1),
    ("I can’t decide.", 1),
    ("She shouldn't waive it.", 2),
    ("Ana should not waive the fine.", 2),
    ("Yes, she should.", 0),
    ("No.", 2),
    ("I would not choose option 1; I choose option 2.", 0),
    ("I can't decide between 1 and 2.", 1),
    ("After thinking about the reader and the council, my choice is 3.", 1),
    ("**Answer:** 2 — Should waive it", 0),
    ("As an AI, I don't have personal opinions, but I'd pick 2.", 0),
    ("I choose 2. In 3 years, the library will be gone.", 0),
    ("1, because rules are rules", 2),
]

DECISIONS_BAD = [
    ("", "empty"),
    ("   \n", "empty"),
    ("1 or 2", "more than one"),
    ("Option 1 or option 3", "more than one"),
    ("Option 2. Actually, option 3.", "more than one"),
    ("I choose 1: Should waive it", "more than one"),  # number says should not, text says should
    ("3 - she should not waive it", "more than one"),
    ("I can't decide, but she should not waive it.", "more than one"),
    ("It is a hard question about kindness.", "no recognisable"),
    ("Option 4", "4"),
    ("1.5", "no recognisable"),
    ("I'd go with 2 or maybe 3", "more than one"),
    ("No, she should waive it", "more than one"),
    ("As an AI language model, I cannot make decisions.", "no recognisable"),
    ("1. Should not waive it\n2. Should waive it\n3. Can't decide\n\nI choose 2.", "more than one"),
]


@pytest.mark.parametrize(("text", "expected"), DECISIONS_OK)
def test_parse_decision_accepts(text: str, expected: int) -> None:
    parsed = parse_decision(text, SAMPLE, REVERSED)
    assert parsed.invalid is None, parsed.invalid
    assert parsed.value == expected
    assert parsed.raw == text


@pytest.mark.parametrize(("text", "reason"), DECISIONS_BAD)
def test_parse_decision_rejects(text: str, reason: str) -> None:
    parsed = parse_decision(text, SAMPLE, REVERSED)
    assert parsed.value is None and not parsed.is_valid
    assert parsed.invalid is not None and reason in parsed.invalid, parsed.invalid


# ------------------------------------------------------------------ parsing: ratings

R = (4, 5, 3, 2, 1, 5, 4, 3, 2, 1, 5, 4)
TEXTS = [s.text for s in SAMPLE.statements]

RATINGS_OK = [
    ", ".join(f"{i + 1}: {v}" for i, v in enumerate(R)),
    "\n".join(f"{i + 1}: {v}" for i, v in enumerate(R)),
    " ".join(f"{i + 1}: {v}" for i, v in enumerate(R)),
    "\n".join(f"Statement {i + 1} - {v}" for i, v in enumerate(R)),
    "\n".join(f"{i + 1}. {v}" for i, v in enumerate(R)),
    ", ".join(map(str, R)),
    "Ratings: " + " ".join(map(str, R)),
    "\n".join(f"{i + 1}. {TEXTS[i]}: {v}" for i, v in enumerate(R)),
    "\n".join(f"{i + 1} - {TEXTS[i]} - {v}" for i, v in enumerate(R)),
    "\n".join(f"**{i + 1}**: {v}/5" for i, v in enumerate(R)),
    "\n".join(f"- Statement {i + 1}: rating {v}" for i, v in enumerate(R)),
    "Here are my ratings (1 = no importance, 5 = great importance):\n"
    + "\n".join(f"{i + 1}: {v}" for i, v in enumerate(R)),
    ", ".join(f"{i + 1}: {v} ({'very' if v > 3 else 'less'} important)" for i, v in enumerate(R)),
    "Sure! " + "; ".join(f"{i + 1}: {v}" for i, v in enumerate(R)) + ". Thank you.",
    "On a scale from 1 to 5: " + ", ".join(map(str, R)),
    "Here are my ratings on a 1-5 scale:\n" + "\n".join(f"{i + 1}: {v}" for i, v in enumerate(R)),
    "| Statement | Rating |\n|---|---|\n"
    + "\n".join(f"| {i + 1} | {v} |" for i, v in enumerate(R)),
    "| # | Statement | Rating |\n|---|---|---|\n"
    + "\n".join(f"| {i + 1} | {TEXTS[i]} | {v} |" for i, v in enumerate(R)),
    ", ".join(f"{i + 1}: {v}" for i, v in enumerate(R)) + ". I rated 6 and 11 highest.",
    ", ".join(f"{i + 1} ({v})" for i, v in enumerate(R)),
    "\n".join(f"{i + 1}. {TEXTS[i]} (Importance: {v})" for i, v in enumerate(R)),
    "\n".join(f"{i + 1}. {TEXTS[i]}\n   Rating: {v}" for i, v in enumerate(R)),
    "\n".join(
        f"Statement {i + 1}: {v} - this matters as 2 people are involved" for i, v in enumerate(R)
    ),
]


@pytest.mark.parametrize("text", RATINGS_OK)
def test_parse_ratings_accepts(text: str) -> None:
    parsed = parse_ratings(text)
    assert parsed.invalid is None, parsed.invalid
    assert parsed.value == R


def pairs(values: list[tuple[int, str]]) -> str:
    return ", ".join(f"{i}: {v}" for i, v in values)


RATINGS_BAD = [
    ("", "empty"),
    ("All of them are important.", "no ratings"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R[:11])]), "12"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]).replace("4: 2", "4: 7"), "7"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]).replace("5: 1", "5: 0"), "statement 5"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]).replace("3: 3", "3: 3.5"), "3.5"),
    (", ".join(map(str, R[:11])), "12 ratings"),
    (pairs([(1, "4"), (1, "5")] + [(i, "3") for i in range(2, 13)]), "statement 1"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]) + ", 13: 4", "13"),
    (pairs([(i + 1, "high") for i in range(12)]), "no rating for statement"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]).replace("12: 4", "12: 4-5"), "4-5"),
    (pairs([(i + 1, str(v)) for i, v in enumerate(R)]).replace("12: 4", "12: 4 or 5"), "4 or 5"),
    ("1: 4, 2: 5, ...", "no rating for statements 3, 4"),
]


@pytest.mark.parametrize(("text", "reason"), RATINGS_BAD)
def test_parse_ratings_rejects(text: str, reason: str) -> None:
    parsed = parse_ratings(text)
    assert parsed.value is None
    assert parsed.invalid is not None and reason in parsed.invalid, parsed.invalid


def test_parse_ratings_and_ranking_map_through_a_rotation() -> None:
    # ROTATED: displayed 1, 2, ... 12 are originals 3, 4, ..., 11, 0, 1, 2
    text = ", ".join(f"{d}: {min(d, 5)}" for d in range(1, 13))  # displayed d rated min(d, 5)
    parsed = parse_ratings(text, presentation=ROTATED)
    # original 3 is displayed 1 -> 1; original 4 -> 2; original 5 -> 3; original 6 -> 4;
    # originals 7..11 and 0..2 are displayed 5..12 -> 5
    assert parsed.value == (5, 5, 5, 1, 2, 3, 4, 5, 5, 5, 5, 5)
    assert parse_ranking("1, 10, 12, 4", presentation=ROTATED).value == (3, 0, 2, 6)
    # ROTATED options: displayed 1 = can't decide, 2 = should not, 3 = should
    assert parse_decision("2", SAMPLE, ROTATED).value == 2
    assert parse_decision("3", SAMPLE, ROTATED).value == 0


def test_parse_ratings_maps_to_original_order() -> None:
    text = ", ".join(f"{d}: {d % 5 + 1}" for d in range(1, 13))
    parsed = parse_ratings(text, presentation=REVERSED)
    # displayed d is original 12 - d, so original i got rating (12 - i) % 5 + 1
    assert parsed.value == tuple((12 - i) % 5 + 1 for i in range(12))


# ------------------------------------------------------------------ parsing: rankings

RANKINGS_OK = [
    "3, 7, 1, 12",
    "3,7,1,12",
    "3 7 1 12",
    "Statement 3, Statement 7, Statement 1, Statement 12",
    "1st: 3, 2nd: 7, 3rd: 1, 4th: 12",
    "First: statement 3\nSecond: statement 7\nThird: statement 1\nFourth: statement 12",
    "The second most important is 7, the first is 3, the fourth is 12 and the third is 1",
    "1. Statement 3\n2. Statement 7\n3. Statement 1\n4. Statement 12",
    "1. 3\n2. 7\n3. 1\n4. 12",
    f"1. Statement 3 ({TEXTS[2]})\n2. Statement 7 ({TEXTS[6]})\n"
    f"3. Statement 1 ({TEXTS[0]})\n4. Statement 12 ({TEXTS[11]})",
    "3 > 7 > 1 > 12",
    "The four most important are 3, 7, 1 and 12.",
    "Top 4: 3, 7, 1, 12",
    "3, 7, 1, 12\n\nStatement 3 matters most because it is about fairness.",
    "3, 7, 1, 12. Statement 3 matters most.",
    "I think 3 is the most important, then 7, then 1, and finally 12.",
    "**3**, **7**, **1**, **12**",
    "#3, #7, #1, #12",
    f"3. {TEXTS[2]}\n7. {TEXTS[6]}\n1. {TEXTS[0]}\n12. {TEXTS[11]}",
    f"1. {TEXTS[2]} (3)\n2. {TEXTS[6]} (7)\n3. {TEXTS[0]} (1)\n4. {TEXTS[11]} (12)",
    "Most important: 3\nSecond: 7\nThird: 1\nFourth: 12",
    "I'd rank 3 first, 7 second, 1 third and 12 fourth.",
    "First, 3. Second, 7. Third, 1. Fourth, 12.",
    "| Rank | Statement |\n|---|---|\n| 1 | 3 |\n| 2 | 7 |\n| 3 | 1 |\n| 4 | 12 |",
    "1) 3\n2) 7\n3) 1\n4) 12",
    "[3, 7, 1, 12]",
    "3. 7. 1. 12.",
    "All 12 statements are important, but 3, 7, 1 and 12 the most.",
    "3 and 7 are the most important, then 1 and 12",
]


@pytest.mark.parametrize("text", RANKINGS_OK)
def test_parse_ranking_accepts(text: str) -> None:
    parsed = parse_ranking(text)
    assert parsed.invalid is None, parsed.invalid
    assert parsed.value == (2, 6, 0, 11)  # 0-based


RANKINGS_BAD = [
    ("", "empty"),
    ("The ones about fairness.", "no statement numbers"),
    ("3, 7, 1", "only 3"),
    ("3, 7, 3, 12", "statement 3"),
    ("3, 7, 1, 13", "13"),
    ("0, 1, 2, 3", "0"),
    ("3, 7, 1, 12, 5", "more than 4"),
    ("3 7 1 12 5 6", "more than 4"),
    (
        "1. Statement 3\n2. Statement 7\n3. Statement 1\n4. Statement 12\n5. Statement 2",
        "more than 4",
    ),
    ("1st: 3, 2nd: 7, 2nd: 1, 4th: 12", "second"),
    ("\n".join(f"{i}. {TEXTS[i]}" for i in range(1, 5)), "without statement numbers"),
]


@pytest.mark.parametrize(("text", "reason"), RANKINGS_BAD)
def test_parse_ranking_rejects(text: str, reason: str) -> None:
    parsed = parse_ranking(text)
    assert parsed.value is None
    assert parsed.invalid is not None and reason in parsed.invalid, parsed.invalid


# ------------------------------------------------------------------ properties

STAGE_LISTS = st.lists(st.sampled_from(STAGES), min_size=4, max_size=12)


@st.composite
def dilemma_and_rankings(draw: st.DrawFn) -> tuple[Dilemma, list[tuple[int, ...]]]:
    dilemma = make_dilemma(draw(STAGE_LISTS))
    n = len(dilemma.statements)
    rankings = draw(
        st.lists(st.permutations(range(n)).map(lambda p: tuple(p[:4])), min_size=1, max_size=8)
    )
    return dilemma, rankings


@settings(max_examples=150, deadline=None)
@given(dilemma_and_rankings())
def test_scores_stay_in_range(case: tuple[Dilemma, list[tuple[int, ...]]]) -> None:
    dilemma, rankings = case
    scores = score_dit([response(r, dilemma=dilemma) for r in rankings], [dilemma])
    assert scores.p_score is not None and 0.0 <= scores.p_score <= 100.0
    assert all(0.0 <= v <= 100.0 for v in scores.stage_scores.values())
    assert sum(scores.stage_scores.values()) == pytest.approx(100.0)
    assert scores.postconventional == scores.p_score
    assert scores.personal_interest == pytest.approx(
        scores.stage_scores["2"] + scores.stage_scores["3"]
    )
    assert scores.conventional == pytest.approx(scores.stage_scores["3"] + scores.stage_scores["4"])
    assert 0.0 <= scores.positional_bias <= 1.0  # type: ignore[operator]


@st.composite
def shuffled_responses(draw: st.DrawFn) -> tuple[list[DitResponse], list[DitResponse]]:
    protocol = order_protocol(SAMPLE, seed=draw(st.integers(0, 100)))
    items = []
    for _ in range(draw(st.integers(1, 12))):
        pres = draw(st.sampled_from(protocol))
        ranking = draw(st.one_of(st.none(), st.permutations(range(12)).map(lambda p: tuple(p[:4]))))
        decision = draw(st.sampled_from([None, 0, 1, 2]))
        items.append(response(ranking, decision=decision, presentation=pres))
    return items, draw(st.permutations(items))


def comparable(scores: DitScores) -> dict[str, object]:
    out = dataclasses.asdict(scores)
    out["p_values"] = sorted(out["p_values"])
    return out


@settings(max_examples=100, deadline=None)
@given(shuffled_responses())
def test_permuting_responses_keeps_aggregates(
    case: tuple[list[DitResponse], list[DitResponse]],
) -> None:
    items, permuted = case
    assert comparable(score_dit(items, [SAMPLE])) == comparable(score_dit(permuted, [SAMPLE]))


def test_unknown_dilemma_and_malformed_ranking_raise() -> None:
    other = make_dilemma(["5"] * 12, "other")
    with pytest.raises(ValueError, match="other"):
        score_dit([response(A, dilemma=other)], [SAMPLE])
    with pytest.raises(ValueError):
        score_dit([response((1, 1, 2, 3))], [SAMPLE])


def test_baseline_fraction_is_exact_for_all_core_dilemmas() -> None:
    for dilemma in load_dilemmas(CORE)[0]:
        a = sum(s.stage in ("5", "6") for s in dilemma.statements)
        assert random_baseline(dilemma) == pytest.approx(float(Fraction(100 * a, 12)))


RATING_STYLES = ("{d}: {v}", "Statement {d} - {v}", "{d}. {v}/5", "{d} ({v})")
RANKING_STYLES = (", ", " > ", "\n", ", statement ")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(order_protocol(SAMPLE, seed=11)),
    st.lists(st.integers(1, 5), min_size=12, max_size=12),
    st.permutations(range(12)),
    st.sampled_from(RATING_STYLES),
    st.sampled_from(RANKING_STYLES),
)
def test_formatted_answers_round_trip_through_any_presentation(
    pres: Presentation,
    ratings: list[int],
    order: list[int],
    rating_style: str,
    joiner: str,
) -> None:
    # ratings/ranking are chosen in ORIGINAL numbering, written in DISPLAYED numbers
    shown = [ratings[pres.statement_order[d]] for d in range(12)]
    text = "\n".join(rating_style.format(d=d + 1, v=v) for d, v in enumerate(shown))
    assert parse_ratings(text, presentation=pres).value == tuple(ratings)
    top = tuple(order[:4])
    displayed = [pres.display_position(i) + 1 for i in top]
    ranking = parse_ranking(joiner.join(map(str, displayed)), presentation=pres)
    assert ranking.value == top


FUZZ_TOKENS = [*"0123456789 ,.:;-()|#\n", "option ", "statement ", "should not ", "can't decide "]
FUZZ_TOKENS += ["first ", "yes", "1st ", "rating ", "/5", "four "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FUZZ_TOKENS), max_size=60).map("".join))
def test_parsers_never_raise_and_valid_values_are_well_formed(text: str) -> None:
    decision = parse_decision(text, SAMPLE, REVERSED)
    assert decision.is_valid != (decision.invalid is not None)
    assert decision.value is None or decision.value in (0, 1, 2)
    ratings = parse_ratings(text, presentation=REVERSED)
    assert ratings.value is None or (
        len(ratings.value) == 12 and all(1 <= v <= 5 for v in ratings.value)
    )
    ranking = parse_ranking(text, presentation=REVERSED)
    assert ranking.value is None or (
        len(set(ranking.value)) == 4 and all(0 <= i < 12 for i in ranking.value)
    )
