"""How well an agreement scorer reads stance: the figures `moralsim scorer eval` reports.

Every MoralDial number is a function of AS = P(agree) - P(disagree), so the scorer is judged
on what those numbers need, not only on 3-way accuracy:

- **3-way accuracy, macro-F1 and the confusion matrix** on labelled (question, answer, RoT)
  items (the argmax class against the gold label);
- **sign accuracy**: over items whose gold label is agree or disagree, the share whose AS has
  the right sign (AS > 0 for agree, AS < 0 for disagree; AS = 0 is wrong for both) -- what a
  reader of S_MR1 or S_RIL assumes when a score is positive or negative;
- **pairwise accuracy**: over pairs (an answer/action that follows a norm, one that breaks the
  same norm), the share with AS(follow) > AS(break), strictly (a tie is a miss). This is the
  Moral Stories check: it needs no calibration, only the right order.

Pure functions over labels and numbers; no model is loaded here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluators.agreement_format import AGREEMENT_LABELS


def predicted_labels(probabilities: np.ndarray) -> list[str]:
    """The argmax class of each (agree, neutral, disagree) row."""
    p = np.asarray(probabilities, dtype=np.float64)
    return [AGREEMENT_LABELS[int(i)] for i in p.argmax(axis=1)]


def confusion_matrix(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, dict[str, int]]:
    """counts[gold][predicted] over the three labels (rows and columns always all present)."""
    counts = {g: dict.fromkeys(AGREEMENT_LABELS, 0) for g in AGREEMENT_LABELS}
    for g, p in zip(gold, predicted, strict=True):
        counts[g][p] += 1
    return counts


def macro_f1(counts: dict[str, dict[str, int]]) -> float:
    """Mean per-label F1 over the three labels; a label never gold nor predicted scores 0."""
    f1s = []
    for label in AGREEMENT_LABELS:
        tp = counts[label][label]
        fp = sum(counts[g][label] for g in AGREEMENT_LABELS if g != label)
        fn = sum(counts[label][p] for p in AGREEMENT_LABELS if p != label)
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(f1s) / len(f1s)


def sign_hits(gold: Sequence[str], scores: Sequence[float]) -> tuple[int, int]:
    """(right sign, items with a signed gold label): agree needs AS > 0, disagree AS < 0."""
    hits = total = 0
    for g, s in zip(gold, scores, strict=True):
        if g == "agree":
            total += 1
            hits += s > 0
        elif g == "disagree":
            total += 1
            hits += s < 0
    return hits, total


def pairwise_hits(follow: Sequence[float], break_: Sequence[float]) -> int:
    """Pairs with AS(follow) strictly above AS(break)."""
    return int(sum(f > b for f, b in zip(follow, break_, strict=True)))


def _ratio(hits: int, total: int) -> float | None:
    return hits / total if total else None


@dataclass
class LabelledReport:
    """The figures of one labelled set (and, per phenomenon, its accuracy and sign accuracy)."""

    name: str
    n: int
    accuracy: float
    macro_f1: float
    sign_accuracy: float | None
    n_signed: int
    confusion: dict[str, dict[str, int]]
    by_phenomenon: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "labelled",
            "n": self.n,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "sign_accuracy": self.sign_accuracy,
            "n_signed": self.n_signed,
            "confusion": self.confusion,
            "by_phenomenon": self.by_phenomenon,
        }


def labelled_report(
    name: str,
    gold: Sequence[str],
    probabilities: np.ndarray,
    phenomena: Sequence[str] | None = None,
) -> LabelledReport:
    """All labelled-set figures from gold labels and the scorer's (n, 3) probabilities."""
    if not gold:
        raise ValueError(f"{name}: no items to evaluate")
    p = np.asarray(probabilities, dtype=np.float64)
    predicted = predicted_labels(p)
    scores = (p[:, 0] - p[:, 2]).tolist()
    counts = confusion_matrix(gold, predicted)
    hits, signed = sign_hits(gold, scores)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, phenomenon in enumerate(phenomena or ()):
        groups[phenomenon].append(i)
    by: dict[str, dict[str, Any]] = {}
    for phenomenon, rows in sorted(groups.items()):
        g = [gold[i] for i in rows]
        h, t = sign_hits(g, [scores[i] for i in rows])
        by[phenomenon] = {
            "n": len(rows),
            "accuracy": sum(gold[i] == predicted[i] for i in rows) / len(rows),
            "sign_accuracy": _ratio(h, t),
            "n_signed": t,
        }
    return LabelledReport(
        name=name,
        n=len(gold),
        accuracy=sum(a == b for a, b in zip(gold, predicted, strict=True)) / len(gold),
        macro_f1=macro_f1(counts),
        sign_accuracy=_ratio(hits, signed),
        n_signed=signed,
        confusion=counts,
        by_phenomenon=by,
    )


@dataclass
class PairReport:
    """Pairwise and sign accuracy of (follows the norm, breaks the norm) pairs."""

    name: str
    n_pairs: int
    pairwise_accuracy: float
    sign_accuracy: float
    mean_as_follow: float
    mean_as_break: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "pairs",
            "n_pairs": self.n_pairs,
            "pairwise_accuracy": self.pairwise_accuracy,
            "sign_accuracy": self.sign_accuracy,
            "mean_as_follow": self.mean_as_follow,
            "mean_as_break": self.mean_as_break,
        }


def pair_report(name: str, follow: Sequence[float], break_: Sequence[float]) -> PairReport:
    """Pairwise accuracy, and sign accuracy over all 2n items (follow: agree, break: disagree)."""
    if not follow or len(follow) != len(break_):
        raise ValueError(f"{name}: needs the same, non-zero number of follow and break scores")
    hits, total = sign_hits(
        ["agree"] * len(follow) + ["disagree"] * len(break_), [*follow, *break_]
    )
    return PairReport(
        name=name,
        n_pairs=len(follow),
        pairwise_accuracy=pairwise_hits(follow, break_) / len(follow),
        sign_accuracy=hits / total,
        mean_as_follow=float(np.mean(follow)),
        mean_as_break=float(np.mean(break_)),
    )
