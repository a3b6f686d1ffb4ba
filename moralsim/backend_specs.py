"""What a run loads, from its config: the bot, the turn scorers, the runtime, the user's phraser.

Kept apart from `run_simulation` so the run loop reads as the plan it carries out; these are
plain translations of config sections into the picklable specs the runtimes take.
"""

from __future__ import annotations

from typing import Any

from moralsim.config import RunConfig


def evaluator_and_agent_specs(run: RunConfig, safety_rots: list[str]) -> tuple[Any, Any]:
    """The bot to load and the scorers every bot turn goes through, as picklable specs."""
    from agents.base import GenerationSettings
    from evaluators.moraldial import MoralDialParams
    from simulators.ray_actors import AgentSpec, EvaluatorSpec

    g = run.bot.generation
    settings = GenerationSettings(
        max_new_tokens=g.max_new_tokens, do_sample=g.do_sample, temperature=g.temperature,
        top_p=g.top_p, num_beams=g.num_beams, seed=run.seed,
    )  # fmt: skip
    agent = AgentSpec(
        run.bot.agent,
        run.bot.model,
        {
            "adapter": run.bot.adapter,
            "system_prompt": run.bot.system_prompt,
            "generation": settings,
            "batch_size": run.bot.batch_size,
            **(
                {"max_context_tokens": run.bot.max_context_tokens}
                if run.bot.agent == "transformers"
                else {}
            ),
        },
        response_cache=run.bot.response_cache,
        plugins=tuple(run.plugins),
    )
    params = MoralDialParams(
        pushback_below=run.user.pushback_threshold,
        firm_below=run.user.firm_threshold,
        revision_lambda=run.evaluators.revision_lambda,
        safety_k=run.evaluators.safety_k,
    )
    evaluators = EvaluatorSpec(
        run.evaluators.agreement_model,
        run.evaluators.embedding_model,
        tuple(safety_rots) if safety_rots else None,
        params,
        plugins=tuple(run.plugins),
    )
    return agent, evaluators


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
        bot_threads=r.bot_threads,
        evaluator_threads=r.evaluator_threads,
        max_wait_ms=r.max_wait_ms,
        max_concurrent_dialogues=r.max_concurrent_dialogues,
        max_retries=r.max_retries,
    )


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
    )
    return LLMUserPhraser(user_model)
