"""The static inference flow: S_RIL with the reference discussion given (docs/methods.md §4).

Only the bot's answer to the related question is its own, so this S_RIL answers a different
question than the interactive one: it gets its own summary entry ("static_ril") and never
enters the MoralDial metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from evaluators import html_parts as h
from evaluators.metric_summary import metric_section
from flows.moraldial import DISPLAY, metric_names, metric_units
from scenarios.flow_api import Flow, FlowRun, Row, RunData, flow


@flow
class StaticRilFlow(Flow):
    name = "static-ril"
    summary_key = "static_ril"
    order = 10
    probe = True

    def run(self, ctx: FlowRun) -> None:
        from simulators.static_ril import run_static_ril

        b = ctx.backend
        ctx.step(
            "static RIL",
            lambda: run_static_ril(
                ctx.questions, b.agent, b.turn_scorer, ctx.writer,
                seed=ctx.config.seed, done=ctx.done, meta=ctx.meta,
            ),
            1,
        )  # fmt: skip

    def summarize(self, dialogues: Sequence[Any], probes: Mapping[str, Any]) -> Any:
        static = [d for d in dialogues if d.flow == self.name]
        if not static:
            return None
        section = metric_section(static, ("S_RIL",))
        section["S_RIL"].update(label="inference, context given", over="static-ril dialogues")
        return section

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row("S_RIL (static)", entry.get("S_RIL"))]

    def html(self, entry: Mapping[str, Any] | None) -> str:
        """Static S_RIL beside, never inside, the interactive table."""
        section = h.mapping(entry)
        if not section:
            return ""  # an optional flow: nothing to say when it was not run
        by_band = "by consensus: mean ×100 [95% CI] (n)"
        headers = ["metric", "mean ×100", "95% CI ×100", "n", by_band]
        rows = []
        for m in metric_names(section):
            est = h.estimate(section[m])
            by = h.mapping(h.mapping(est.get("by")).get("consensus"))
            bands = sorted(by, key=lambda g: h.group_order("consensus", g))
            cells = "; ".join(f"{g}: {h.cell(h.estimate(by[g]))}" for g in bands) or h.DASH
            rows.append([*h.est_row(f"{DISPLAY.get(m, m)} (static)", est, 100.0, 1), cells])
        note = (
            "Context given (question, reference answer, why, reference explanation, related "
            "question); only the answer to the related question is the bot's."
        )
        return (
            "<h2>Static RIL</h2>"
            + h.table(headers, rows, "Static RIL (×100)")
            + f'<p class="note">{escape(note)}</p>'
        )

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """Per dialogue, paired by scenario."""
        from evaluators.compare import unit_row

        row = unit_row(
            "S_RIL (static)",
            metric_units(a.dialogues, "S_RIL", self.name),
            metric_units(b.dialogues, "S_RIL", self.name),
        )
        return [] if row is None else [row]
