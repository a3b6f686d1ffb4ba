"""MoralDial dialogues on Ray: bot and evaluator actors, users as asyncio tasks in the driver.

Why this shape. The models are the expensive part, so each lives in an actor that batches the
pending turns of many dialogues (`simulators.ray_actors`). A user is a few lines of policy, so
each dialogue is an asyncio task in the driver that awaits its bot's reply, sends the reply to
an evaluator actor and goes on at once: it waits for a score only when its next move reads it
(S_MR1 before deciding on a push-back, via `MoralDialUser.needs`). Scores no move needs
(S_MA, S_ME, ...) are computed while the dialogue continues and collected before it is
written. The same code runs on a laptop (`ray.init()` starts a local Ray) and inside
`ray job submit` (the job's driver joins the cluster).

Records. A dialogue's user draws its phrases from a generator seeded by (seed, question) and
scores are appended in turn order, so with greedy decoding the records equal those of the
in-process runner for the same seed.

Faults. Model actors restart when they die (`max_restarts`). A dialogue whose actor died
mid-call is run again from its first turn (same seed, same phrases); only finished dialogues
are written, each once. A dialogue that keeps failing stops the run with an error after the
other dialogues finish, and `--resume` picks it up.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.moraldial import MoralDialParams, finish_scores
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Score, Turn
from scenarios.types import MoralQuestion
from simulators.inprocess import RunStats
from simulators.live import LiveStats
from simulators.moraldial_user import (
    BOT_STEP_AFTER,
    dialogue_id,
    open_dialogue,
    pending_questions,
)
from simulators.ray_actors import AgentSpec, BotWorker, EvaluatorSpec, EvaluatorWorker

T = TypeVar("T")


class RuntimeFailure(RuntimeError):
    """A dialogue could not finish after its retries; finished dialogues are kept."""


@dataclass(frozen=True)
class RayOptions:
    """Where the actors run and how many; mirrors `runtime.*` in the run config."""

    address: str | None = None
    bot_replicas: int = 1
    evaluator_replicas: int = 1
    bot_num_cpus: float = 1.0
    evaluator_num_cpus: float = 1.0
    bot_num_gpus: float = 0.0
    evaluator_num_gpus: float = 0.0
    bot_threads: int = 0
    evaluator_threads: int = 0
    max_wait_ms: float = 20.0
    max_concurrent_dialogues: int = 0
    max_retries: int = 3


# --------------------------------------------------------------------------- cluster


@contextmanager
def ray_session(options: RayOptions) -> Iterator[None]:
    """Join the cluster named by `address` (or RAY_ADDRESS, as inside `ray job submit`), or
    start a local Ray for this run; a Ray started here is shut down at the end."""
    import logging

    import ray

    if ray.is_initialized():
        yield
        return
    address = options.address or os.environ.get("RAY_ADDRESS")
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        ray.init(address=address, **kwargs)
    else:
        passed = ("MORALSIM_CACHE", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS")
        env = {k: os.environ[k] for k in passed if k in os.environ}
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            runtime_env={"env_vars": env} if env else None,
            _system_config=LOCAL_HEALTH_CHECKS,
            **kwargs,
        )
    try:
        _check_resources(options)
        yield
    finally:
        ray.shutdown()


LOCAL_HEALTH_CHECKS: dict[str, int] = {
    "health_check_period_ms": 3000,
    "health_check_timeout_ms": 30_000,
    "health_check_failure_threshold": 20,
}
"""A local Ray that moralsim starts shares the machine with the models it runs: on a loaded
2-core laptop its node missed Ray's default health checks (10 s, 5 misses) and Ray declared its
own node dead mid-run. Here a node is only given up after ~10 unresponsive minutes. A cluster
you start yourself (`ray start`) keeps its own settings."""


def _check_resources(options: RayOptions) -> None:
    """Refuse a plan the cluster cannot place: Ray would wait for the CPUs or GPUs forever."""
    import ray

    resources = ray.cluster_resources()
    refusal = resource_refusal(options, float(resources.get("CPU", 0)), resources.get("GPU", 0))
    if refusal:
        raise RuntimeFailure(refusal)


def resource_refusal(options: RayOptions, cpus: float, gpus: float) -> str | None:
    """Why a cluster of `cpus` CPUs and `gpus` GPUs cannot hold the run's actors, or None."""
    need = options.bot_replicas * options.bot_num_gpus
    need += options.evaluator_replicas * options.evaluator_num_gpus
    if need > float(gpus) + 1e-9:
        return (
            f"the run asks for {need:g} GPUs ({options.bot_replicas} bot x "
            f"{options.bot_num_gpus:g} + {options.evaluator_replicas} evaluator x "
            f"{options.evaluator_num_gpus:g}) but the cluster has {float(gpus):g}; lower "
            "runtime.bot_num_gpus / runtime.evaluator_num_gpus / runtime.bot_replicas (a "
            "fraction such as 0.5 lets actors share a GPU)"
        )
    bots = options.bot_replicas * options.bot_num_cpus
    evaluators = options.evaluator_replicas * options.evaluator_num_cpus
    if bots + evaluators > cpus + 1e-9:
        return (
            f"the run asks for {bots + evaluators:g} CPUs ({options.bot_replicas} bot x "
            f"{options.bot_num_cpus:g} + {options.evaluator_replicas} evaluator x "
            f"{options.evaluator_num_cpus:g}) but the cluster has {cpus:g}; lower "
            "runtime.bot_replicas / runtime.bot_num_cpus / runtime.evaluator_num_cpus"
        )
    return None


