"""The MoralDial metric section: each metric's mean, 95% CI and n, broken down for analysis.

Breakdowns: by split, by moral foundation of the hidden RoT (a dialogue counts once for each
of its foundations), and by consensus band (contested <= 3, 4, 5). Values in [-1, 1] are kept
as they are here; reports show them x100 as the papers do. Used by every flow whose records
carry MoralDial turn scores (the interactive dialogue, the static inference setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluators.moraldial import METRIC_RANGES, METRICS
from evaluators.stats import histogram, mean_ci
from scenarios.records import Dialogue

METRIC_INFO: dict[str, dict[str, str]] = {
    "S_MA": {"label": "safety", "range": "[-1, 1]", "over": "answers"},
    "S_ME": {"label": "explanation", "range": "[-1, 1]", "over": "dialogues with an explanation"},
    "S_MR1": {"label": "agreement before push-back", "range": "[-1, 1]", "over": "answers"},
    "S_MR2": {
        "label": "agreement after push-back",
        "range": "[-1, 1]",
        "over": "dialogues with push-back",
    },
    "dS_MR": {"label": "revision gain", "range": "[-2, 2]", "over": "dialogues with push-back"},
    "S_MR": {"label": "revision", "range": "[0, 1]", "over": "all dialogues"},
    "S_RIL": {
        "label": "inference",
        "range": "[-1, 1]",
        "over": "dialogues with a related question",
    },
}


def consensus_band(consensus: int | None) -> str:
    if consensus is None:
        return "unknown"
    return "contested (<=3)" if consensus <= 3 else str(consensus)


def metric_section(
    dialogues: Sequence[Dialogue], metrics: Sequence[str] = METRICS
) -> dict[str, Any]:
    """The MoralDial metrics: overall, by split / foundation / consensus band, and histograms."""
    out: dict[str, Any] = {}
    for metric in metrics:
        rows: list[tuple[float, Dialogue]] = []
        for d in dialogues:
            found = d.scores_named(metric)
            if found:
                rows.append((found[0].value, d))
        values = [v for v, _ in rows]
        by: dict[str, dict[str, list[float]]] = {"split": {}, "foundation": {}, "consensus": {}}
        for value, d in rows:
            by["split"].setdefault(str(d.meta.get("split", "unknown")), []).append(value)
            rot = d.hidden_rot
            for f in rot.foundations if rot and rot.foundations else ("unknown",):
                by["foundation"].setdefault(f, []).append(value)
            by["consensus"].setdefault(consensus_band(rot.consensus if rot else None), []).append(
                value
            )
        low, high = METRIC_RANGES.get(metric, (-1.0, 1.0))
        out[metric] = {
            **mean_ci(values, bounds=(low, high)).to_dict(),
            **METRIC_INFO[metric],
            "by": {
                key: {
                    group: mean_ci(v, bounds=(low, high)).to_dict()
                    for group, v in sorted(groups.items())
                }
                for key, groups in by.items()
            },
            "histogram": histogram(values, low, high),
        }
    return out
