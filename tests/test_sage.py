"""SaGE (docs/methods.md §5) on hand-computed graphs, its invariants, graphs and the text baselines.

Expected values are written out with plain `math` from the formulas, never by calling the code
under test, so a wrong strength, base or normaliser in evaluators.sage makes these fail.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sage import (
    SageValue,
    answer_weights,
    build_graph,
    export_graphml,
    load_graphml,
    rot_weights,
    sage_batch,
    sage_from_weights,
    sage_grouped,
    sage_scores,
)
from evaluators.text_similarity import (
    mean_pairwise_bleu,
    mean_pairwise_cosine,
    mean_pairwise_rouge_l,
)

TOL = 1e-12


def sym(n: int, upper: dict[tuple[int, int], float], diagonal: float = 1.0) -> np.ndarray:
    """An n×n symmetric matrix from its strict upper triangle (i<j) and a diagonal value."""
    w = np.full((n, n), 0.0)
    np.fill_diagonal(w, diagonal)
    for (i, j), value in upper.items():
        w[i, j] = w[j, i] = value
    return w


def h(probabilities: Sequence[float], log: Callable[[float], float]) -> float:
    """Shannon entropy −Σ p log p in the base of `log`, with 0·log 0 = 0."""
    return -sum(p * log(p) for p in probabilities if p > 0)


# --- hand-computed graphs, reference variant ------------------------------------------------


def test_reference_single_node_is_zero() -> None:
    # n = 1: no pairs, so w̄ = 0 by convention; s_1 = 0 + 1e-20, p_1 = 1, H = 0,
    # normaliser 1 (log2 1 = 0 would divide by zero) -> SaGE = 0, entropy 0.
    value = sage_from_weights(np.array([[0.7]]), "reference")
    assert value == SageValue(score=0.0, entropy=0.0, mean_weight=0.0, n=1)


def test_reference_two_nodes() -> None:
    # n = 2, w_12 = 0.6: s_1 = s_2 = 0.6 -> f equal -> p = (1/2, 1/2) -> H = 1 bit;
    # log2 2 = 1 -> normalised H = 1; w̄ = 0.6 -> SaGE = 0.6 · 1 = 0.6.
    value = sage_from_weights(sym(2, {(0, 1): 0.6}), "reference")
    assert value.n == 2
    assert value.entropy == pytest.approx(1.0, abs=TOL)
    assert value.mean_weight == pytest.approx(0.6, abs=TOL)
    assert value.score == pytest.approx(0.6, abs=TOL)


def test_reference_two_unrelated_nodes() -> None:
    # n = 2, w_12 = 0: both strengths are the 1e-20 floor -> p uniform -> H/log2 2 = 1,
    # but w̄ = 0 -> SaGE = 0.
    value = sage_from_weights(sym(2, {(0, 1): 0.0}), "reference")
    assert value.entropy == pytest.approx(1.0, abs=TOL)
    assert value.score == 0.0


def test_reference_identical_answers() -> None:
    # n = 3, all w_ij = 1: s_i = 2 -> f_i = 20^10 for all i -> p = 1/3 each ->
    # H = log2 3 -> normalised 1; w̄ = 1 -> SaGE = 1.
    value = sage_from_weights(sym(3, {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.0}), "reference")
    assert value.entropy == pytest.approx(1.0, abs=TOL)
    assert value.score == pytest.approx(1.0, abs=TOL)


def test_reference_three_nodes_unequal_weights() -> None:
    # w_12 = 0.9, w_13 = 0.5, w_23 = 0.1
    # s = (0.9+0.5, 0.9+0.1, 0.5+0.1) = (1.4, 1.0, 0.6)
    # f = (14^10, 10^10, 6^10) ≈ (2.8925e11, 1e10, 6.0466e7); Σf ≈ 2.99315e11
    # p ≈ (0.966388, 0.033410, 0.000202)
    # H ≈ 0.966388·0.049325 + 0.033410·4.903602 + 0.000202·12.273 ≈ 0.213974 bits
    # H/log2 3 ≈ 0.213974/1.584963 ≈ 0.135002
    # w̄ = (0.9+0.5+0.1)/3 = 0.5 -> SaGE ≈ 0.067501
    f = [(10 * 1.4) ** 10, (10 * 1.0) ** 10, (10 * 0.6) ** 10]
    p = [x / sum(f) for x in f]
    entropy = h(p, math.log2) / math.log2(3)
    value = sage_from_weights(sym(3, {(0, 1): 0.9, (0, 2): 0.5, (1, 2): 0.1}), "reference")
    assert value.entropy == pytest.approx(entropy, abs=TOL)
    assert value.mean_weight == pytest.approx(0.5, abs=TOL)
    assert value.score == pytest.approx(0.5 * entropy, abs=TOL)
    assert value.score == pytest.approx(0.067501, abs=1e-6)


def test_reference_negative_weight_counts_in_mean_not_in_strength() -> None:
    # w_12 = 0.8, w_13 = -0.2, w_23 = 0.4
    # strengths sum only w > 0: s = (0.8, 0.8+0.4, 0.4) = (0.8, 1.2, 0.4)
    # w̄ keeps the negative: (0.8 - 0.2 + 0.4)/3 = 1/3
    f = [(10 * 0.8) ** 10, (10 * 1.2) ** 10, (10 * 0.4) ** 10]
    p = [x / sum(f) for x in f]
    entropy = h(p, math.log2) / math.log2(3)
    value = sage_from_weights(sym(3, {(0, 1): 0.8, (0, 2): -0.2, (1, 2): 0.4}), "reference")
    assert value.mean_weight == pytest.approx(1 / 3, abs=TOL)
    assert value.score == pytest.approx(entropy / 3, abs=TOL)


def test_diagonal_is_ignored() -> None:
    # The same 3-node graph with diagonal 0, 1 and 7 gives the same value.
    upper = {(0, 1): 0.9, (0, 2): 0.5, (1, 2): 0.1}
    values = {sage_from_weights(sym(3, upper, diagonal=d)) for d in (0.0, 1.0, 7.0)}
    assert len(values) == 1


# --- hand-computed graphs, paper variant ----------------------------------------------------


def test_paper_single_node_is_zero() -> None:
    # n = 1: f_1 = 0 (no neighbours) -> all f are 0 -> H = 0; normaliser 1 -> SaGE = 0.
    value = sage_from_weights(np.array([[1.0]]), "paper")
    assert value == SageValue(score=0.0, entropy=0.0, mean_weight=0.0, n=1)


def test_paper_two_nodes() -> None:
    # n = 2, w_12 = 0.6: f = (0.6, 0.6), p = (1/2, 1/2), H = ln 2 -> H/ln 2 = 1;
    # λ = (0.6+0.6)/(2·1) = 0.6 -> SaGE = 0.6.
    value = sage_from_weights(sym(2, {(0, 1): 0.6}), "paper")
    assert value.entropy == pytest.approx(1.0, abs=TOL)
    assert value.mean_weight == pytest.approx(0.6, abs=TOL)
    assert value.score == pytest.approx(0.6, abs=TOL)


def test_paper_all_zero_weights() -> None:
    # n = 3, all w = 0: every f_i = 0, Σf = 0 -> no distribution; H is taken as 0 -> SaGE = 0
    # (the reference variant instead sees uniform 1e-20 strengths: entropy 1, SaGE 0).
    zero = sym(3, {})
    assert sage_from_weights(zero, "paper") == SageValue(0.0, 0.0, 0.0, 3)
    reference = sage_from_weights(zero, "reference")
    assert (reference.score, reference.entropy) == (0.0, pytest.approx(1.0, abs=TOL))


def test_paper_identical_answers() -> None:
    # n = 3, all w = 1: f = (2, 2, 2), p = 1/3 each, H/ln 3 = 1; λ = 6/6 = 1 -> SaGE = 1.
    value = sage_from_weights(sym(3, {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.0}), "paper")
    assert value.score == pytest.approx(1.0, abs=TOL)


def test_paper_three_nodes_unequal_weights() -> None:
    # w_12 = 0.9, w_13 = 0.5, w_23 = 0.1 -> f = (1.4, 1.0, 0.6), Σf = 3.0
    # p = (0.466667, 0.333333, 0.2)
    # H = 0.466667·0.762140 + 0.333333·1.098612 + 0.2·1.609438 ≈ 1.043757 nats
    # H/ln 3 ≈ 1.043757/1.098612 ≈ 0.950069
    # λ = 2·(0.9+0.5+0.1)/(3·2) = 0.5 -> SaGE ≈ 0.475034
    p = [1.4 / 3.0, 1.0 / 3.0, 0.6 / 3.0]
    entropy = h(p, math.log) / math.log(3)
    value = sage_from_weights(sym(3, {(0, 1): 0.9, (0, 2): 0.5, (1, 2): 0.1}), "paper")
    assert value.entropy == pytest.approx(entropy, abs=TOL)
    assert value.score == pytest.approx(0.5 * entropy, abs=TOL)
    assert value.score == pytest.approx(0.475034, abs=1e-6)


def test_paper_negative_weight_is_kept() -> None:
    # w_12 = 0.8, w_13 = -0.2, w_23 = 0.4 -> f = (0.6, 1.2, 0.2), Σf = 2.0, p = (.3, .6, .1)
    # λ = (0.8 - 0.2 + 0.4)/3 = 1/3
    entropy = h([0.3, 0.6, 0.1], math.log) / math.log(3)
    value = sage_from_weights(sym(3, {(0, 1): 0.8, (0, 2): -0.2, (1, 2): 0.4}), "paper")
    assert value.score == pytest.approx(entropy / 3, abs=TOL)


def test_paper_mixed_sign_strengths_are_rejected() -> None:
    # w_12 = 0.9, w_13 = w_23 = -0.8 -> f = (0.1, 0.1, -1.6): p_3 < 0 is no probability.
    with pytest.raises(ValueError, match="mixed sign"):
        sage_from_weights(sym(3, {(0, 1): 0.9, (0, 2): -0.8, (1, 2): -0.8}), "paper")


def test_errors_name_the_question() -> None:
    good = sym(3, {(0, 1): 0.9, (0, 2): 0.5, (1, 2): 0.1})
    mixed = sym(3, {(0, 1): 0.9, (0, 2): -0.8, (1, 2): -0.8})
    with pytest.raises(ValueError, match=r"distribution \(q7\)"):
        sage_grouped([good, mixed, np.eye(2)], "paper", names=["q1", "q7", "q9"])
    with pytest.raises(ValueError, match="symmetric"):
        sage_grouped([good, np.array([[1.0, 0.2], [0.3, 1.0]])], "reference", names=["a", "b"])


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((0, 0)),
        np.zeros((2, 3)),
        np.array([[1.0, 0.2], [0.3, 1.0]]),
        np.array([[1.0, np.nan], [np.nan, 1.0]]),
    ],
    ids=["empty", "not-square", "not-symmetric", "nan"],
)
def test_bad_weight_matrices_are_rejected(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        sage_from_weights(bad)


def test_unknown_variant_is_rejected() -> None:
    with pytest.raises(ValueError, match="variant"):
        sage_from_weights(sym(2, {(0, 1): 0.5}), "natural")  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------------------

VARIANTS = ("reference", "paper")


@st.composite
def weight_matrices(draw: st.DrawFn, n: int | None = None) -> np.ndarray:
    """A symmetric n×n matrix with off-diagonal weights in [0, 1] (n drawn from 1..6)."""
    size = draw(st.integers(1, 6)) if n is None else n
    pairs = list(itertools.combinations(range(size), 2))
    values = draw(st.lists(st.floats(0.0, 1.0), min_size=len(pairs), max_size=len(pairs)))
    return sym(size, dict(zip(pairs, values, strict=True)))


@settings(max_examples=150, deadline=None)
@given(w=weight_matrices(), variant=st.sampled_from(VARIANTS))
def test_sage_is_in_unit_interval(w: np.ndarray, variant: str) -> None:
    value = sage_from_weights(w, variant)  # type: ignore[arg-type]
    assert 0.0 <= value.score <= 1.0
    assert 0.0 <= value.entropy <= 1.0


@settings(max_examples=100, deadline=None)
@given(w=weight_matrices(), variant=st.sampled_from(VARIANTS), data=st.data())
def test_node_order_does_not_matter(w: np.ndarray, variant: str, data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(len(w))))
    permuted = w[np.ix_(order, order)]
    a = sage_from_weights(w, variant)  # type: ignore[arg-type]
    b = sage_from_weights(permuted, variant)  # type: ignore[arg-type]
    assert b.score == pytest.approx(a.score, abs=1e-12)
    assert b.entropy == pytest.approx(a.entropy, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(data=st.data(), n=st.integers(1, 6), q=st.integers(1, 8), variant=st.sampled_from(VARIANTS))
def test_batch_equals_per_question(data: st.DataObject, n: int, q: int, variant: str) -> None:
    stack = np.stack([data.draw(weight_matrices(n)) for _ in range(q)])
    batch = sage_batch(stack, variant)  # type: ignore[arg-type]
    single = [sage_from_weights(w, variant).score for w in stack]  # type: ignore[arg-type]
    assert batch.shape == (q,)
    # Exact: a question's score must not depend on what else is in the batch.
    np.testing.assert_array_equal(batch, single)


def test_grouped_handles_mixed_sizes_in_order() -> None:
    rng = np.random.default_rng(0)
    mats = []
    for n in (5, 2, 5, 1, 3, 2):
        upper = rng.uniform(0, 1, size=(n, n))
        mats.append(np.triu(upper, 1) + np.triu(upper, 1).T)
    grouped = sage_grouped(mats, "reference")
    assert [v.n for v in grouped] == [5, 2, 5, 1, 3, 2]
    assert grouped == [sage_from_weights(w, "reference") for w in mats]


# --- graphs ---------------------------------------------------------------------------------


def test_graph_has_one_node_per_paraphrase_even_for_identical_texts() -> None:
    w = sym(3, {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.0})
    graph = build_graph(w, labels=["Lying is wrong."] * 3)
    assert sorted(graph.nodes) == [0, 1, 2]
    assert graph.number_of_edges() == 3
    assert nx.number_of_selfloops(graph) == 0
    assert graph.nodes[2]["label"] == "Lying is wrong."
    assert graph.edges[0, 2]["weight"] == 1.0


def test_graphml_round_trips(tmp_path: Path) -> None:
    graphs = {
        "q1/answer": build_graph(sym(3, {(0, 1): 0.9, (0, 2): 0.5, (1, 2): -0.1}), ["a", "a", "b"]),
        "q2/rot": build_graph(sym(2, {(0, 1): 0.25})),
        "q3/answer": build_graph(np.array([[1.0]]), ["only"]),
    }
    path = tmp_path / "sage.graphml"
    export_graphml(graphs, path)
    assert nx.read_graphml(path).number_of_nodes() == 6
    back = load_graphml(path)
    assert back.keys() == graphs.keys()
    for key, graph in graphs.items():
        assert sorted(back[key].nodes(data=True)) == sorted(graph.nodes(data=True))
        assert sorted(back[key].edges(data="weight")) == sorted(graph.edges(data="weight"))


# --- weights and scores from texts ----------------------------------------------------------

# Unit vectors with cos(A, B) = 0.5, cos(A, C) = 0, cos(B, C) = √3/2.
VECTORS = {
    "A": (1.0, 0.0),
    "B": (0.5, math.sqrt(3) / 2),
    "C": (0.0, 1.0),
    "R": (1.0, 0.0),
    "S": (0.0, 1.0),
}


class FakeEmbed:
    """Looks texts up in VECTORS and records every call, to check the one-call contract."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def test_answer_and_rot_weights() -> None:
    a = np.array([VECTORS[t] for t in "ABC"])
    r = np.array([VECTORS[t] for t in "RSR"])
    wa = answer_weights(a)
    # off-diagonal: cos(A,B) = 0.5, cos(A,C) = 0, cos(B,C) = √3/2
    assert wa[0, 1] == pytest.approx(0.5)
    assert wa[0, 2] == pytest.approx(0.0)
    assert wa[1, 2] == pytest.approx(math.sqrt(3) / 2)
    wr = rot_weights(a, r)
    # RoT graph: 0.8·cos(a_i, a_j) + 0.2·cos(r_i, r_j); cos(R,S) = 0, cos(R,R) = 1
    assert wr[0, 1] == pytest.approx(0.8 * 0.5 + 0.2 * 0.0)
    assert wr[0, 2] == pytest.approx(0.8 * 0.0 + 0.2 * 1.0)
    assert wr[1, 2] == pytest.approx(0.8 * math.sqrt(3) / 2 + 0.2 * 0.0)