# --------------------------------------------------------------------------- actor pools


RESTART_TIMEOUT = 300.0
"""How long a run waits for a killed actor to be back (restart and model load) before the
dialogue counts as failed."""


class ActorPool:
    """Replicas of one actor class; each call goes to the replica with the fewest calls in
    flight, so a slow batch on one replica does not hold up the others."""

    def __init__(self, handles: Sequence[Any]) -> None:
        if not handles:
            raise ValueError("an actor pool needs at least one actor")
        self.handles = list(handles)
        self.in_flight = [0] * len(self.handles)

    def _pick(self) -> int:
        return min(range(len(self.handles)), key=lambda i: self.in_flight[i])

    async def call(self, method: str, *args: Any) -> Any:
        i = self._pick()
        self.in_flight[i] += 1
        try:
            return await getattr(self.handles[i], method).remote(*args)
        finally:
            self.in_flight[i] -= 1

    def call_sync(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self.handles[self._pick()], method).remote(*args))

    async def wait_ready(self, timeout: float = RESTART_TIMEOUT) -> None:
        """Until every actor answers again: a restarted actor reloads its models before its
        first call, which on a busy machine takes far longer than any fixed pause."""
        from ray.exceptions import GetTimeoutError, RayActorError

        deadline = time.monotonic() + timeout
        for handle in self.handles:
            while True:
                try:
                    await handle.pid.remote()
                    break
                except (RayActorError, GetTimeoutError):
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.5)

    def wait_ready_sync(self, timeout: float = RESTART_TIMEOUT) -> None:
        """`wait_ready` for callers outside an event loop (the probes)."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        deadline = time.monotonic() + timeout
        for handle in self.handles:
            while True:
                try:
                    ray.get(handle.pid.remote(), timeout=max(1.0, deadline - time.monotonic()))
                    break
                except (RayActorError, GetTimeoutError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)

    def kill(self) -> None:
        import ray

        for handle in self.handles:
            ray.kill(handle, no_restart=True)


def actor_options(num_cpus: float, num_gpus: float) -> dict[str, Any]:
    """The Ray resource options of one model actor: its CPUs and GPUs (a fraction shares a
    GPU), restarted without limit when it dies."""
    return {
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "max_restarts": -1,
        "max_task_retries": 0,
    }


def _start_pool(worker: type, resources: dict[str, Any], replicas: int, *args: Any) -> ActorPool:
    """`replicas` restartable actors of `worker`; waits until each has loaded its models, so
    a load error surfaces here with its cause."""
    import ray

    remote = ray.remote(worker).options(**resources)
    handles = [remote.remote(*args) for _ in range(replicas)]
    ray.get([h.pid.remote() for h in handles])
    return ActorPool(handles)


def start_bots(spec: AgentSpec, options: RayOptions, max_batch_size: int) -> ActorPool:
    return _start_pool(
        BotWorker, actor_options(options.bot_num_cpus, options.bot_num_gpus),
        options.bot_replicas,
        spec, options.bot_num_cpus, options.bot_threads, max_batch_size, options.max_wait_ms,
    )  # fmt: skip


def start_evaluators(
    spec: EvaluatorSpec, options: RayOptions, bot_batch_size: int = 64
) -> ActorPool:
    """The evaluator pool; it takes the turns of up to a bot batch at once (at least 64), so
    scoring keeps pace with a bot that answers 64-256 dialogues per batch on a GPU."""
    return _start_pool(
        EvaluatorWorker, actor_options(options.evaluator_num_cpus, options.evaluator_num_gpus),
        options.evaluator_replicas,
        spec, options.evaluator_num_cpus, options.evaluator_threads, max(64, bot_batch_size),
        options.max_wait_ms,
    )  # fmt: skip


# --------------------------------------------------------------------------- probe proxies


def retrying(call: Callable[[], T], retries: int, pool: ActorPool | None = None) -> T:
    """Probe and scoring calls are pure (greedy decoding, fixed scorers), so a call that lost
    its actor is simply made again once the actor is back (`pool` ready again)."""
    from ray.exceptions import RayActorError

    for attempt in range(retries + 1):
        try:
            return call()
        except RayActorError:
            if attempt == retries:
                raise
            if pool is not None:
                pool.wait_ready_sync()
            else:
                time.sleep(1.0)
    raise AssertionError("unreachable")


class RayAgent:
    """The bot pool as a plain ChatAgent, for the probes (SaGE, DIT, prudence, static RIL):
    one probe round is spread over the replicas and batched inside each."""

    def __init__(self, pool: ActorPool, retries: int = 3) -> None:
        import ray

        self.pool = pool
        self.retries = retries
        self.info = ray.get(pool.handles[0].info.remote())

    def respond(self, histories: Sequence[Sequence[Turn]]) -> list[str]:
        import ray

        n = len(self.pool.handles)
        shares = [[list(h) for h in histories[i::n]] for i in range(n)]

        def call() -> list[list[str]]:
            return ray.get(
                [
                    handle.respond_many.remote(share)
                    for handle, share in zip(self.pool.handles, shares, strict=True)
                    if share
                ]
            )

        parts = retrying(call, self.retries, self.pool)
        out: list[str] = [""] * len(histories)
        for i, part in enumerate(parts):
            out[i::n] = part
        return out

    def loglikelihood(self, requests: Sequence[tuple[Sequence[Turn], str]]) -> list[float]:
        payload = [(list(h), c) for h, c in requests]
        return list(
            retrying(lambda: self.pool.call_sync("loglikelihood", payload), self.retries, self.pool)
        )


class RayScorers:
    """The evaluator pool as the plain callables the probes take (agreement, embed)."""

    def __init__(self, pool: ActorPool, retries: int = 3) -> None:
        self.pool = pool
        self.retries = retries

    def agreement(self, items: Sequence[AgreementItem]) -> np.ndarray:
        payload = list(items)
        call = lambda: self.pool.call_sync("agreement", payload)  # noqa: E731
        return np.asarray(retrying(call, self.retries, self.pool))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        payload = list(texts)
        call = lambda: self.pool.call_sync("embed", payload)  # noqa: E731
        return np.asarray(retrying(call, self.retries, self.pool))


# --------------------------------------------------------------------------- dialogues


def _report_scores(live: LiveStats, replied: float) -> Callable[[asyncio.Task[list[Score]]], None]:
    """Live means and the turn -> scores lag count when the scores arrive, not when the
    dialogue next reads them (scores no move needs are read only at the end)."""

    def done(task: asyncio.Task[list[Score]]) -> None:
        if not task.cancelled() and task.exception() is None:
            live.scored(task.result(), lag=time.perf_counter() - replied)

    return done


def _snapshot(dialogue: Dialogue) -> Dialogue:
    """The dialogue as it stands now: Ray serialises arguments only when the call starts,
    and by then the user may have added its next turn."""
    return Dialogue(
        id=dialogue.id,
        scenario_id=dialogue.scenario_id,
        flow=dialogue.flow,
        turns=list(dialogue.turns),
        hidden_rot=dialogue.hidden_rot,
        scores=list(dialogue.scores),
        meta=dict(dialogue.meta),
    )


class RayRunner:
    """Runs MoralDial dialogues concurrently against actor pools (see the module docstring).

    Args:
        bots / evaluators: the actor pools.
        params, seed, meta: as for `InProcessRunner`.
        max_concurrent: dialogues in flight at once (0: all).
        max_retries: re-runs of a dialogue whose actor died before the run gives up on it.
        phraser: optional LLM user (runs in the driver, between moves).
        policy: the registered user policy that decides each move.
    """

    def __init__(
        self,
        bots: ActorPool,
        evaluators: ActorPool,
        params: MoralDialParams,
        seed: int = 0,
        meta: dict[str, Any] | None = None,
        max_concurrent: int = 0,
        max_retries: int = 3,
        phraser: Any = None,
        policy: str = "moraldial",
    ) -> None:
        self.bots = bots
        self.policy = policy
        self.evaluators = evaluators
        self.params = params
        self.seed = seed
        self.meta = dict(meta or {})
        self.max_concurrent = max_concurrent
        self.max_retries = max_retries
        self.phraser = phraser

    def run(
        self,
        questions: Sequence[MoralQuestion],
        writer: DialogueWriter,
        done: set[str] = frozenset(),  # type: ignore[assignment]
        live: LiveStats | None = None,
    ) -> RunStats:
        return asyncio.run(self.run_async(questions, writer, done, live or LiveStats()))

    async def run_async(
        self,
        questions: Sequence[MoralQuestion],
        writer: DialogueWriter,
        done: set[str],
        live: LiveStats,
    ) -> RunStats:
        stats = RunStats()
        start = time.perf_counter()
        todo = pending_questions(questions, self.seed, done)
        stats.skipped = len(questions) - len(todo)
        live.expect(len(todo))
        limit = asyncio.Semaphore(self.max_concurrent or max(1, len(todo)))
        failures: list[str] = []

        async def one(question: MoralQuestion) -> None:
            async with limit:
                try:
                    dialogue = await self._with_retries(question, live, stats)
                except RuntimeFailure as exc:
                    failures.append(str(exc))
                    return
            writer.write(dialogue)
            stats.dialogues += 1
            stats.bot_turns += sum(1 for t in dialogue.turns if t.role == "bot")
            live.finished()

        await asyncio.gather(*(one(q) for q in todo))
        stats.seconds = time.perf_counter() - start
        if failures:
            raise RuntimeFailure(
                f"{len(failures)} dialogue(s) did not finish (the {stats.dialogues} finished "
                f"ones are saved; rerun with --resume): " + "; ".join(failures[:3])
            )
        return stats

    async def _with_retries(
        self, question: MoralQuestion, live: LiveStats, stats: RunStats
    ) -> Dialogue:
        from ray.exceptions import RayActorError

        for attempt in range(self.max_retries + 1):
            try:
                return await self._dialogue(question, live)
            except RayActorError as exc:
                if attempt == self.max_retries:
                    ident = dialogue_id(question.id, "moraldial", self.seed)
                    raise RuntimeFailure(
                        f"{ident}: its actor died {attempt + 1} times ({type(exc).__name__})"
                    ) from exc
                stats.retried += 1
                live.retry()
                await self.bots.wait_ready()
                await self.evaluators.wait_ready()
        raise AssertionError("unreachable")

    async def _dialogue(self, question: MoralQuestion, live: LiveStats) -> Dialogue:
        dialogue, user = open_dialogue(question, self.params, self.seed, self.meta, self.policy)
        pending: list[asyncio.Task[list[Score]]] = []

        def missing(names: Sequence[str] | None) -> bool:
            have = {s.name for s in dialogue.scores}
            return names is None or any(n not in have for n in names)

        async def settle(names: Sequence[str] | None) -> None:
            """Apply scores in turn order until every name in `names` (None: all) is there."""
            while pending and missing(names):
                dialogue.scores += await pending.pop(0)

        try:
            while True:
                await settle(user.needs(dialogue))
                turn = user.next(dialogue)
                if turn is None:
                    break
                if self.phraser is not None:
                    turn = (await asyncio.to_thread(self.phraser.rephrase, [(dialogue, turn)]))[0]
                dialogue.turns.append(turn)
                reply = await self.bots.call("respond", list(dialogue.turns))
                step = BOT_STEP_AFTER[turn.meta["step"]]
                dialogue.turns.append(Turn("bot", reply, {"step": step}))
                live.turns()
                index = len(dialogue.turns) - 1
                call = self.evaluators.call("score_turn", _snapshot(dialogue), index)
                task = asyncio.ensure_future(call)
                task.add_done_callback(_report_scores(live, time.perf_counter()))
                pending.append(task)
            await settle(None)
        except BaseException:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            raise
        dialogue.scores += finish_scores(dialogue, self.params)
        return dialogue
