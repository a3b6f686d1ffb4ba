"""One interface over the two runtimes, so every flow and probe is written once.

A run needs: a bot to answer probe rounds (`agent`), the MoralDial turn scorer, the agreement
function (prudence), the sentence encoder (SaGE) and a runner for the interactive dialogues.
In process these are the model objects themselves; on Ray they are proxies onto the actor
pools, so a probe cannot tell where the models live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.moraldial import MoralDialParams, TurnRequest, finish_scores
from scenarios.records import Dialogue, Score
from simulators.inprocess import InProcessRunner
from simulators.ray_actors import AgentSpec, EvaluatorSpec
from simulators.ray_runtime import (
    ActorPool,
    RayAgent,
    RayOptions,
    RayRunner,
    RayScorers,
    ray_session,
    retrying,
    start_bots,
    start_evaluators,
)


@dataclass
class Backend:
    agent: Any
    turn_scorer: Any
    agreement: Callable[[Sequence[AgreementItem]], np.ndarray]
    embed: Callable[[Sequence[str]], np.ndarray]
    runner: InProcessRunner | RayRunner
    description: str
    placements: dict[str, str | None]
    """Where the models run: {"bot": "cuda bfloat16" or None (no local model), "scorers": ...}."""


class RayTurnScorer:
    """MoralDial turn scoring through the evaluator actors (for the static RIL flow)."""

    def __init__(self, pool: ActorPool, params: MoralDialParams, retries: int = 3) -> None:
        self.pool = pool
        self.params = params
        self.retries = retries

    def score_turns(self, requests: Sequence[TurnRequest]) -> list[list[Score]]:
        import ray

        handles = self.pool.handles

        def call() -> list[list[Score]]:
            refs = [
                handles[i % len(handles)].score_turn.remote(r.dialogue, r.turn)
                for i, r in enumerate(requests)
            ]
            return list(ray.get(refs))

        return retrying(call, self.retries)

    def finish(self, dialogue: Dialogue) -> list[Score]:
        return finish_scores(dialogue, self.params)


def placements(bot_info: Any, evaluators: str) -> dict[str, str | None]:
    """Where the models run: the bot's device and dtype (None: no local weights) and the
    evaluators'."""
    extra = getattr(bot_info, "extra", {}) or {}
    bot = f"{extra['device']} {extra['dtype']}" if "device" in extra else None
    return {"bot": bot, "scorers": evaluators}


def describe_placements(where: dict[str, str | None]) -> str:
    """As a run's log and report say it: 'bot cuda bfloat16, scorers cpu float32'."""
    return f"bot {where['bot'] or 'no local model'}, scorers {where['scorers']}"


def _resources(cpus: float, gpus: float) -> str:
    return f"{cpus:g} CPU" + (f" + {gpus:g} GPU" if gpus else "")


@contextmanager
def open_backend(
    agent: AgentSpec,
    evaluators: EvaluatorSpec,
    *,
    seed: int,
    meta: dict[str, Any],
    batch_size: int,
    ray: RayOptions | None,
    phraser: Any = None,
    user_policy: str = "moraldial",
) -> Iterator[Backend]:
    """The models for one run; `ray=None` keeps everything in this process."""
    params = evaluators.params
    if ray is None:
        bot = agent.build()
        stack = evaluators.load()
        runner = InProcessRunner(bot, stack.moraldial, params, seed, meta, phraser, user_policy)
        where = placements(bot.info, str(stack.placement))
        yield Backend(
            bot, stack.moraldial, stack.agreement.probabilities, stack.embed, runner,
            f"in process; {describe_placements(where)}", where,
        )  # fmt: skip
        return
    with ray_session(ray):
        bots = start_bots(agent, ray, batch_size)
        scorers = start_evaluators(evaluators, ray, batch_size)
        try:
            runner_ray = RayRunner(
                bots,
                scorers,
                params,
                seed,
                meta,
                max_concurrent=ray.max_concurrent_dialogues,
                max_retries=ray.max_retries,
                phraser=phraser,
                policy=user_policy,
            )
            proxies = RayScorers(scorers, ray.max_retries)
            bot = RayAgent(bots, ray.max_retries)
            where = placements(bot.info, scorers.call_sync("placement"))
            description = (
                f"ray ({ray.bot_replicas} bot x {_resources(ray.bot_num_cpus, ray.bot_num_gpus)}, "
                f"{ray.evaluator_replicas} evaluator x "
                f"{_resources(ray.evaluator_num_cpus, ray.evaluator_num_gpus)}); "
                + describe_placements(where)
            )
            yield Backend(
                bot,
                RayTurnScorer(scorers, params, ray.max_retries),
                proxies.agreement,
                proxies.embed,
                runner_ray,
                description,
                where,
            )
        finally:
            bots.kill()
            scorers.kill()