def test_weights_use_cosine_even_for_unnormalised_vectors() -> None:
    a = np.array([[2.0, 0.0], [3.0, 3.0]])
    assert answer_weights(a)[0, 1] == pytest.approx(math.sqrt(0.5))


def test_collapse_identical_texts_changes_the_graph_as_hand_computed() -> None:
    # answers (A, A, B): w_12 = cos(A,A) = 1, w_13 = w_23 = cos(A,B) = 0.5.
    # Default (one node per paraphrase), reference:
    #   s = (1.5, 1.5, 1.0), f = (15^10, 15^10, 10^10), p ≈ (0.495702, 0.495702, 0.008596)
    #   H/log2 3 ≈ 0.670514, w̄ = 2/3 -> SaGE ≈ 0.447010
    f = [15.0**10, 15.0**10, 10.0**10]
    p = [x / sum(f) for x in f]
    default_ref = (2 / 3) * h(p, math.log2) / math.log2(3)
    # Default, paper: f = (1.5, 1.5, 1.0), Σ = 4 -> p = (.375, .375, .25), λ = 2/3
    #   H/ln 3 ≈ 1.082196/1.098612 ≈ 0.985057 -> SaGE ≈ 0.656705
    default_paper = (2 / 3) * h([0.375, 0.375, 0.25], math.log) / math.log(3)
    # Collapsed: nodes A, B with w = 0.5 -> n = 2, uniform p, H/log 2 = 1 -> SaGE = 0.5 (both)
    # RoT graph with rots (R, S, R): the (answer, rot) pairs are all distinct -> stays n = 3.
    answers, rots = [["A", "A", "B"]], [["R", "S", "R"]]
    for variant, expected in (("reference", default_ref), ("paper", default_paper)):
        plain = sage_scores(["q"], answers, rots, FakeEmbed(), variant=variant)
        merged = sage_scores(
            ["q"], answers, rots, FakeEmbed(), variant=variant, collapse_identical_texts=True
        )
        assert [(r.kind, r.value.n) for r in plain] == [("answer", 3), ("rot", 3)]
        assert [(r.kind, r.value.n) for r in merged] == [("answer", 2), ("rot", 3)]
        assert plain[0].value.score == pytest.approx(expected, abs=1e-6)
        assert merged[0].value.score == pytest.approx(0.5, abs=1e-6)
        assert merged[1].value == plain[1].value


