"""How much faster the vectorised SaGE is than a per-question Python loop, and that they agree.

Synthetic questions (seeded): each has `--paraphrases` answer embeddings drawn around a
question-specific direction with a random spread, so cosines cover the realistic 0-1 range
rather than the near-zero cosines of independent random vectors. The weight matrices go
through `evaluators.sage.sage_batch` once, and through a naive implementation of the same
formula that builds a networkx graph per question and computes strengths, probabilities and
entropy with plain Python lists and `math`. The script checks the two agree to 1e-9 (exit
status 1 if not) and prints both wall times and their ratio. Embedding is not timed: the models
run elsewhere; this measures only the metric.

    python benchmarks/sage_speed.py --questions 3000 --paraphrases 5 --seed 0
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import networkx as nx
import numpy as np

from evaluators.sage import STRENGTH_FLOOR, VARIANTS, Variant, sage_batch

AGREEMENT_TOL = 1e-9


def synthetic_weights(questions: int, paraphrases: int, dim: int, seed: int) -> np.ndarray:
    """(questions, paraphrases, paraphrases) cosine matrices of random unit vectors."""
    rng = np.random.default_rng(seed)
    centre = rng.standard_normal((questions, 1, dim))
    centre /= np.linalg.norm(centre, axis=-1, keepdims=True)
    spread = rng.uniform(0.2, 2.0, size=(questions, 1, 1))
    vectors = centre + spread * rng.standard_normal((questions, paraphrases, dim)) / math.sqrt(dim)
    vectors /= np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.clip(vectors @ np.swapaxes(vectors, 1, 2), -1.0, 1.0)


def naive_sage(weights: list[list[float]], variant: Variant) -> float:
    """SaGE of one question the straightforward way: a networkx graph and Python arithmetic."""
    n = len(weights)
    if n == 1:
        return 0.0
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            graph.add_edge(i, j, weight=weights[i][j])
    edge_weights = [data["weight"] for _, _, data in graph.edges(data=True)]
    mean_weight = sum(edge_weights) / len(edge_weights)
    if variant == "reference":
        f = []
        for node in graph.nodes:
            incident = [d["weight"] for _, _, d in graph.edges(node, data=True)]
            strength = sum(x for x in incident if x > 0)
            f.append((10 * (strength + STRENGTH_FLOOR)) ** 10)
        log, norm = math.log2, math.log2(n)
    else:
        f = [graph.degree(node, weight="weight") for node in graph.nodes]
        log, norm = math.log, math.log(n)
    total = sum(f)
    if total == 0:
        return 0.0
    entropy = -sum(p * log(p) for p in (x / total for x in f) if p > 0)
    return mean_weight * min(max(entropy / norm, 0.0), 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=3000, help="number of questions")
    parser.add_argument("--paraphrases", type=int, default=5, help="paraphrases per question")
    parser.add_argument("--dim", type=int, default=384, help="embedding size (MiniLM: 384)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--variant", choices=VARIANTS, default="reference")
    args = parser.parse_args(argv)
    if min(args.questions, args.paraphrases, args.dim) < 1:
        parser.error("--questions, --paraphrases and --dim must be at least 1")

    weights = synthetic_weights(args.questions, args.paraphrases, args.dim, args.seed)
    as_lists = weights.tolist()

    start = time.perf_counter()
    fast = sage_batch(weights, args.variant)
    fast_s = time.perf_counter() - start

    start = time.perf_counter()
    slow = [naive_sage(w, args.variant) for w in as_lists]
    slow_s = time.perf_counter() - start

    diff = float(np.max(np.abs(fast - np.array(slow))))
    print(
        f"{args.questions} questions x {args.paraphrases} paraphrases, variant={args.variant}, "
        f"seed={args.seed}, mean SaGE {fast.mean():.4f}"
    )
    print(f"vectorised (numpy)       {fast_s * 1e3:10.2f} ms")
    print(f"per-question (networkx)  {slow_s * 1e3:10.2f} ms")
    print(f"speed-up                 {slow_s / fast_s:10.1f}x")
    print(f"max |difference|         {diff:10.2e} (tolerance {AGREEMENT_TOL:g})")
    if not diff <= AGREEMENT_TOL:
        print("FAIL: the two implementations disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
