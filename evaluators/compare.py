"""Two runs side by side: each MoralDial metric's mean and CI per run, and the difference.

The difference B - A gets a Welch t interval computed from the per-dialogue values of both
runs (not from the rounded summaries), so runs of different sizes compare correctly. This is
how a user sees base vs moral bot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.moraldial import METRICS
from evaluators.stats import Estimate, mean_ci
from scenarios.jsonl import read_dialogues
from scenarios.records import Dialogue


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: Estimate
    b: Estimate
    diff: float | None
    diff_low: float | None
    diff_high: float | None


def metric_values(dialogues: Sequence[Dialogue], metric: str) -> list[float]:
    out = []
    for d in dialogues:
        if d.flow != "moraldial":
            continue
        found = d.scores_named(metric)
        if found:
            out.append(found[0].value)
    return out


def welch_interval(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(mean(b) - mean(a), low, high); the interval is None when either side has n < 2."""
    if not a or not b:
        return None, None, None
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    diff = mb - ma
    if len(a) < 2 or len(b) < 2:
        return diff, None, None
    va = math.fsum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = math.fsum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    from scipy.stats import t

    half = float(t.ppf(0.5 + level / 2, df)) * se
    return diff, diff - half, diff + half


def compare_runs(run_a: str | Path, run_b: str | Path) -> list[Comparison]:
    a = read_dialogues(Path(run_a) / "dialogues.jsonl")
    b = read_dialogues(Path(run_b) / "dialogues.jsonl")
    rows = []
    for metric in METRICS:
        va, vb = metric_values(a, metric), metric_values(b, metric)
        rows.append(Comparison(metric, mean_ci(va), mean_ci(vb), *welch_interval(va, vb)))
    return rows
