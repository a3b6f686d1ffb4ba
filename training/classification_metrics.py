"""Accuracy and macro-F1 for label lists; small enough to own rather than pull in sklearn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ClassificationReport:
    n: int
    accuracy: float
    macro_f1: float
    f1_per_label: dict[str, float]

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "f1_per_label": self.f1_per_label,
        }


def classification_report(
    gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]
) -> ClassificationReport:
    """Macro-F1 averages per-label F1 over `labels`; a label never gold nor predicted scores 0."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    if not gold:
        raise ValueError("no examples to score")
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    f1s: dict[str, float] = {}
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted, strict=True))
        f1s[label] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return ClassificationReport(
        n=len(gold),
        accuracy=correct / len(gold),
        macro_f1=sum(f1s.values()) / len(labels),
        f1_per_label=f1s,
    )
