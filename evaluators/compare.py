"""Two runs side by side: each metric's mean and CI per run, and the difference.

Every registered flow contributes its rows (`Flow.compare`). Where per-unit values exist (per
dialogue, question or ranking) the difference B - A gets a Welch t interval computed from
them (not from the rounded summaries), so runs of different sizes compare correctly; where
only a summary exists the difference has no interval. This is how a user sees base vs moral
bot.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluators.stats import Estimate, mean_ci
from scenarios.jsonl import read_dialogues


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: Estimate
    b: Estimate
    diff: float | None
    diff_low: float | None
    diff_high: float | None


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
    """Every registered flow's rows, in flow order (a flow neither run has adds none)."""
    from evaluators.report import load_run_plugins
    from scenarios.flow_api import RunData, flows_in_order

    for run in (run_a, run_b):
        load_run_plugins(Path(run))
    a, b = (
        RunData(read_dialogues(Path(r) / "dialogues.jsonl"), _probes(Path(r)))
        for r in (run_a, run_b)
    )
    return [row for flow in flows_in_order() for row in flow.compare(a, b)]


def _probes(run: Path) -> dict[str, Any]:
    path = run / "probes.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _estimate(entry: Any) -> Estimate:
    if not isinstance(entry, dict) or entry.get("mean") is None:
        return Estimate(None, None, None, 0)
    ci = entry.get("ci95") or [None, None]
    return Estimate(entry["mean"], ci[0], ci[1], int(entry.get("n", 0)))


def per_unit_row(label: str, a: Sequence[float], b: Sequence[float]) -> Comparison | None:
    """A row from per-unit values (per dialogue, question, ranking): Welch interval included."""
    if not (a or b):
        return None
    return Comparison(label, mean_ci(list(a)), mean_ci(list(b)), *welch_interval(a, b))


def summary_only_row(label: str, a: Any, b: Any) -> Comparison | None:
    """A row from two stored estimates (mean, ci95, n) when no per-unit values exist: the
    difference of means, without an interval."""
    ea, eb = _estimate(a), _estimate(b)
    if ea.mean is None and eb.mean is None:
        return None
    diff = None if ea.mean is None or eb.mean is None else eb.mean - ea.mean
    return Comparison(label, ea, eb, diff, None, None)
