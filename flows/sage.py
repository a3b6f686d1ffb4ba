"""The SaGE flows: moral consistency across paraphrases (docs/methods.md §5).

`sage` asks each paraphrase of a question in a fresh dialogue, then "why?"; `sage-rot` does
the same with the bot told the question's RoT first (the SaGE §5.5 experiment). Both report
in one summary entry ("sage"): the graphs of answers and of stated RoTs, text-similarity
baselines, and the RoT-prompted figure when `sage-rot` ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from evaluators import html_parts as h
from scenarios.flow_api import Flow, FlowRun, Row, RunData, SectionContext, below, flow

VARIANTS = ("reference", "paper")


@dataclass
class SageOptions:
    questions: int = field(default=5, metadata={"help": "Questions whose 5 paraphrases it asks."})
    variant: str = field(
        default="reference", metadata={"help": "SaGE definition: reference or paper."}
    )

    def problems(self) -> list[tuple[str, str]]:
        out = below("questions", self.questions, 1)
        if self.variant not in VARIANTS:
            out.append(("variant", f"must be reference or paper, got {self.variant!r}"))
        return out


@dataclass
class SageRotOptions:
    questions: int = field(
        default=5, metadata={"help": "Questions asked with their RoT in a system turn."}
    )

    def problems(self) -> list[tuple[str, str]]:
        return below("questions", self.questions, 1)


@dataclass(frozen=True)
class SageSection:
    """SaGE per graph kind (answers, RoTs) over questions, with baselines and per question."""

    variant: str
    answer: dict[str, Any]
    rot: dict[str, Any]
    baselines: dict[str, Any]
    histogram: dict[str, Any]
    per_question: dict[str, dict[str, float]]
    rot_prompted: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.rot_prompted is None:
            del out["rot_prompted"]
        return out


def _probe(ctx: FlowRun, rot_prompt: bool, label: str) -> None:
    from simulators.sage_probe import run_sage_probe

    chosen = ctx.questions[: ctx.options.questions]
    ctx.step(
        label,
        lambda: run_sage_probe(
            chosen, ctx.backend.agent, ctx.writer, ctx.config.seed, rot_prompt, ctx.done, ctx.meta
        ),
        2,
    )


@flow
class SageFlow(Flow):
    name = "sage"
    order = 20
    probe = True
    Options = SageOptions
    legacy_keys: ClassVar[Mapping[str, str]] = {
        "sage_questions": "questions",
        "sage_variant": "variant",
    }

    def run(self, ctx: FlowRun) -> None:
        _probe(ctx, False, "sage probe")

    def section(self, ctx: SectionContext) -> SageSection | None:
        from simulators.sage_probe import sage_section

        found = sage_section(ctx.dialogues, ctx.embed, ctx.options.variant)
        return None if found is None else SageSection(**found)

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row("SaGE answers", entry.get("answer")), Row("SaGE RoTs", entry.get("rot"))]

    def html(self, entry: Mapping[str, Any] | None) -> str:
        sage = h.mapping(entry)
        if not sage:
            return "<h2>SaGE</h2>" + h.not_run("SaGE probe")
        measures = [
            ("answers", "answer"),
            ("RoTs", "rot"),
            ("RoTs, prompted with the RoT", "rot_prompted"),
        ]
        rows = [
            h.est_row(label, h.estimate(sage.get(k)), 1.0, 3) for label, k in measures if k in sage
        ]
        base = h.mapping(sage.get("baselines"))
        names = {"bleu": "BLEU", "rouge_l": "ROUGE-L", "cosine": "embedding cosine"}
        base_rows = [h.est_row(names.get(k, k), h.estimate(v), 1.0, 3) for k, v in base.items()]
        variant = str(sage.get("variant", h.DASH))
        hist = h.mapping(sage.get("histogram"))
        figs = [
            h.hist(h.mapping(hist.get(k)), f"SaGE per question: {k}", "SaGE", 1.0) for k in hist
        ]
        return (
            "<h2>SaGE</h2>"
            + h.table(["graph", "SaGE", "95% CI", "n"], rows, f"SaGE (variant: {variant})")
            + (
                h.table(["baseline", "mean", "95% CI", "n"], base_rows, "Baselines")
                if base_rows
                else ""
            )
            + (f'<div class="figs">{"".join(figs)}</div>' if figs else "")
        )

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """Per-question SaGE, paired by question."""
        from evaluators.compare import Unit, unit_row

        qa = (h.mapping(a.probes.get("sage")).get("per_question") or {}).items()
        qb = (h.mapping(b.probes.get("sage")).get("per_question") or {}).items()
        rows = []
        for kind, label in (("answer", "SaGE answers"), ("rot", "SaGE RoTs")):
            row = unit_row(
                label, [Unit(k, q[kind]) for k, q in qa], [Unit(k, q[kind]) for k, q in qb]
            )
            if row is not None:
                rows.append(row)
        return rows


@flow
class SageRotFlow(Flow):
    name = "sage-rot"
    summary_key = "sage"  # reported inside the SaGE entry, as "rot_prompted"
    order = 21
    Options = SageRotOptions
    legacy_keys: ClassVar[Mapping[str, str]] = {"sage_questions": "questions"}
    enabled_by = "sage_rot_prompt"
    requires = ("sage",)  # its figure is part of the SaGE section

    def run(self, ctx: FlowRun) -> None:
        _probe(ctx, True, "sage probe (RoT prompted)")

    def summarize(self, dialogues: Any, probes: Mapping[str, Any]) -> Any:
        return None  # its figure is part of the sage entry

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row("SaGE RoTs (RoT-prompted)", entry.get("rot_prompted"))]

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """Only the summary is stored, so the difference of means has no interval."""
        from evaluators.compare import summary_only_row

        row = summary_only_row(
            "SaGE RoTs (RoT-prompted)",
            h.mapping(a.probes.get("sage")).get("rot_prompted"),
            h.mapping(b.probes.get("sage")).get("rot_prompted"),
        )
        return [] if row is None else [row]
