"""What a run loads, from its config: the bot, the turn scorers, the runtime, the user's phraser.

Kept apart from `run_simulation` so the run loop reads as the plan it carries out; these are
plain translations of config sections into the picklable specs the runtimes take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from moralsim.config import BotConfig, RunConfig


def agent_options(bot: BotConfig, generation: Any, device: str | None = None) -> dict[str, Any]:
    """The keyword arguments `bot.agent` is built with: each backend gets only the options it
    takes (an endpoint has no adapter or context budget of ours; a local model no URL).
    `device` replaces bot.device where the runtime has settled it (see `actor_device`)."""
    shared = {"system_prompt": bot.system_prompt, "generation": generation}
    own: dict[str, dict[str, Any]] = {
        "transformers": {
            "adapter": bot.adapter,
            "batch_size": bot.batch_size,
            "max_context_tokens": bot.max_context_tokens,
            "device": device or bot.device,
            "dtype": bot.dtype,
        },
        "openai": {
            "base_url": bot.base_url,
            "api_key_env": bot.api_key_env,
            "concurrency": bot.batch_size,  # one request per history: a batch in flight at once
        },
    }
    # Scripted and plugin agents get what every agent was always given.
    other = {"adapter": bot.adapter, "batch_size": bot.batch_size}
    return {**shared, **own.get(bot.agent, other)}


def agent_spec(run: RunConfig, on_ray: bool | None = None) -> Any:
    """The bot to load, as a picklable spec (built here, in a Ray actor or by `moralsim chat`,
    which passes on_ray=False: it always runs in its own process)."""
    from agents.base import GenerationSettings
    from simulators.ray_actors import AgentSpec

    g = run.bot.generation
    settings = GenerationSettings(
        max_new_tokens=g.max_new_tokens, do_sample=g.do_sample, temperature=g.temperature,
        top_p=g.top_p, num_beams=g.num_beams, seed=run.seed,
    )  # fmt: skip
    on_ray = run.runtime.ray if on_ray is None else on_ray
    device = actor_device(run.bot.device, on_ray, run.runtime.bot_num_gpus)
    return AgentSpec(
        run.bot.agent,
        run.bot.model,
        agent_options(run.bot, settings, device),
        response_cache=run.bot.response_cache,
        plugins=tuple(run.plugins),
    )


def local_bot_model(run: RunConfig) -> str | None:
    """The bot's model to find (or prepare) on this machine before the run; None when
    bot.model names no local weights: a scripted agent's pack, an endpoint's served model."""
    if run.bot.agent == "openai" or run.bot.agent.startswith("scripted:"):
        return None
    return run.bot.model


def api_key_problem(bot: BotConfig, environ: Mapping[str, str]) -> str | None:
    """The endpoint's key variable when it is named but unset (one line), else None: a run
    should stop before any model loads, not at its first bot turn."""
    if bot.agent != "openai" or not bot.api_key_env or environ.get(bot.api_key_env):
        return None
    return (
        f"bot.api_key_env: the environment variable {bot.api_key_env} is not set; export the "
        f"API key for {bot.base_url} there, or set bot.api_key_env to null for a server "
        "without keys"
    )


def endpoint_problem(bot: BotConfig, environ: Mapping[str, str]) -> str | None:
    """Why `agent: openai` cannot reach its bot (one line), or None: the key variable is unset,
    the server cannot be reached or refuses the key, or it does not serve bot.model."""
    if bot.agent != "openai":
        return None
    missing = api_key_problem(bot, environ)
    if missing or bot.base_url is None:
        return missing
    from agents.openai_client import AgentError, served_models

    try:
        names = served_models(bot.base_url, bot.api_key_env)
    except AgentError as exc:
        return f"bot.base_url: {exc}"
    if names and bot.model not in names:
        return f"bot.model: {bot.base_url} serves {', '.join(map(repr, names))}, not {bot.model!r}"
    return None


def agent_problem(run: RunConfig, environ: Mapping[str, str]) -> str | None:
    """Why this bot cannot run the plan, checked before anything loads (one line), or None.

    The config alone cannot know these: which flows run with which options is only settled
    once every section is read, and the key and the server live outside it.
    """
    if run.bot.agent != "openai":
        return None
    dit = run.probes.get("dit")
    if "dit" in run.flows and getattr(dit, "mode", None) == "likelihood":
        return (
            "probes.dit.mode: likelihood reads the bot's log-probabilities, which an "
            "OpenAI-compatible server does not give (bot.agent openai); set "
            "probes.dit.mode=generation or leave dit out of flows"
        )
    return endpoint_problem(run.bot, environ)


def evaluator_and_agent_specs(
    run: RunConfig,
    safety_rots: list[str],
    rot_directions: Sequence[tuple[str, str, str]] = (),
) -> tuple[Any, Any]:
    """The bot to load and the scorers every bot turn goes through, as picklable specs;
    `rot_directions` are the pack's stated (question, RoT, direction) triples."""
    from evaluators.moraldial import MoralDialParams
    from simulators.ray_actors import EvaluatorSpec

    params = MoralDialParams(
        pushback_below=run.user.pushback_threshold,
        firm_below=run.user.firm_threshold,
        revision_lambda=run.evaluators.revision_lambda,
        safety_k=run.evaluators.safety_k,
    )
    e, r = run.evaluators, run.runtime
    evaluators = EvaluatorSpec(
        e.agreement_model,
        e.embedding_model,
        tuple(safety_rots) if safety_rots else None,
        params,
        plugins=tuple(run.plugins),
        device=actor_device(e.device, r.ray, r.evaluator_num_gpus),
        dtype=e.dtype,
        rot_directions=tuple(rot_directions),
    )
    return agent_spec(run), evaluators


