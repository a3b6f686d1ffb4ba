"""The MoralDial flow: interactive dialogues between the simulated user and the bot.

Each dialogue is question -> answer -> why -> explanation -> (push-back -> revision) -> related
question -> new answer, scored turn by turn while it runs (docs/methods.md §2-§4). Its
summary entry is "metrics": S_MA, S_ME, S_MR1, S_MR2, ΔS_MR, S_MR and S_RIL with their
breakdowns and histograms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from evaluators import html_parts as h
from evaluators.compare import Unit
from evaluators.metric_summary import metric_section
from evaluators.moraldial import METRICS
from evaluators.svg_charts import Bar, bar_chart
from scenarios.flow_api import Flow, FlowRun, Row, RunData, flow

METRIC_ORDER: tuple[str, ...] = ("S_MA", "S_ME", "S_MR1", "S_MR2", "dS_MR", "S_MR", "S_RIL")
DISPLAY = {"dS_MR": "ΔS_MR"}
BREAKDOWNS = (("split", "split"), ("foundation", "moral foundation"), ("consensus", "consensus"))


def metric_names(metrics: Mapping[str, Any]) -> list[str]:
    return [m for m in METRIC_ORDER if m in metrics] + [m for m in metrics if m not in METRIC_ORDER]


def metric_units(dialogues: Sequence[Any], metric: str, flow_name: str) -> list[Unit]:
    """One value per dialogue of `flow_name` (the first score of that name), keyed by its
    scenario so two runs pair up, with the bot turn it scored (the first bot turn for a
    dialogue-level score) for the side-by-side table."""
    out = []
    for d in dialogues:
        if d.flow != flow_name:
            continue
        found = d.scores_named(metric)
        if found:
            out.append(Unit(d.scenario_id, found[0].value, _scored_text(d, found[0].turn)))
    return out


def _scored_text(dialogue: Any, turn: int | None) -> str:
    if turn is not None and 0 <= turn < len(dialogue.turns):
        return dialogue.turns[turn].text
    return next((t.text for t in dialogue.turns if t.role == "bot"), "")


@flow
class MoralDialFlow(Flow):
    name = "moraldial"
    summary_key = "metrics"
    order = 0

    def run(self, ctx: FlowRun) -> None:
        task = ctx.bar.add_task("moraldial dialogues", total=None, live="")
        ctx.live.on_change = _progress_updater(ctx.bar, task, ctx.say)
        stats = ctx.backend.runner.run(ctx.questions, ctx.writer, ctx.done, ctx.live)
        ctx.outcome["skipped"] = ctx.outcome.get("skipped", 0) + stats.skipped
        ctx.outcome["retried"] = ctx.outcome.get("retried", 0) + stats.retried

    def summarize(self, dialogues: Sequence[Any], probes: Mapping[str, Any]) -> Any:
        # Always present (n = 0 when not run), as every summary has had it.
        return metric_section([d for d in dialogues if d.flow == self.name])

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row(DISPLAY.get(metric, metric), value) for metric, value in entry.items()]

    def html(self, entry: Mapping[str, Any] | None) -> str:
        metrics = dict(h.mapping(entry))
        if not metrics:
            return "<h2>MoralDial</h2>" + h.not_run("MoralDial metrics")
        return _metrics_table(metrics) + _breakdowns(metrics) + _distributions(metrics)

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """Per dialogue, paired by scenario: the same questions asked of both bots."""
        from evaluators.compare import unit_row

        rows = []
        for metric in METRICS:
            row = unit_row(
                DISPLAY.get(metric, metric),
                metric_units(a.dialogues, metric, self.name),
                metric_units(b.dialogues, metric, self.name),
            )
            if row is not None:
                rows.append(row)
        return rows


def _progress_updater(bar: Any, task: Any, say: Callable[[str], None]) -> Callable[[Any], None]:
    """Live bar on a terminal; without one (a `ray job submit` log, nohup) a bar would show
    nothing until the end, so a plain status line is printed every 15 s instead."""
    last = [time.perf_counter()]

    def update(s: Any) -> None:
        bar.update(task, completed=s.dialogues, total=s.total, live=s.line())
        now = time.perf_counter()
        if not bar.console.is_terminal and (now - last[0] >= 15 or s.dialogues == s.total):
            last[0] = now
            say(f"moraldial {s.dialogues}/{s.total} dialogues · {s.line()}")

    return update


def _metrics_table(metrics: Mapping[str, Any]) -> str:
    rows, bars = [], []
    for m in metric_names(metrics):
        est = h.estimate(metrics[m])
        name = DISPLAY.get(m, m)
        _, mean, ci, n = h.est_row(name, est, 100.0, 1)
        rows.append([name, str(est.get("label", "")), mean, ci, n, str(est.get("over", ""))])
        bars.append(Bar(name, *(h.scaled(v, 100.0) for v in (est.get("mean"), *h.bounds(est)))))
    headers = ["metric", "label", "mean ×100", "95% CI ×100", "n", "over"]
    chart = bar_chart(
        bars,
        title="MoralDial metrics, mean ×100 with 95% CI",
        y_title="score ×100",
        limits=(-200.0, 200.0),
    )
    return (
        "<h2>MoralDial</h2>"
        + h.table(headers, rows, "MoralDial metrics (×100)")
        + h.figure(chart, "Mean ×100 with 95% CI whiskers; no bar where n = 0.")
    )


def _breakdowns(metrics: Mapping[str, Any]) -> str:
    parts = ["<h2>Breakdowns</h2>"]
    for key, caption in BREAKDOWNS:
        by = {m: h.mapping(h.mapping(h.estimate(metrics[m]).get("by")).get(key)) for m in metrics}
        columns = [m for m in metric_names(metrics) if by[m]]
        groups: list[str] = []
        for m in columns:
            groups += [g for g in by[m] if g not in groups]
        if not columns:
            parts.append(
                f'<p class="note">By {escape(caption)}: {h.DASH} (no scored dialogues).</p>'
            )
            continue
        groups.sort(key=lambda g: h.group_order(key, g))
        rows = [[g, *(h.cell(h.estimate(by[m].get(g))) for m in columns)] for g in groups]
        headers = [caption, *(DISPLAY.get(m, m) for m in columns)]
        parts.append(h.table(headers, rows, f"By {caption}: mean ×100 [95% CI] (n)"))
    return "".join(parts)


def _distributions(metrics: Mapping[str, Any]) -> str:
    figs = []
    for m in metric_names(metrics):
        est = h.estimate(metrics[m])
        name = f"{DISPLAY.get(m, m)} (n = {h.n_text(est)})"
        figs.append(h.hist(h.mapping(est.get("histogram")), name, f"{m} ×100", 100.0))
    return "<h2>Score distributions</h2>" + (
        f'<div class="figs">{"".join(figs)}</div>' if figs else h.not_run("distributions")
    )
