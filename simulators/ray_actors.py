"""The model-holding Ray actors: bots and evaluators, each batching the requests of many
dialogues into one model call.

Both are async actors: a request is queued on the actor's event loop and awaited, the batched
model call runs in a worker thread, and meanwhile the loop keeps accepting requests, so the
next batch fills while the current one runs (dynamic batching: a batch closes when it is full
or when its oldest request has waited `max_wait_ms`). Dialogues never call each other's
actors with a blocking `ray.get`, so nothing can deadlock.

The classes are plain Python; `simulators.ray_runtime` wraps them with `ray.remote` and the
resource options of the run, which keeps them importable (and testable) without a cluster.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from agents.base import AgentInfo, GenerationSettings, History
from agents.batching import Batcher
from evaluators.agreement import AgreementItem
from evaluators.moraldial import MoralDialParams, TurnRequest
from scenarios.records import Dialogue, Score, Turn

A = TypeVar("A")
R = TypeVar("R")


def pin_threads(num_cpus: float, threads: int = 0) -> int:
    """Limit torch to the CPUs Ray reserved for this actor (or `threads` when given): two
    model actors that each use every core of a small machine run many times slower together
    than either alone."""
    import torch

    count = threads if threads > 0 else max(1, math.ceil(num_cpus))
    torch.set_num_threads(count)
    os.environ["OMP_NUM_THREADS"] = str(count)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return count


async def _locked(lock: threading.Lock, fn: Callable[[A], R], arg: A) -> R:
    """`fn(arg)` in a worker thread, one model call at a time: the event loop stays free to
    queue requests while the model runs."""

    def run() -> R:
        with lock:
            return fn(arg)

    return await asyncio.to_thread(run)


@dataclass(frozen=True)
class AgentSpec:
    """How to build a bot in another process: a registered agent name, the model and the
    agent's keyword arguments."""

    agent: str
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    response_cache: str | None = None
    plugins: tuple[str, ...] = ()
    """The run's plugins: imported wherever the agent is built (a Ray worker too)."""

    def build(self) -> Any:
        """The agent; behind the response cache when one is named (same replies, fewer
        generations on a rerun)."""
        from scenarios.plugins import load_plugins
        from scenarios.registry import AGENTS

        load_plugins(self.plugins)
        agent = AGENTS.get(self.agent)(self.model, **self.kwargs)
        if not self.response_cache:
            return agent
        from agents.cache import CachedAgent, ResponseCache, adapter_hash

        # An endpoint's replies depend on which server answered, not only on the model name.
        base_url = self.kwargs.get("base_url")
        return CachedAgent(
            agent,
            ResponseCache(self.response_cache),
            cached_model_id(self.model, base_url, agent.info),
            adapter_hash(self.kwargs.get("adapter")),
            self.kwargs.get("generation") or GenerationSettings(),
            system=getattr(agent, "system", None),
        )


def cached_model_id(model: str, base_url: str | None, info: AgentInfo) -> str:
    """The model's name in the response cache: an endpoint's replies depend on the server, a
    local model's on where it ran (bfloat16 on a GPU gives other greedy replies than float32 on
    the CPU). CPU float32, the only placement of earlier releases, keeps the plain name so
    their caches stay valid."""
    if base_url:
        return f"{model}@{base_url}"
    where = (info.extra.get("device"), info.extra.get("dtype"))
    if where[0] is None or where == ("cpu", "float32"):
        return model
    return f"{model}|{where[0].split(':')[0]} {where[1]}"


@dataclass(frozen=True)
class EvaluatorSpec:
    """How to load the evaluator models in another process."""

    agreement_model: str
    embedding_model: str
    safety_rots: tuple[str, ...] | None
    params: MoralDialParams
    plugins: tuple[str, ...] = ()
    """The run's plugins: imported wherever the scorers load (a Ray worker too)."""
    device: str = "auto"
    dtype: str = "auto"
    rot_directions: tuple[tuple[str, str, str], ...] = ()
    """The pack's stated (question, RoT, direction) triples, for a factored scorer."""

    def load(self) -> Any:
        """The evaluator models (`evaluators.stack.Evaluators`), here or in a Ray worker."""
        from evaluators.stack import load_evaluators
        from scenarios.plugins import load_plugins

        load_plugins(self.plugins)
        rots = list(self.safety_rots) if self.safety_rots is not None else None
        return load_evaluators(
            self.agreement_model, self.embedding_model, rots, self.params,
            device=self.device, dtype=self.dtype,
            rot_directions={(q, r): d for q, r, d in self.rot_directions},
        )  # fmt: skip


class BotWorker:
    """One replica of the bot under evaluation."""

    def __init__(
        self,
        spec: AgentSpec,
        num_cpus: float = 1.0,
        threads: int = 0,
        max_batch_size: int = 16,
        max_wait_ms: float = 20.0,
    ) -> None:
        self.threads = pin_threads(num_cpus, threads)
        self.agent = spec.build()
        self._lock = threading.Lock()  # one model call at a time, whatever the caller
        self.batcher: Batcher[History, GenerationSettings, str] = Batcher(
            self._respond, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms
        )

    def _respond(self, histories: list[History], settings: GenerationSettings | None) -> list[str]:
        with self._lock:
            return list(self.agent.respond(histories))

    async def respond(self, history: list[Turn]) -> str:
        return await self.batcher.submit(history)

    async def respond_many(self, histories: list[list[Turn]]) -> list[str]:
        """A probe's whole round at once; the batcher still cuts it to `max_batch_size`."""
        return list(await asyncio.gather(*(self.batcher.submit(h) for h in histories)))

    async def loglikelihood(self, requests: list[tuple[list[Turn], str]]) -> list[float]:
        inner = getattr(self.agent, "agent", self.agent)  # past a response cache
        method = getattr(inner, "loglikelihood", None)
        if method is None:
            raise TypeError(
                f"the {type(self.agent).__name__} agent cannot score log-likelihoods; "
                "set probes.dit.mode=generation"
            )

        return list(await _locked(self._lock, method, requests))

    async def info(self) -> AgentInfo:
        return self.agent.info

    async def pid(self) -> int:
        return os.getpid()


class EvaluatorWorker:
    """The agreement classifier, the sentence encoder and the safety index in one process."""

    def __init__(
        self,
        spec: EvaluatorSpec,
        num_cpus: float = 1.0,
        threads: int = 0,
        max_batch_size: int = 64,
        max_wait_ms: float = 20.0,
    ) -> None:
        self.threads = pin_threads(num_cpus, threads)
        self.stack = spec.load()
        self._lock = threading.Lock()
        self.turns: Batcher[TurnRequest, None, list[Score]] = Batcher(
            self._score_turns, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms
        )

    def _score_turns(self, requests: list[TurnRequest], _: None) -> list[list[Score]]:
        with self._lock:
            return self.stack.moraldial.score_turns(requests)

    async def score_turn(self, dialogue: Dialogue, turn: int) -> list[Score]:
        """The scores of one bot turn, batched with the turns other dialogues sent meanwhile."""
        return await self.turns.submit(TurnRequest(dialogue, turn))

    async def agreement(self, items: Sequence[AgreementItem]) -> np.ndarray:
        return await _locked(self._lock, self.stack.agreement.probabilities, list(items))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await _locked(self._lock, self.stack.embed, list(texts))

    async def placement(self) -> str:
        return str(self.stack.placement)

    async def pid(self) -> int:
        return os.getpid()
