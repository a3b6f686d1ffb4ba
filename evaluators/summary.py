"""summary.json: every metric of a run with its mean, 95% CI and n, broken down for analysis.

The summary is built from records alone (`dialogues.jsonl`) plus the question-level results a
run writes to `probes.json`, so `moralsim report` can rebuild it, and a user can rebuild it
from a copied run folder. Each registered flow writes its own entry (`Flow.summarize`); this
module only counts dialogues and puts the entries together, in flow order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scenarios.flow_api import flows_in_order
from scenarios.records import Dialogue

SUMMARY_VERSION = 1


def build_summary(
    dialogues: Sequence[Dialogue],
    probes: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole summary: run facts, dialogue counts per flow, then every flow's entry."""
    counts: dict[str, int] = {}
    for d in dialogues:
        counts[d.flow] = counts.get(d.flow, 0) + 1
    summary: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "run": dict(run or {}),
        "dialogues": {"total": len(dialogues), "by_flow": dict(sorted(counts.items()))},
    }
    for flow in flows_in_order():
        entry = flow.summarize(dialogues, probes or {})
        if entry is not None:
            summary[flow.key()] = entry
    return summary
