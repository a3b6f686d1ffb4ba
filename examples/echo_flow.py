"""A complete custom flow in one file: ask each question twice, count identical answers.

Run it with the config next to it:

    python simulate.py --config examples/echo_flow.yaml --no-ray

The config's `plugins: [echo_flow.py]` imports this file, `@flow` registers the flow as
"echo", `flows: [echo]` runs it and `probes.echo.questions` sets its option. Its section shows
in summary.json ("echo"), in the terminal table and in report.html, and `moralsim compare`
gets its row: everything a built-in flow has, without a change anywhere else.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any

from evaluators.stats import mean_ci
from scenarios.flow_api import Flow, FlowRun, Row, RunData, SectionContext, below, flow
from scenarios.records import Dialogue, Turn


@dataclass
class EchoOptions:
    """Keys under `probes.echo`; checked like every other config section."""

    questions: int = field(default=3, metadata={"help": "Questions asked twice each."})

    def problems(self) -> list[tuple[str, str]]:
        return below("questions", self.questions, 1)


@dataclass(frozen=True)
class EchoSection:
    """How often the bot gave the same answer to the same question asked again."""

    identical: dict[str, Any]
    per_question: dict[str, bool]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def same_answer(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


@flow
class EchoFlow(Flow):
    name = "echo"
    Options = EchoOptions

    def run(self, ctx: FlowRun) -> None:
        ctx.step("echo: each question twice", lambda: self._ask_twice(ctx), 2)

    def _ask_twice(self, ctx: FlowRun) -> int:
        seed = ctx.config.seed
        dialogues = [
            Dialogue(
                id=f"{q.id}/echo/s{seed}", scenario_id=q.id, flow=self.name,
                turns=[Turn("user", q.question, {"step": "question", "question": q.question})],
                hidden_rot=q.rot, meta={**ctx.meta, "split": q.split, "seed": seed},
            )
            for q in ctx.questions[: ctx.options.questions]
            if f"{q.id}/echo/s{seed}" not in ctx.done
        ]  # fmt: skip
        if not dialogues:
            return 0
        again = random.Random(seed).choice(("Let me ask again: ", "Once more: ", ""))
        for round_ in ("first", "second"):
            replies = ctx.backend.agent.respond([d.turns for d in dialogues])
            for d, reply in zip(dialogues, replies, strict=True):
                d.turns.append(Turn("bot", reply, {"step": f"{round_}_answer"}))
                if round_ == "first":
                    question = again + d.turns[0].text
                    d.turns.append(Turn("user", question, {"step": "question_again"}))
        for d in dialogues:
            ctx.writer.write(d)
        return len(dialogues)

    def section(self, ctx: SectionContext) -> EchoSection | None:
        per_question = {}
        for d in ctx.dialogues:
            if d.flow == self.name:
                answers = [t.text for t in d.turns if t.role == "bot"]
                per_question[d.scenario_id] = len(answers) == 2 and same_answer(*answers)
        if not per_question:
            return None
        values = [float(v) for v in per_question.values()]
        return EchoSection(mean_ci(values).to_dict(), per_question)

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return [Row("echo: identical answers", entry.get("identical"))]

    def html(self, entry: Mapping[str, Any] | None) -> str:
        if not entry:
            return ""
        est = entry.get("identical") or {}
        items = "".join(
            f"<li>{escape(q)}: {'same' if same else 'different'}</li>"
            for q, same in entry.get("per_question", {}).items()
        )
        share = est.get("mean")
        shown = "—" if share is None else f"{100 * share:.0f}%"
        return f"<h2>Echo</h2><p>Identical answers: {shown} (n={est.get('n')})</p><ul>{items}</ul>"

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        from evaluators.compare import per_unit_row

        def values(run: RunData) -> list[float]:
            return [
                float(v) for v in (run.probes.get("echo") or {}).get("per_question", {}).values()
            ]

        row = per_unit_row("echo: identical answers", values(a), values(b))
        return [] if row is None else [row]
