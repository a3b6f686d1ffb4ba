"""Surface and embedding baselines for SaGE: mean pairwise similarity of one question's texts.

SaGE claims more than "the answers look alike", so it is reported next to the plain
similarities it should be compared with (docs/methods.md §5): BLEU, ROUGE-L and embedding cosine,
each averaged over the same n(n−1)/2 pairs of a question's n answers (or RoTs) that form the
SaGE graph.

Scale: BLEU and ROUGE-L are returned on 0–1 (sacrebleu's 0–100 BLEU is divided by 100) so
all three sit on SaGE's scale; cosine is in [−1, 1]. With fewer than two texts there is no pair,
and, as SaGE does for n = 1, every baseline returns 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import sacrebleu
from rouge_score import rouge_scorer

from evaluators.sage import Embed, cosine_matrix


def mean_pairwise_bleu(texts: Sequence[str]) -> float:
    """Mean sentence BLEU over all pairs, on 0–1 (sacrebleu's 0–100 score / 100).

    BLEU is not symmetric (hypothesis vs reference), so each pair scores the mean of both
    directions, and the result does not depend on the order of the texts. sacrebleu defaults
    (13a tokeniser, exponential smoothing, effective order) as `sentence_bleu` sets them.
    """
    pairs = list(itertools.combinations(texts, 2))
    if not pairs:
        return 0.0
    total = 0.0
    for a, b in pairs:
        forward = sacrebleu.sentence_bleu(a, [b]).score
        backward = sacrebleu.sentence_bleu(b, [a]).score
        total += (forward + backward) / 2.0
    return total / len(pairs) / 100.0


def mean_pairwise_rouge_l(texts: Sequence[str]) -> float:
    """Mean ROUGE-L F-measure over all pairs, on 0–1 (rouge_score, no stemming).

    The F-measure of the longest common subsequence is symmetric, so one direction per pair
    suffices.
    """
    pairs = list(itertools.combinations(texts, 2))
    if not pairs:
        return 0.0
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    total = sum(scorer.score(a, b)["rougeL"].fmeasure for a, b in pairs)
    return total / len(pairs)


def mean_pairwise_cosine(texts: Sequence[str], embed: Embed) -> float:
    """Mean embedding cosine over all pairs, in [−1, 1].

    This is the answer graph's mean weight w̄ on its own, without SaGE's entropy factor.
    """
    if len(texts) < 2:
        return 0.0
    similarities = cosine_matrix(np.asarray(embed(list(texts))))
    upper_i, upper_j = np.triu_indices(len(texts), k=1)
    return float(similarities[upper_i, upper_j].mean())


__all__ = ["mean_pairwise_bleu", "mean_pairwise_cosine", "mean_pairwise_rouge_l"]
