"""One place that turns an `evaluators.agreement_model` spec into an agreement scorer.

- a factored scorer folder or embedded name (`agreement-factored`): stance x direction, or
  a stated one (`agreement-stated`): stance x the pack's stated direction, a single
  classifier for the rest, or a stated one with a probe (`agreement-probe`, the default)
  (evaluators.factored);
- a sequence-classifier folder or embedded name (`agreement-minilm`): the cross-encoder
  alone;
- a causal-LM folder or embedded name (`smollm2-135m-instruct`): an LLM judge run locally;
- `openai:MODEL@BASE_URL`: an LLM judge behind an OpenAI-compatible endpoint.

Every scorer has `probabilities(items) -> (n, 3)`, `score(items) -> AS`, `model_id`, `path`
(its folder, or None) and `describe()`, so runs, the REPL, probes and `scorer eval` take any
of them through this one config key.
"""

from __future__ import annotations

from typing import Any

from evaluators.agreement import AgreementScorer

DEFAULT_SCORER = "agreement-probe"
"""The scorer of runs, probes, `validate` and the stance judge unless a config names another:
the probe scorer (since 2026-12-04; before it `agreement-stated`, and before that
`agreement-minilm`). Pairs the pack states are stance x their stated direction, and with it
every known-answer check separates its bots on both core splits; every other pair (safety
RoTs, narrated actions, a pack that states nothing) is the mean of `agreement-minilm` and
stance x a frozen SmolLM2 probe's direction, which ranks real Moral Stories pairs at 79% where
`agreement-minilm` alone ranks them at 63%; a bot's own reason (S_ME) is `agreement-minilm`'s
reading (docs/agreement-scorer.md, "The probe scorer"). `agreement-stated`,
`agreement-minilm` and the factored `agreement-factored` (~45 minutes to build) are options."""

SCORER_KINDS: tuple[str, ...] = ("sequence-classifier", "factored-scorer", "causal-lm")
"""Model kinds that can score agreement: a cross-encoder, a factored scorer, an LLM judge."""


class ScorerSpecError(ValueError):
    """The spec names something that cannot score agreement."""


def registered_scorer(spec: str) -> Any:
    """The factory registered under `spec` in `SCORERS` (by decorator or entry point), or None.

    A registered agreement scorer is a callable with no arguments that returns an object with
    `probabilities(items) -> (n, 3)` array of P(agree, neutral, disagree), like the built-in
    cross-encoder and judges; `evaluators.agreement_model: NAME` then selects it anywhere.
    """
    from scenarios.registry import SCORERS, RegistryError

    try:
        if ":" in spec or spec not in SCORERS:
            return None
        return SCORERS.get(spec)
    except RegistryError:  # a broken scorer plugin must not stop runs that do not use it
        return None


def open_agreement_scorer(
    spec: str, batch_size: int = 64, *, device: str = "cpu", dtype: str = "float32"
) -> Any:
    """The scorer a spec names (a registered scorer, a classifier or causal-LM folder, an
    endpoint) on `device`/`dtype` where it loads a model; raises ModelError / ScorerSpecError
    / JudgeError / PlacementError with a reason."""
    factory = registered_scorer(spec)
    if factory is not None:
        return factory()
    from agents.models import resolve_model
    from evaluators.llm_judge import (
        EndpointJudge,
        JudgeError,
        LocalJudge,
        parse_endpoint_spec,
    )

    try:
        endpoint = parse_endpoint_spec(spec)
    except JudgeError as exc:
        raise ScorerSpecError(str(exc)) from None
    if endpoint is not None:
        return EndpointJudge(endpoint)
    kind = resolve_model(spec).kind
    if kind == "factored-scorer":
        from evaluators.factored import FactoredScorer

        return FactoredScorer(spec, batch_size, device=device, dtype=dtype)
    if kind == "sequence-classifier":
        return AgreementScorer(spec, batch_size=batch_size, device=device, dtype=dtype)
    if kind == "causal-lm":
        return LocalJudge(spec, device=device, dtype=dtype)
    raise ScorerSpecError(
        f"agreement model '{spec}' is a {kind}: give a sequence-classifier folder (a trained "
        "agreement scorer), a causal-LM folder (used as an LLM judge) or openai:MODEL@BASE_URL"
    )


def describe_scorer(scorer: Any) -> dict[str, Any]:
    """What a run records about its scorer: kind, model, and how P was read."""
    describe = getattr(scorer, "describe", None)
    if callable(describe):
        return describe()
    return {"kind": "cross-encoder", "model": getattr(scorer, "model_id", None)}
