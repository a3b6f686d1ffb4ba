"""The prudence flow: a clear stance on near-universal RoTs, hedging on contested ones
(docs/methods.md §7). Every wording of a question is asked in its own one-turn dialogue and
scored by the agreement scorer; the summary entry ("prudence") holds the two rates, their
combination, stance flips across wordings and the stance counts per band.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from evaluators import html_parts as h
from scenarios.flow_api import Flow, FlowRun, Row, RunData, SectionContext, below, flow

MEASURES = (
    ("prudence", "prudence"),
    ("aligned on universal RoTs", "aligned_on_universal"),
    ("hedged on contested RoTs", "hedged_on_contested"),
    ("stance flips across paraphrases", "stance_flips"),
)


@dataclass
class PrudenceOptions:
    questions: int = field(
        default=6, metadata={"help": "Questions asked (half contested, half universal RoTs)."}
    )

    def problems(self) -> list[tuple[str, str]]:
        return below("questions", self.questions, 1)


@dataclass(frozen=True)
class PrudenceSection:
    """The rates (estimates with mean, ci95, n) and what they were computed from."""

    prudence: dict[str, Any]
    aligned_on_universal: dict[str, Any]
    hedged_on_contested: dict[str, Any]
    stance_flips: dict[str, Any]
    threshold: float
    per_question: dict[str, Any]
    other: dict[str, Any]
    """Further figures of `evaluators.prudence` (stance counts, the draw), as computed."""
    key_order: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """probes.json keeps the order the scoring wrote its figures in."""

    @classmethod
    def from_scores(cls, scores: dict[str, Any]) -> PrudenceSection:
        typed = {f for f in cls.__dataclass_fields__ if f not in ("other", "key_order")}
        return cls(
            **{k: scores[k] for k in typed},
            other={k: v for k, v in scores.items() if k not in typed},
            key_order=tuple(scores),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        order = out.pop("key_order")
        data = {**out.pop("other"), **out}
        first = {k: data[k] for k in order if k in data}
        return first | {k: v for k, v in data.items() if k not in first}


@flow
class PrudenceFlow(Flow):
    name = "prudence"
    order = 40
    probe = True
    Options = PrudenceOptions
    legacy_keys: ClassVar[Mapping[str, str]] = {"prudence_questions": "questions"}

    def run(self, ctx: FlowRun) -> None:
        from simulators.prudence_probe import run_prudence_probe

        b = ctx.backend
        ctx.step(
            "prudence probe",
            lambda: run_prudence_probe(
                ctx.pool, b.agent, b.agreement, ctx.writer, seed=ctx.config.seed,
                n_questions=ctx.options.questions, done=ctx.done, meta=ctx.meta,
            ),
            1,
        )  # fmt: skip

    def section(self, ctx: SectionContext) -> PrudenceSection | None:
        from simulators.prudence_probe import prudence_section

        found = prudence_section(ctx.dialogues, seed=ctx.config.seed)
        return None if found is None else PrudenceSection.from_scores(found)

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row("prudence", entry.get("prudence"))]

    def html(self, entry: Mapping[str, Any] | None) -> str:
        pru = h.mapping(entry)
        if not pru:
            return "<h2>Prudence</h2>" + h.not_run("prudence probe")
        rows = [h.est_row(label, h.estimate(pru.get(k)), 100.0, 1) for label, k in MEASURES]
        counts = {b: h.mapping(c) for b, c in h.mapping(pru.get("stance_counts")).items()}
        stances = ["aligned", "undecided", "opposed"]
        stances += sorted({s for c in counts.values() for s in c if s not in stances})
        count_rows = [[b, *(str(c.get(s, 0)) for s in stances)] for b, c in counts.items()]
        return (
            "<h2>Prudence</h2>"
            + h.table(["measure", "mean ×100", "95% CI ×100", "n"], rows, "Prudence (×100)")
            + (h.table(["band", *stances], count_rows, "Stance counts") if count_rows else "")
        )

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """A rate of rates: only the summary exists, so no difference interval."""
        from evaluators.compare import summary_only_row

        row = summary_only_row(
            "prudence",
            h.mapping(a.probes.get("prudence")).get("prudence"),
            h.mapping(b.probes.get("prudence")).get("prudence"),
        )
        return [] if row is None else [row]
