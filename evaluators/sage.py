"""SaGE — semantic graph entropy (docs/methods.md §5): how consistently a bot answers paraphrases.

For one question the bot sees n paraphrases and gives answers a_i (and the RoTs r_i it followed).
The texts become a complete weighted graph with one node per paraphrase index; SaGE combines how
similar the nodes are (the mean pairwise weight) with how evenly that similarity is spread over
the nodes (a normalised graph entropy). Higher is more consistent.

Two variants, both over the n×n symmetric weight matrix w (its diagonal is ignored):

``variant="reference"`` (default; the definition behind the published numbers)
    s_i = Σ_{j≠i, w_ij>0} w_ij + 1e-20 (node strength; only positive weights count)
    f_i = (10·s_i)^10, p_i = f_i / Σ_j f_j
    H = −Σ_i p_i log2 p_i
    SaGE = w̄ · H / log2 n, w̄ = mean of the pairwise weights w_ij, i<j (negative ones included)

``variant="paper"`` (the formula as the paper prints it, read naturally)
    f_i = Σ_{j≠i} w_ij (negative weights included), p_i = f_i / Σ_j f_j
    λ = Σ_{i≠j} w_ij / (n(n−1))
    SaGE = λ · H / log n, with H in the same log base as the normaliser, so the ratio is base-free.
    The paper prints SaGE = 1 − I/log n; taken literally that sign does not give the published
    range (a uniform, fully similar graph would score 0), so the entropy itself is used.

Edge cases, chosen so that every question gets a finite score (records never store NaN):

- n = 1: there are no pairs and H = 0 (one node carries all the mass, or none in the paper
  variant), so the normaliser is taken as 1 and SaGE = 0; w̄ (the mean of no weights) is 0.
- Paper variant, every f_i = 0 (e.g. all weights 0): there is no distribution; H is taken as 0,
  so SaGE = 0. (The reference variant sees n equal 1e-20 floors there: uniform, entropy 1, and
  SaGE = w̄ · 1 = 0.)
- Paper variant, strengths of mixed sign (possible only with negative cosines): some p_i would
  be negative, which is no probability at all, so the question is rejected with ValueError.
- Reference variant with negative cosines: they lower w̄ but add nothing to any strength, so
  SaGE can drop below 0. With weights in [0, 1] both variants stay in [0, 1].

Embeddings are injected (``embed(texts) -> array``) so that this module never loads a model:
the scorer that wraps it decides which sentence encoder runs, and tests use fixed vectors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import networkx as nx
import numpy as np

Variant = Literal["reference", "paper"]
VARIANTS: tuple[str, ...] = ("reference", "paper")
GraphKind = Literal["answer", "rot"]
Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> (len(texts), d) array of L2-normalised sentence embeddings."""

STRENGTH_FLOOR = 1e-20
"""Added to every reference strength so that a node with no positive edge still has mass."""
ANSWER_SHARE = 0.8
"""RoT-graph weight of the answer cosine; the RoT cosine gets the rest (reference code)."""
SYMMETRY_TOL = 1e-8

_GRAPH_ATTR = "sage_graph"
_INDEX_ATTR = "sage_index"


@dataclass(frozen=True)
class SageValue:
    """SaGE of one question's graph with the two factors it is the product of.

    `entropy` is the normalised H / log n in [0, 1]; `mean_weight` is w̄ (reference) or λ
    (paper), which coincide for a symmetric matrix.
    """

    score: float
    entropy: float
    mean_weight: float
    n: int


@dataclass
class SageResult:
    """One graph's SaGE for one question; `graph` is kept only when asked (it costs memory)."""

    question_id: str
    kind: GraphKind
    value: SageValue
    graph: nx.Graph | None = None


def _which(mask: np.ndarray, names: Sequence[str] | None) -> str:
    """The first few offending questions, by name when the caller gave names."""
    bad = np.flatnonzero(mask)[:5].tolist()
    return ", ".join(names[i] for i in bad) if names is not None else f"batch positions {bad}"


