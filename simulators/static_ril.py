"""Static RIL: S_RIL with the discussion given, so only the bot's answer to Q_new is its own.

The interactive MoralDial dialogue reaches the related question through the bot's own answer
and explanation, so its S_RIL mixes "can the bot carry a rule over" with "what did the bot say
before". The static setting (docs/methods.md §4, last bullet) removes the second part: every turn up
to Q_new is the question's reference discussion (an ME exchange),

    user Q -> bot A (agree answer) -> user W (why) -> bot R (explanation)
    -> user base-phrase + Q_new -> bot A_new (generated)

and S_RIL = AS(Q_new, A_new, R_user) is scored by the ordinary MoralDial scorer on the one
generated turn. Given bot turns carry meta {"given": true}; they are never sent to a scorer,
so no metric can credit the bot with words it did not say.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol

from evaluators.moraldial import TurnRequest
from scenarios.jsonl import DialogueWriter
from scenarios.phrases import pick
from scenarios.records import Dialogue, Score, Turn
from scenarios.types import MoralQuestion

FLOW = "static-ril"
_REQUIRED = ("question", "agree_answer", "explanation", "related_question")


class TurnScorer(Protocol):
    """`MoralDialScorer` in process, or a runtime's proxy to its evaluator actors."""

    def score_turns(self, requests: Sequence[TurnRequest]) -> list[list[Score]]: ...


def static_ril_dialogue_id(question_id: str, seed: int) -> str:
    """Deterministic: the same question and seed is the same dialogue (the resume key)."""
    return f"{question_id}/{FLOW}/s{seed}"


def static_ril_context(question: MoralQuestion, seed: int) -> list[Turn]:
    """The given turns, ending with the user's related question (phrases seeded per question)."""
    missing = [f for f in _REQUIRED if not str(getattr(question, f) or "").strip()]
    if missing:
        raise ValueError(
            f"question '{question.id}': static RIL needs {', '.join(missing)}, which is empty"
        )
    rng = random.Random(f"{seed}/{FLOW}/{question.id}")
    why = pick("why", rng)
    base = pick("base", rng)
    related = question.related_question
    return [
        Turn("user", question.question, {"step": "question", "question": question.question}),
        Turn("bot", question.agree_answer, {"step": "answer", "given": True}),
        Turn("user", why, {"step": "why"}),
        Turn("bot", question.explanation, {"step": "explanation", "given": True}),
        Turn("user", base + related, {"step": "related", "question": related}),
    ]


def run_static_ril(
    questions: Sequence[MoralQuestion],
    agent: Any,
    scorer: TurnScorer,
    writer: DialogueWriter,
    *,
    seed: int = 0,
    done: set[str] = frozenset(),  # type: ignore[assignment]
    meta: dict[str, Any] | None = None,
) -> int:
    """One batched bot call and one scoring batch for all pending questions; returns the count.

    Args:
        questions: the questions (their reference answers form the given context).
        agent: the bot (any ChatAgent).
        scorer: the MoralDial turn scorer; only the generated turn is sent, so only S_RIL.
        writer: where finished dialogues go.
        seed: phrase choice and dialogue ids.
        done: dialogue ids already on disk (skipped).
        meta: copied into every dialogue's meta (bot, adapter, run name).
    """
    dialogues = [
        Dialogue(
            id=static_ril_dialogue_id(q.id, seed),
            scenario_id=q.id,
            flow=FLOW,
            turns=static_ril_context(q, seed),
            hidden_rot=q.rot,
            meta={**(meta or {}), "split": q.split, "seed": seed, "context": "ME"},
        )
        for q in questions
        if static_ril_dialogue_id(q.id, seed) not in done
    ]
    if not dialogues:
        return 0
    replies = agent.respond([d.turns for d in dialogues])
    if len(replies) != len(dialogues):
        raise ValueError(
            f"static RIL: the bot returned {len(replies)} replies for {len(dialogues)} dialogues"
        )
    for d, reply in zip(dialogues, replies, strict=True):
        d.turns.append(Turn("bot", reply, {"step": "new_answer"}))
    requests = [TurnRequest(d, len(d.turns) - 1) for d in dialogues]
    for d, scores in zip(dialogues, scorer.score_turns(requests), strict=True):
        d.scores += scores
        writer.write(d)
    return len(dialogues)