def ray_options(run: RunConfig) -> Any:
    """Actor counts, CPUs and batching for the Ray runtime; None runs in this process."""
    from simulators.ray_runtime import RayOptions

    if not run.runtime.ray:
        return None
    r = run.runtime
    return RayOptions(
        address=r.address,
        bot_replicas=r.bot_replicas,
        evaluator_replicas=r.evaluator_replicas,
        bot_num_cpus=r.bot_num_cpus,
        evaluator_num_cpus=r.evaluator_num_cpus,
        bot_num_gpus=r.bot_num_gpus,
        evaluator_num_gpus=r.evaluator_num_gpus,
        bot_threads=r.bot_threads,
        evaluator_threads=r.evaluator_threads,
        max_wait_ms=r.max_wait_ms,
        max_concurrent_dialogues=r.max_concurrent_dialogues,
        max_retries=r.max_retries,
    )


def actor_device(device: str, on_ray: bool, num_gpus: float) -> str:
    """The device a component is built with. In process it is the configured one. Under Ray
    an actor may see GPUs it did not reserve (they belong to other actors), so there `auto`
    means the GPU only when the actor reserved some (runtime.*_num_gpus > 0)."""
    if not on_ray or device != "auto":
        return device
    return "cuda" if num_gpus > 0 else "cpu"


def phraser_device(run: RunConfig) -> str:
    """The phraser follows the bot's device, in the driver: under Ray that process reserved no
    GPU, so there `auto` is the CPU (as for an actor without GPUs)."""
    return actor_device(run.bot.device, run.runtime.ray, 0)


def placement_problem(run: RunConfig, on_ray: bool | None = None) -> str | None:
    """Why the run's devices cannot work (one line), checked before any model loads, or None.

    In process the GPUs are this machine's, so each placement is resolved here. Under Ray they
    are the workers': a component on CUDA must reserve GPUs (an actor sees only those) and
    names no index beyond them; the cluster's GPU count is checked once Ray is up.
    """
    from agents.placement import PlacementError, resolve_placement

    on_ray = run.runtime.ray if on_ray is None else on_ray
    sections = [("evaluators", run.evaluators, run.runtime.evaluator_num_gpus)]
    if local_bot_model(run) is not None and run.bot.agent == "transformers":
        sections.insert(0, ("bot", run.bot, run.runtime.bot_num_gpus))
    for name, section, gpus in sections:
        if on_ray:
            problem = _ray_placement_problem(name, section.device, gpus)
            if problem:
                return problem
            continue
        try:
            resolve_placement(section.device, section.dtype, prefix=f"{name}.")
        except PlacementError as exc:
            return str(exc)
    if user_policy(run) != run.user.policy and run.user.phraser_model:
        try:  # it runs here, in the driver, whatever the runtime
            resolve_placement(phraser_device(run), run.bot.dtype, prefix="bot.")
        except PlacementError as exc:
            return f"the simulated user's phraser runs in this process: {exc}"
    return None


def _ray_placement_problem(name: str, device: str, gpus: float) -> str | None:
    key = "bot_num_gpus" if name == "bot" else "evaluator_num_gpus"
    if device.startswith("cuda") and gpus <= 0:
        return (
            f"{name}.device is {device}, but runtime.{key} is 0: a Ray actor sees only the GPUs "
            f"it reserves; set runtime.{key} (1 for a GPU each, 0.5 to share one)"
        )
    if device.startswith("cuda:") and int(device.partition(":")[2]) > 0:
        return (
            f"{name}.device is {device}, but each Ray actor numbers its own reserved GPUs from "
            f"cuda:0; write cuda and let Ray place the actors (runtime.{key})"
        )
    return None


def user_policy(run: RunConfig) -> str:
    """The registered policy that decides the user's moves; a rewording policy (user.policy
    llm) names the template it rewords, and the run batches the rewording (`phraser`)."""
    from scenarios.registry import USER_POLICIES

    return getattr(USER_POLICIES.get(run.user.policy), "template_policy", run.user.policy)


def phraser(run: RunConfig) -> Any:
    """The chat model that rewords the simulated user's moves (user.policy llm), or None."""
    if user_policy(run) == run.user.policy or not run.user.phraser_model:
        return None
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from simulators.llm_user import LLMUserPhraser

    user_model = TransformersAgent(
        run.user.phraser_model,
        generation=GenerationSettings(max_new_tokens=60, seed=run.seed),
        batch_size=run.bot.batch_size,
        device=phraser_device(run),
        dtype=run.bot.dtype,
    )
    return LLMUserPhraser(user_model)