def _checked_stack(weights: np.ndarray, names: Sequence[str] | None) -> np.ndarray:
    """Validate a (Q, n, n) stack and return it symmetrised, float64, with a zero diagonal."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2] or w.shape[1] == 0:
        raise ValueError(f"expected a stack of non-empty square matrices, got shape {w.shape}")
    finite = np.isfinite(w).all(axis=(1, 2))
    if not finite.all():
        raise ValueError(f"weights must be finite ({_which(~finite, names)})")
    transposed = np.swapaxes(w, 1, 2)
    symmetric = (np.abs(w - transposed) <= SYMMETRY_TOL).all(axis=(1, 2))
    if not symmetric.all():
        raise ValueError(
            f"weights must be symmetric, an undirected graph ({_which(~symmetric, names)})"
        )
    # Averaging removes float noise from a @ a.T, so both triangles hold the same numbers.
    w = (w + transposed) / 2.0
    n = w.shape[1]
    w[:, np.arange(n), np.arange(n)] = 0.0
    return w


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Sum over the last axis, strictly left to right.

    numpy's own reduction picks its summation order from the array shape, so the same question
    would get a last-bit different score in a stack of 1 and a stack of 1,000. A loop over the
    short last axis (n or n(n−1)/2 terms), vectorised over questions, fixes the order.
    """
    total = np.zeros(x.shape[:-1])
    for k in range(x.shape[-1]):
        total += x[..., k]
    return total


def _entropy(p: np.ndarray, log: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """−Σ p log p along the last axis, with 0·log 0 = 0 (no warnings for the zeros)."""
    logs = np.zeros_like(p)
    positive = p > 0
    logs[positive] = log(p[positive])
    return -_row_sum(p * logs)


def _sage_arrays(
    weights: np.ndarray, variant: Variant, names: Sequence[str] | None = None
) -> tuple[np.ndarray, ...]:
    """Score, normalised entropy and mean weight for a (Q, n, n) stack, all questions at once.

    `names` (one per question) only make error messages point at the right questions.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    w = _checked_stack(weights, names)
    q, n, _ = w.shape
    if n == 1:
        zeros = np.zeros(q)
        return zeros, zeros.copy(), zeros.copy()
    upper_i, upper_j = np.triu_indices(n, k=1)
    mean_weight = _row_sum(w[:, upper_i, upper_j]) / len(upper_i)
    if variant == "reference":
        strength = _row_sum(np.where(w > 0, w, 0.0)) + STRENGTH_FLOOR
        f = (10.0 * strength) ** 10
        entropy = _entropy(f / _row_sum(f)[:, None], np.log2) / np.log2(n)
    else:
        f = _row_sum(w)
        mixed = (f.min(axis=-1) < 0) & (f.max(axis=-1) > 0)
        if mixed.any():
            raise ValueError(
                "paper variant: node strengths of mixed sign give no probability distribution "
                f"({_which(mixed, names)})"
            )
        total = _row_sum(f)
        empty = total == 0
        p = np.divide(f, total[:, None], out=np.zeros_like(f), where=~empty[:, None])
        entropy = _entropy(p, np.log) / np.log(n)
        mean_weight = total / (n * (n - 1))
    entropy = np.clip(entropy, 0.0, 1.0)  # mathematically in [0, 1]; drop rounding overshoot
    return mean_weight * entropy, entropy, mean_weight


def sage_batch(weights: np.ndarray, variant: Variant = "reference") -> np.ndarray:
    """SaGE for a (Q, n, n) stack of questions that all have n nodes.

    One array computation for the whole stack: with thousands of questions a Python loop over
    graphs dominates the evaluation time (see benchmarks/sage_speed.py). A question's score
    never depends on the others in the stack.

    Returns:
        Array of Q scores.
    """
    return _sage_arrays(weights, variant)[0]


def sage_grouped(
    weights: Sequence[np.ndarray],
    variant: Variant = "reference",
    names: Sequence[str] | None = None,
) -> list[SageValue]:
    """SaGE for questions whose graphs differ in size, in the order given.

    Questions are grouped by n and each group goes through the vectorised path once, so a few
    questions with a lost or merged paraphrase do not force a per-question loop.

    Args:
        weights: One n×n symmetric matrix per question; n may differ between questions.
        variant: "reference" or "paper" (module docstring).
        names: Optional question names, used only to say which questions an error is about.
    """
    labels = list(names) if names is not None else [str(i) for i in range(len(weights))]
    if len(labels) != len(weights):
        raise ValueError(f"got {len(labels)} names for {len(weights)} questions")
    by_size: dict[int, list[int]] = defaultdict(list)
    for position, w in enumerate(weights):
        shape = np.shape(w)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"question {labels[position]}: expected a square matrix, got {shape}")
        by_size[shape[0]].append(position)
    values: dict[int, SageValue] = {}
    for n, positions in by_size.items():
        stack = np.stack([np.asarray(weights[i], dtype=np.float64) for i in positions])
        scores, entropies, means = _sage_arrays(stack, variant, [labels[i] for i in positions])
        for k, position in enumerate(positions):
            values[position] = SageValue(float(scores[k]), float(entropies[k]), float(means[k]), n)
    return [values[position] for position in range(len(weights))]


def sage_from_weights(w: np.ndarray, variant: Variant = "reference") -> SageValue:
    """SaGE of one question from its n×n symmetric weight matrix (diagonal ignored).

    See the module docstring for both variants and the n = 1 / all-zero conventions.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"expected an n×n matrix, got shape {w.shape}")
    scores, entropies, means = _sage_arrays(w[None], variant)
    return SageValue(float(scores[0]), float(entropies[0]), float(means[0]), w.shape[0])


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of the rows, clipped to [−1, 1].

    Rows are normalised here even though `Embed` promises unit rows: an encoder run without
    normalisation would otherwise silently give dot products instead of cosines.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"expected a (n, d) array of embeddings, got shape {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    if not np.isfinite(v).all() or (norms == 0).any():
        raise ValueError("embeddings must be finite and non-zero")
    unit = v / norms
    return np.clip(unit @ unit.T, -1.0, 1.0)


