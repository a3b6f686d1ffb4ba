"""MoralDial dialogues in one process: many dialogues advance in lockstep, one batch per round.

Each round, every active simulated user makes its move, the bot answers all of them in one
batched `respond`, and the evaluators score all new bot turns in one batch before the users
decide again (the push-back decision needs S_MR1 of the answer). A finished dialogue gets its
dialogue-level scores and is appended to the output at once, so an interrupted run keeps every
finished dialogue and a rerun with `resume` skips them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.moraldial import MoralDialParams, MoralDialScorer, TurnRequest
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Turn
from scenarios.types import MoralQuestion
from simulators.moraldial_user import BOT_STEP_AFTER, MoralDialUser

Progress = Callable[[int, int], None]


def dialogue_id(question_id: str, flow: str, seed: int) -> str:
    """Deterministic: the same question, flow and seed is the same dialogue (resume key)."""
    return f"{question_id}/{flow}/s{seed}"


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
    rounds: list[int] = field(default_factory=list)


class InProcessRunner:
    """Runs MoralDial dialogues without Ray (laptop runs, tests, debugging).

    Args:
        agent: the bot (any ChatAgent).
        scorer: the MoralDial scorer (agreement + safety index).
        params: thresholds shared by the user and the metrics.
        seed: phrase choice and the dialogue ids.
        meta: copied into every dialogue's meta (bot, adapter, run name).
    """

    def __init__(
        self,
        agent: Any,
        scorer: MoralDialScorer,
        params: MoralDialParams,
        seed: int = 0,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.scorer = scorer
        self.params = params
        self.seed = seed
        self.meta = dict(meta or {})

    def run(
        self,
        questions: Sequence[MoralQuestion],
        writer: DialogueWriter,
        done: set[str] = frozenset(),  # type: ignore[assignment]
        progress: Progress | None = None,
    ) -> RunStats:
        stats = RunStats()
        start = time.perf_counter()
        active: list[_Active] = []
        for q in questions:
            ident = dialogue_id(q.id, "moraldial", self.seed)
            if ident in done:
                stats.skipped += 1
                continue
            rng = random.Random(f"{self.seed}/{q.id}")
            dialogue = Dialogue(
                id=ident,
                scenario_id=q.id,
                flow="moraldial",
                hidden_rot=q.rot,
                meta={**self.meta, "split": q.split, "seed": self.seed},
            )
            active.append(_Active(dialogue, MoralDialUser(q, self.params, rng)))
        total = len(active)
        if progress:
            progress(0, total)
        while active:
            moving: list[_Active] = []
            for item in active:
                turn = item.user.next(item.dialogue)
                if turn is None:
                    item.dialogue.scores += self.scorer.finish(item.dialogue)
                    writer.write(item.dialogue)
                    stats.dialogues += 1
                    if progress:
                        progress(stats.dialogues, total)
                else:
                    item.dialogue.turns.append(turn)
                    moving.append(item)
            active = moving
            if not active:
                break
            replies = self.agent.respond([a.dialogue.turns for a in active])
            stats.rounds.append(len(active))
            for item, reply in zip(active, replies, strict=True):
                step = BOT_STEP_AFTER[item.dialogue.turns[-1].meta["step"]]
                item.dialogue.turns.append(Turn("bot", reply, {"step": step}))
            stats.bot_turns += len(active)
            requests = [TurnRequest(a.dialogue, len(a.dialogue.turns) - 1) for a in active]
            for item, scores in zip(active, self.scorer.score_turns(requests), strict=True):
                item.dialogue.scores += scores
        stats.seconds = time.perf_counter() - start
        return stats