def test_collapse_to_one_node_gives_zero() -> None:
    # Identical answers: default n = 3, all weights 1 -> SaGE 1; collapsed n = 1 -> SaGE 0.
    plain = sage_scores(["q"], [["A"] * 3], None, FakeEmbed())
    merged = sage_scores(["q"], [["A"] * 3], None, FakeEmbed(), collapse_identical_texts=True)
    assert plain[0].value.score == pytest.approx(1.0, abs=1e-6)
    assert (merged[0].value.n, merged[0].value.score) == (1, 0.0)


def test_sage_scores_embeds_once_and_keeps_graphs() -> None:
    embed = FakeEmbed()
    results = sage_scores(
        ["q1", "q2"],
        [["A", "B", "C"], ["A", "A"]],
        [["R", "S", "R"], ["R", "R"]],
        embed,
        keep_graphs=True,
    )
    assert len(embed.calls) == 1
    assert embed.calls[0] == ["A", "B", "C", "A", "A", "R", "S", "R", "R", "R"]
    assert [(r.question_id, r.kind) for r in results] == [
        ("q1", "answer"),
        ("q1", "rot"),
        ("q2", "answer"),
        ("q2", "rot"),
    ]
    rot_graph = results[1].graph
    assert rot_graph is not None
    assert rot_graph.nodes[1]["label"] == "S"
    assert rot_graph.edges[0, 2]["weight"] == pytest.approx(0.2)
    assert results[3].graph is not None and results[3].graph.number_of_nodes() == 2
    assert all(r.graph is None for r in sage_scores(["q1"], [["A", "B"]], None, FakeEmbed()))


