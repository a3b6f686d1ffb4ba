"""The DIT flow: the Defining Issues Test probe, placing a bot on Kohlberg's stages
(docs/methods.md §6). Its summary entry ("dit") holds the P-score, stage profile, validity
checks and, in likelihood mode, the order-averaged P and the positional-bias test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any, ClassVar

from evaluators import html_parts as h
from evaluators.svg_charts import Bar, bar_chart
from scenarios.flow_api import (
    Flow,
    FlowPlan,
    FlowRun,
    Note,
    Row,
    RunData,
    SectionContext,
    below,
    flow,
)

MODES = ("generation", "likelihood")
STAGES = ("2", "3", "4", "5", "6", "M")


@dataclass
class DitOptions:
    dilemmas: int = field(
        default=2,
        metadata={"help": "Dilemmas asked (0: every dilemma of the pack; 2 keeps the demo short)."},
    )
    orders: int = field(
        default=2,
        metadata={"help": "Statement/option orders per dilemma (48: the full order protocol)."},
    )
    mode: str = field(
        default="likelihood",
        metadata={
            "help": "Answers from free text (generation) or from the bot's log-probabilities "
            "(likelihood; scores models that cannot follow the answer format)."
        },
    )

    def problems(self) -> list[tuple[str, str]]:
        out = below("dilemmas", self.dilemmas, 0)
        if not 1 <= self.orders <= 48:
            out.append(("orders", f"must be between 1 and 48, got {self.orders!r}"))
        if self.mode not in MODES:
            out.append(("mode", f"must be generation or likelihood, got {self.mode!r}"))
        return out


@dataclass(frozen=True)
class DitSection:
    """The headline figures typed; `measures` keeps every other figure as scored."""

    mode: str
    p_mean_ci: dict[str, Any]
    measures: dict[str, Any]
    unreliable: str | None = None
    order_averaged: dict[str, Any] | None = None
    key_order: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """probes.json keeps the order the scoring wrote its figures in."""

    @classmethod
    def from_scores(cls, scores: dict[str, Any]) -> DitSection:
        rest = {
            k: v
            for k, v in scores.items()
            if k not in ("mode", "p_mean_ci", "unreliable", "order_averaged")
        }
        return cls(
            scores["mode"],
            scores["p_mean_ci"],
            rest,
            scores.get("unreliable"),
            scores.get("order_averaged"),
            tuple(scores),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {"mode": self.mode, **self.measures, "p_mean_ci": self.p_mean_ci}
        if self.unreliable is not None:
            out["unreliable"] = self.unreliable
        if self.order_averaged is not None:
            out["order_averaged"] = self.order_averaged
        return _in_order(out, self.key_order)


@flow
class DitFlow(Flow):
    name = "dit"
    order = 30
    probe = True
    Options = DitOptions
    legacy_keys: ClassVar[Mapping[str, str]] = {
        "dit_dilemmas": "dilemmas",
        "dit_orders": "orders",
        "dit_mode": "mode",
    }

    def check(self, plan: FlowPlan) -> None:
        if not plan.pack.dilemmas:
            raise ValueError(f"'flows': pack '{plan.pack.name}' has no DIT dilemmas; remove 'dit'")

    def run(self, ctx: FlowRun) -> None:
        from simulators.dit_probe import run_dit_probe

        o = ctx.options
        dilemmas = ctx.pack.dilemmas[: o.dilemmas or None]
        ctx.step(
            f"DIT probe ({o.mode})",
            lambda: run_dit_probe(
                dilemmas, ctx.backend.agent, ctx.writer, seed=ctx.config.seed,
                orders=o.orders, mode=o.mode, done=ctx.done, meta=ctx.meta,
            ),
            3,
        )  # fmt: skip

    def section(self, ctx: SectionContext) -> DitSection | None:
        from simulators.dit_probe import dit_section

        found = dit_section(ctx.dialogues, ctx.dilemmas, mode=ctx.options.mode)
        return None if found is None else DitSection.from_scores(found)

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        unreliable = " (unreliable)" if entry.get("unreliable") else ""
        return [Row(f"DIT P-score (0-100){unreliable}", entry.get("p_mean_ci"), 1.0)]

    def notes(self, entry: Mapping[str, Any]) -> list[Note]:
        """The order-averaged P and, when position drives the rankings, why P is unreliable."""
        out = []
        averaged = h.mapping(entry.get("order_averaged")).get("p_score")
        if averaged is not None:
            out.append(Note(f"DIT P from order-averaged ratings: {averaged:.1f}"))
        if entry.get("unreliable"):
            out.append(Note(f"DIT P-score: {entry['unreliable']}", warning=True))
        return out

    def html(self, entry: Mapping[str, Any] | None) -> str:
        dit = h.mapping(entry)
        if not dit:
            return "<h2>DIT</h2>" + h.not_run("DIT probe")
        chart = bar_chart(
            _stage_bars(dit),
            title="DIT stage profile",
            y_title="score (0–100)",
            limits=(0.0, 100.0),
            references=[(dit.get("random_baseline"), "random P")],
        )
        caption = "Points per stage (0–100, stages sum to 100); dashed: random-ranking P."
        unreliable = dit.get("unreliable")
        banner = (
            f'<div class="warning">Warning: the DIT P-score is unreliable: '
            f"{escape(str(unreliable))}.</div>"
            if unreliable
            else ""
        )
        return (
            "<h2>DIT</h2>"
            + banner
            + h.table(["measure", "value", "reference"], _measure_rows(dit))
            + h.figure(chart, caption)
        )

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """Per-ranking P values; /100 so the row reads x100 like every other row."""
        from evaluators.compare import per_unit_row

        row = per_unit_row(
            "DIT P-score",
            [v / 100 for v in h.mapping(a.probes.get("dit")).get("p_values") or []],
            [v / 100 for v in h.mapping(b.probes.get("dit")).get("p_values") or []],
        )
        return [] if row is None else [row]


def _in_order(data: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    first = {k: data[k] for k in order if k in data}
    return first | {k: v for k, v in data.items() if k not in first}


def _stage_bars(dit: Mapping[str, Any]) -> list[Bar]:
    stages = h.mapping(dit.get("stage_scores"))
    schema = h.mapping(dit.get("schema"))
    return [Bar(s, stages.get(s)) for s in STAGES] + [Bar("P", schema.get("postconventional"))]


def _measure_rows(dit: Mapping[str, Any]) -> list[list[str]]:
    schema = h.mapping(dit.get("schema"))
    flag = dit.get("m_flag")
    valid, total = dit.get("n_valid_rankings"), dit.get("n_responses")
    num = h.num
    return [
        ["P-score", num(dit.get("p_score")), "0–100, mean over presentations"],
        [
            "P, order-averaged ratings",
            num(h.mapping(dit.get("order_averaged")).get("p_score")),
            "likelihood mode: each statement's expected rating averaged over its positions",
        ],
        ["SD of P over orders", num(dit.get("p_sd")), ""],
        ["personal interest (2+3)", num(schema.get("personal_interest")), ""],
        ["maintaining norms (4)", num(schema.get("maintaining_norms")), ""],
        ["postconventional (5+6)", num(schema.get("postconventional")), ""],
        ["pre-conventional (2)", num(dit.get("preconventional")), ""],
        ["conventional (3+4)", num(dit.get("conventional")), ""],
        ["can't-decide rate", num(dit.get("cant_decide_rate"), 100.0, 1, "%"), ""],
        ["random baseline (P)", num(dit.get("random_baseline")), "100·a/N"],
        [
            "positional bias",
            num(dit.get("positional_bias"), 100.0, 1, "%"),
            f"chance {num(dit.get('positional_chance'), 100.0, 1, '%')}",
        ],
        ["M-item flag", h.DASH if flag is None else ("raised" if flag else "not raised"), ""],
        ["valid rankings / responses", f"{num(valid, digits=0)}/{num(total, digits=0)}", ""],
        ["mode", str(dit.get("mode") or h.DASH), ""],
    ]
