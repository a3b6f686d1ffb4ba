"""MoralDial dialogues in one process: many dialogues advance in lockstep, one batch per round.

Each round, every active simulated user makes its move, the bot answers all of them in one
batched `respond`, and the evaluators score all new bot turns in one batch before the users
decide again (the push-back decision needs S_MR1 of the answer). A finished dialogue gets its
dialogue-level scores and is appended to the output at once, so an interrupted run keeps every
finished dialogue and a rerun with `resume` skips them. The Ray runtime produces the same
records for the same seed; this runner is the reference it is tested against.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.moraldial import MoralDialParams, MoralDialScorer, TurnRequest
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Turn
from scenarios.types import MoralQuestion
from simulators.live import LiveStats
from simulators.moraldial_user import (
    BOT_STEP_AFTER,
    MoralDialUser,
    TurnPhraser,
    dialogue_id,
    open_dialogue,
    pending_questions,
)

__all__ = ["InProcessRunner", "RunStats", "dialogue_id"]


@dataclass
class _Active:
    dialogue: Dialogue
    user: MoralDialUser


@dataclass
class RunStats:
    dialogues: int = 0
    bot_turns: int = 0
    seconds: float = 0.0
    skipped: int = 0
    retried: int = 0
    rounds: list[int] = field(default_factory=list)


class InProcessRunner:
    """Runs MoralDial dialogues without Ray (laptop runs, tests, debugging).

    Args:
        agent: the bot (any ChatAgent).
        scorer: the MoralDial scorer (agreement + safety index).
        params: thresholds shared by the user and the metrics.
        seed: phrase choice and the dialogue ids.
        meta: copied into every dialogue's meta (bot, adapter, run name).
        phraser: optional LLM user that rewords the policy's template turns.
        policy: the registered user policy that decides each move.
    """

    def __init__(
        self,
        agent: Any,
        scorer: MoralDialScorer,
        params: MoralDialParams,
        seed: int = 0,
        meta: dict[str, Any] | None = None,
        phraser: TurnPhraser | None = None,
        policy: str = "moraldial",
    ) -> None:
        self.agent = agent
        self.policy = policy
        self.scorer = scorer
        self.params = params
        self.seed = seed
        self.meta = dict(meta or {})
        self.phraser = phraser

    def run(
        self,
        questions: Sequence[MoralQuestion],
        writer: DialogueWriter,
        done: set[str] = frozenset(),  # type: ignore[assignment]
        live: LiveStats | None = None,
    ) -> RunStats:
        live = live or LiveStats()
        stats = RunStats()
        start = time.perf_counter()
        todo = pending_questions(questions, self.seed, done)
        stats.skipped = len(questions) - len(todo)
        active = [
            _Active(*open_dialogue(q, self.params, self.seed, self.meta, self.policy)) for q in todo
        ]
        live.expect(len(active))
        while active:
            moving: list[tuple[_Active, Turn]] = []
            for item in active:
                turn = item.user.next(item.dialogue)
                if turn is None:
                    item.dialogue.scores += self.scorer.finish(item.dialogue)
                    writer.write(item.dialogue)
                    stats.dialogues += 1
                    live.finished()
                else:
                    moving.append((item, turn))
            if not moving:
                break
            turns = [t for _, t in moving]
            if self.phraser is not None:
                turns = self.phraser.rephrase([(a.dialogue, t) for a, t in moving])
            active = [a for a, _ in moving]
            for item, turn in zip(active, turns, strict=True):
                item.dialogue.turns.append(turn)
            replies = self.agent.respond([a.dialogue.turns for a in active])
            stats.rounds.append(len(active))
            for item, reply in zip(active, replies, strict=True):
                step = BOT_STEP_AFTER[item.dialogue.turns[-1].meta["step"]]
                item.dialogue.turns.append(Turn("bot", reply, {"step": step}))
            stats.bot_turns += len(active)
            live.turns(len(active))
            replied = time.perf_counter()
            requests = [TurnRequest(a.dialogue, len(a.dialogue.turns) - 1) for a in active]
            for item, scores in zip(active, self.scorer.score_turns(requests), strict=True):
                item.dialogue.scores += scores
                live.scored(scores, lag=time.perf_counter() - replied)
        stats.seconds = time.perf_counter() - start
        return stats