def test_sage_scores_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="answer lists"):
        sage_scores(["q1", "q2"], [["A"]], None, FakeEmbed())
    with pytest.raises(ValueError, match="rots"):
        sage_scores(["q1"], [["A", "B"]], [["R"]], FakeEmbed())
    with pytest.raises(ValueError, match="no answers"):
        sage_scores(["q1"], [[]], None, FakeEmbed())


def test_sage_scores_with_no_questions_does_not_embed() -> None:
    embed = FakeEmbed()
    assert sage_scores([], [], None, embed) == []
    assert embed.calls == []


# --- baselines ------------------------------------------------------------------------------


def test_baselines_of_identical_texts_are_one() -> None:
    texts = ["It is wrong to lie to your friends."] * 3
    assert mean_pairwise_bleu(texts) == pytest.approx(1.0)
    assert mean_pairwise_rouge_l(texts) == pytest.approx(1.0)
    assert mean_pairwise_cosine(["A", "A"], FakeEmbed()) == pytest.approx(1.0)


def test_baselines_of_a_single_text_are_zero() -> None:
    assert mean_pairwise_bleu(["x"]) == 0.0
    assert mean_pairwise_rouge_l(["x"]) == 0.0
    assert mean_pairwise_cosine(["A"], FakeEmbed()) == 0.0


def test_rouge_l_hand_computed() -> None:
    # "a b c" vs "a b d": LCS 2, P = R = 2/3, F = 2/3; vs "x y z": F = 0; "a b d" vs "x y z": 0.
    # mean over the 3 pairs = (2/3 + 0 + 0)/3 = 2/9
    assert mean_pairwise_rouge_l(["a b c", "a b d", "x y z"]) == pytest.approx(2 / 9)


def test_bleu_is_symmetric_average_of_both_directions() -> None:
    a, b = "you should always tell the truth", "you should tell the truth to friends"
    both = (sacrebleu.sentence_bleu(a, [b]).score + sacrebleu.sentence_bleu(b, [a]).score) / 2
    assert mean_pairwise_bleu([a, b]) == pytest.approx(both / 100)
    assert mean_pairwise_bleu([b, a]) == pytest.approx(both / 100)


def test_cosine_baseline_hand_computed() -> None:
    # cos(A,B) = 0.5, cos(A,C) = 0, cos(B,C) = √3/2 -> mean = (0.5 + √3/2)/3
    expected = (0.5 + 0.0 + math.sqrt(3) / 2) / 3
    assert mean_pairwise_cosine(["A", "B", "C"], FakeEmbed()) == pytest.approx(expected)