def answer_weights(answer_vectors: np.ndarray) -> np.ndarray:
    """Answer graph: w_ij = cos(a_i, a_j)."""
    return cosine_matrix(answer_vectors)


def rot_weights(answer_vectors: np.ndarray, rot_vectors: np.ndarray) -> np.ndarray:
    """RoT graph: w_ij = 0.8·cos(a_i, a_j) + 0.2·cos(r_i, r_j), as in the reference code.

    The answer term dominates so that two different RoT wordings behind the same answer are not
    counted as an inconsistency.
    """
    if np.shape(answer_vectors)[0] != np.shape(rot_vectors)[0]:
        raise ValueError("need one RoT per answer")
    answers = cosine_matrix(answer_vectors)
    return ANSWER_SHARE * answers + (1.0 - ANSWER_SHARE) * cosine_matrix(rot_vectors)


def first_occurrences(keys: Sequence[Hashable]) -> list[int]:
    """Indices of the first occurrence of each distinct key, in order.

    This is how `collapse_identical_texts` mimics reference code that keyed graph nodes by
    text: later duplicates vanish into the first node.
    """
    seen: set[Hashable] = set()
    keep: list[int] = []
    for index, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            keep.append(index)
    return keep


def _nodes(keys: Sequence[Hashable], collapse: bool) -> list[int]:
    """Which paraphrase indices become graph nodes: all of them unless collapsing."""
    return first_occurrences(keys) if collapse else list(range(len(keys)))


def build_graph(weights: np.ndarray, labels: Sequence[str] | None = None) -> nx.Graph:
    """The complete undirected graph of one question: node i is paraphrase i, edge "weight" w_ij.

    Nodes are indices, never texts, so identical answers stay separate nodes (docs/methods.md §5).
    `labels` (e.g. the answer or RoT texts) become the node attribute "label".
    """
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[0]
    if w.shape != (n, n):
        raise ValueError(f"expected an n×n matrix, got shape {w.shape}")
    if labels is not None and len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for {n} nodes")
    graph = nx.Graph()
    for i in range(n):
        graph.add_node(i, **({"label": labels[i]} if labels is not None else {}))
    for i in range(n):
        for j in range(i + 1, n):
            graph.add_edge(i, j, weight=float(w[i, j]))
    return graph


def export_graphml(graphs: dict[str, nx.Graph], path: str | Path) -> None:
    """Write many question graphs into one GraphML file (Gephi, yEd and networkx read it).

    networkx writes one graph per file, so the graphs are stored as a disjoint union: node
    "<key>#<i>" carries the attributes `sage_graph` = key and `sage_index` = i, which is what
    `load_graphml` splits on.
    """
    union = nx.Graph()
    for key, graph in graphs.items():
        for node, data in graph.nodes(data=True):
            union.add_node(f"{key}#{node}", **data, **{_GRAPH_ATTR: key, _INDEX_ATTR: int(node)})
        for u, v, data in graph.edges(data=True):
            union.add_edge(f"{key}#{u}", f"{key}#{v}", **data)
    nx.write_graphml(union, path)


