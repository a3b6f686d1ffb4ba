"""The MoralDial simulated user: holds a hidden RoT and decides each move from live scores.

Flow (docs/methods.md §4): ask Q -> the bot answers A -> ask why (ME) -> the bot gives R_bot ->
push back with a but-phrase + the hidden RoT when S_MR1 < 0.35 (a firmer phrase below -0.35)
-> the bot revises (MR) -> a base-phrase + the related question sharing the RoT (RIL) -> the
bot answers A_new -> done. The RoT never appears in a user turn except in the push-back.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol

from evaluators.moraldial import MoralDialParams
from scenarios.phrases import pick, pushback
from scenarios.records import Dialogue, Turn
from scenarios.registry import USER_POLICIES
from scenarios.types import MoralQuestion

BOT_STEP_AFTER = {
    "question": "answer",
    "why": "explanation",
    "pushback": "revision",
    "related": "new_answer",
}


class TurnPhraser(Protocol):
    """Rewords the policy's template turns (the optional LLM user); the move, its step and the
    question a score is defined on stay the policy's."""

    def rephrase(self, moves: Sequence[tuple[Dialogue, Turn]]) -> list[Turn]: ...


@USER_POLICIES.register("moraldial")
class MoralDialUser:
    """One user for one question; `next` returns the next user turn, or None when done."""

    def __init__(
        self, question: MoralQuestion, params: MoralDialParams, rng: random.Random
    ) -> None:
        self.question = question
        self.params = params
        self.rng = rng

    def needs(self, dialogue: Dialogue) -> tuple[str, ...]:
        """Score names the next move reads: a runtime that scores turns in the background
        waits for these (S_MR1 before deciding on a push-back) and for nothing else."""
        return ("S_MR1",) if _last_user_step(dialogue) == "why" else ()

    def next(self, dialogue: Dialogue) -> Turn | None:
        last = _last_user_step(dialogue)
        if last is None:
            return Turn(
                "user",
                self.question.question,
                {"step": "question", "question": self.question.question},
            )
        if last == "question":
            return Turn("user", pick("why", self.rng), {"step": "why"})
        if last == "why":
            s_mr1 = next((s.value for s in dialogue.scores if s.name == "S_MR1"), None)
            if s_mr1 is not None and s_mr1 < self.params.pushback_below:
                firm = s_mr1 < self.params.firm_below
                text = pushback(self.question.rot.text, self.rng, firm=firm)
                return Turn("user", text, {"step": "pushback", "firm": firm})
            return self._related()
        if last == "pushback":
            return self._related()
        return None

    def _related(self) -> Turn:
        related = self.question.related_question
        return Turn(
            "user", pick("base", self.rng) + related, {"step": "related", "question": related}
        )


def _last_user_step(dialogue: Dialogue) -> str | None:
    return next((t.meta.get("step") for t in reversed(dialogue.turns) if t.role == "user"), None)


def dialogue_id(question_id: str, flow: str, seed: int) -> str:
    """Deterministic: the same question, flow and seed is the same dialogue (resume key)."""
    return f"{question_id}/{flow}/s{seed}"


def open_dialogue(
    question: MoralQuestion,
    params: MoralDialParams,
    seed: int,
    meta: dict[str, Any],
    policy: str = "moraldial",
) -> tuple[Dialogue, Any]:
    """A fresh MoralDial dialogue and its user, built by the registered user policy `policy`
    (`USER_POLICIES`: a factory of (question, params, rng) with `next(dialogue)`). Every
    runtime starts dialogues here, and the user's phrase choices come from a generator seeded
    by (seed, question) alone, so the same seed gives the same dialogue in any runtime and
    after any retry."""
    dialogue = Dialogue(
        id=dialogue_id(question.id, "moraldial", seed),
        scenario_id=question.id,
        flow="moraldial",
        hidden_rot=question.rot,
        meta={**meta, "split": question.split, "seed": seed},
    )
    factory = USER_POLICIES.get(policy)
    return dialogue, factory(question, params, random.Random(f"{seed}/{question.id}"))


def pending_questions(
    questions: Sequence[MoralQuestion], seed: int, done: set[str]
) -> list[MoralQuestion]:
    """The questions whose MoralDial dialogue is not in `done` yet (what a resumed run runs)."""
    return [q for q in questions if dialogue_id(q.id, "moraldial", seed) not in done]
