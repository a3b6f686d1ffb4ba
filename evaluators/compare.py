"""Two runs side by side: each metric's mean and CI per run, and the difference.

The difference B - A gets a Welch t interval computed from the per-dialogue values of both
runs (not from the rounded summaries), so runs of different sizes compare correctly. This is
how a user sees base vs moral bot.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def metric_values(
    dialogues: Sequence[Dialogue], metric: str, flow: str = "moraldial"
) -> list[float]:
    out = []
    for d in dialogues:
        if d.flow != flow:
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
    """MoralDial metrics, then the probes either run has (static S_RIL, SaGE, DIT, prudence)."""
    a = read_dialogues(Path(run_a) / "dialogues.jsonl")
    b = read_dialogues(Path(run_b) / "dialogues.jsonl")
    rows = []
    for metric in METRICS:
        va, vb = metric_values(a, metric), metric_values(b, metric)
        rows.append(Comparison(metric, mean_ci(va), mean_ci(vb), *welch_interval(va, vb)))
    va, vb = metric_values(a, "S_RIL", "static-ril"), metric_values(b, "S_RIL", "static-ril")
    if va or vb:
        rows.append(Comparison("S_RIL (static)", mean_ci(va), mean_ci(vb), *welch_interval(va, vb)))
    rows += _probe_rows(_probes(Path(run_a)), _probes(Path(run_b)))
    return rows


def _probes(run: Path) -> dict[str, Any]:
    path = run / "probes.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _estimate(entry: Any) -> Estimate:
    if not isinstance(entry, dict) or entry.get("mean") is None:
        return Estimate(None, None, None, 0)
    ci = entry.get("ci95") or [None, None]
    return Estimate(entry["mean"], ci[0], ci[1], int(entry.get("n", 0)))


def _probe_rows(a: dict[str, Any], b: dict[str, Any]) -> list[Comparison]:
    """Probe rows. Where the per-unit values are stored (SaGE per question, DIT per ranking)
    the difference gets a Welch interval; where only the summary is (prudence, a rate of
    rates; SaGE with RoT prompting) it is the difference of means, without an interval."""
    rows: list[Comparison] = []

    def per_unit(label: str, va: list[float], vb: list[float]) -> None:
        if va or vb:
            rows.append(Comparison(label, mean_ci(va), mean_ci(vb), *welch_interval(va, vb)))

    def summary_only(label: str, ea: Estimate, eb: Estimate) -> None:
        if ea.mean is None and eb.mean is None:
            return
        diff = None if ea.mean is None or eb.mean is None else eb.mean - ea.mean
        rows.append(Comparison(label, ea, eb, diff, None, None))

    sage_a, sage_b = a.get("sage") or {}, b.get("sage") or {}
    for kind, label in (("answer", "SaGE answers"), ("rot", "SaGE RoTs")):
        per_q_a = (sage_a.get("per_question") or {}).values()
        per_q_b = (sage_b.get("per_question") or {}).values()
        per_unit(label, [q[kind] for q in per_q_a], [q[kind] for q in per_q_b])
    summary_only(
        "SaGE RoTs (RoT-prompted)",
        _estimate(sage_a.get("rot_prompted")),
        _estimate(sage_b.get("rot_prompted")),
    )
    dit_a, dit_b = a.get("dit") or {}, b.get("dit") or {}
    per_unit(  # P is 0-100; /100 so it reads x100 like every other row
        "DIT P-score",
        [v / 100 for v in dit_a.get("p_values") or []],
        [v / 100 for v in dit_b.get("p_values") or []],
    )
    pru_a, pru_b = a.get("prudence") or {}, b.get("prudence") or {}
    summary_only("prudence", _estimate(pru_a.get("prudence")), _estimate(pru_b.get("prudence")))
    return rows