def load_graphml(path: str | Path) -> dict[str, nx.Graph]:
    """Read a file written by `export_graphml` back into {key: graph} with integer nodes."""
    union = nx.read_graphml(path)
    graphs: dict[str, nx.Graph] = {}
    names: dict[str, tuple[str, int]] = {}
    for node, data in union.nodes(data=True):
        attrs = dict(data)
        key = str(attrs.pop(_GRAPH_ATTR))
        index = int(attrs.pop(_INDEX_ATTR))
        names[node] = (key, index)
        graphs.setdefault(key, nx.Graph()).add_node(index, **attrs)
    for u, v, data in union.edges(data=True):
        key, i = names[u]
        graphs[key].add_edge(i, names[v][1], **data)
    return graphs


def _embed_all(embed: Embed, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(embed(texts), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"embed returned shape {vectors.shape} for {len(texts)} texts; want (texts, dim)"
        )
    return vectors


def sage_scores(
    question_ids: Sequence[str],
    answers: Sequence[Sequence[str]],
    rots: Sequence[Sequence[str]] | None,
    embed: Embed,
    variant: Variant = "reference",
    collapse_identical_texts: bool = False,
    keep_graphs: bool = False,
) -> list[SageResult]:
    """SaGE of the answer graph (and the RoT graph when `rots` is given) for every question.

    All texts go to `embed` in one call so the encoder can batch them. Results come per
    question in input order, the answer graph first, then the RoT graph.

    Args:
        question_ids: One id per question.
        answers: Per question, the bot's answers to its n paraphrases (n ≥ 1).
        rots: Per question, the RoT behind each answer, or None for answer graphs only.
        embed: Sentence encoder returning one (L2-normalised) row per text.
        variant: "reference" (published numbers) or "paper"; see the module docstring.
        collapse_identical_texts: Reproduce reference code that keyed nodes by text: identical
            answers (for the RoT graph, identical (answer, RoT) pairs) become one node, so n
            shrinks. Off by default because docs/methods.md keeps one node per paraphrase.
        keep_graphs: Attach the networkx graph (node labels = answer or RoT texts) to each
            result, e.g. for `export_graphml`.

    Returns:
        One SageResult per question and graph kind.
    """
    if len(answers) != len(question_ids):
        raise ValueError(f"got {len(answers)} answer lists for {len(question_ids)} questions")
    if rots is not None and len(rots) != len(question_ids):
        raise ValueError(f"got {len(rots)} rots lists for {len(question_ids)} questions")
    for q, question_answers in enumerate(answers):
        if not question_answers:
            raise ValueError(f"question {question_ids[q]!r} has no answers")
        if rots is not None and len(rots[q]) != len(question_answers):
            raise ValueError(
                f"question {question_ids[q]!r}: {len(rots[q])} rots for "
                f"{len(question_answers)} answers"
            )
    if not question_ids:
        return []

    texts = [a for question_answers in answers for a in question_answers]
    if rots is not None:
        texts += [r for question_rots in rots for r in question_rots]
    vectors = _embed_all(embed, texts)
    rot_offset = sum(len(question_answers) for question_answers in answers)

    entries: list[tuple[str, GraphKind, np.ndarray, list[str]]] = []
    start = 0
    for q, qid in enumerate(question_ids):
        texts_a = list(answers[q])
        a_vectors = vectors[start : start + len(texts_a)]
        keep = _nodes(texts_a, collapse_identical_texts)
        entries.append((qid, "answer", answer_weights(a_vectors[keep]), [texts_a[i] for i in keep]))
        if rots is not None:
            texts_r = list(rots[q])
            r_vectors = vectors[rot_offset + start : rot_offset + start + len(texts_r)]
            pairs = list(zip(texts_a, texts_r, strict=True))
            keep = _nodes(pairs, collapse_identical_texts)
            weights = rot_weights(a_vectors[keep], r_vectors[keep])
            entries.append((qid, "rot", weights, [texts_r[i] for i in keep]))
        start += len(texts_a)

    values = sage_grouped(
        [weights for _, _, weights, _ in entries],
        variant,
        names=[f"{qid}/{kind}" for qid, kind, _, _ in entries],
    )
    return [
        SageResult(qid, kind, value, build_graph(weights, labels) if keep_graphs else None)
        for (qid, kind, weights, labels), value in zip(entries, values, strict=True)
    ]


__all__ = [
    "ANSWER_SHARE",
    "STRENGTH_FLOOR",
    "VARIANTS",
    "Embed",
    "GraphKind",
    "SageResult",
    "SageValue",
    "Variant",
    "answer_weights",
    "build_graph",
    "cosine_matrix",
    "export_graphml",
    "first_occurrences",
    "load_graphml",
    "rot_weights",
    "sage_batch",
    "sage_from_weights",
    "sage_grouped",
    "sage_scores",
]
