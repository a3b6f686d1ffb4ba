"""The LLM judge: log-probability parsing by hand, a local folder, and `moralsim serve`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from agents.server import create_app
from evaluators.agreement import AgreementItem, AgreementScorer
from evaluators.llm_judge import (
    EndpointJudge,
    JudgeError,
    LocalJudge,
    class_masses_from_top_logprobs,
    judge_prompt,
    normalise,
    parse_endpoint_spec,
)
from evaluators.scorers import ScorerSpecError, open_agreement_scorer
from scenarios.records import Turn
from tests.test_server_client import _run_server

ITEMS = [
    AgreementItem("is it okay to lie ?", "no you should not", "it is wrong to lie ."),
    AgreementItem("", "yes", "you should not lie ."),
]


def test_top_logprobs_are_summed_into_classes_by_word_prefix() -> None:
    top = [
        {"token": " Agree", "logprob": math.log(0.5)},
        {"token": "dis", "logprob": math.log(0.2)},
        {"token": "Neither", "logprob": math.log(0.1)},
        {"token": "no", "logprob": math.log(0.1)},  # begins none of the three words
        {"token": " ", "logprob": math.log(0.05)},  # blank tokens are skipped
    ]
    assert class_masses_from_top_logprobs(top) == pytest.approx([0.5, 0.1, 0.2])
    assert normalise([0.5, 0.1, 0.2], "x") == pytest.approx([0.625, 0.125, 0.25])


def test_a_judge_that_says_none_of_the_words_is_an_error() -> None:
    with pytest.raises(JudgeError, match="none of agree, neither, disagree"):
        normalise([0.0, 0.0, 0.0], "item 3")


def test_prompt_and_endpoint_spec() -> None:
    prompt = judge_prompt(ITEMS[1])
    assert "Rule of thumb: you should not lie ." in prompt and "Question: (none)" in prompt
    spec = parse_endpoint_spec("openai:gpt-x@http://localhost:8000/v1/")
    assert spec is not None and (spec.model, spec.base_url) == ("gpt-x", "http://localhost:8000/v1")
    assert parse_endpoint_spec("agreement-minilm") is None
    with pytest.raises(JudgeError, match="openai:MODEL@BASE_URL"):
        parse_endpoint_spec("openai:no-url")


def test_local_judge_reads_the_word_likelihoods(tiny_causal_lm: Path) -> None:
    judge = LocalJudge(str(tiny_causal_lm))
    probs = judge.probabilities(ITEMS)
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1.0)
    # By hand for item 0: P(class) ∝ exp(logp(word)) + exp(logp(Word)).
    history = [Turn("user", judge_prompt(ITEMS[0]))]
    masses = []
    for word in ("agree", "neither", "disagree"):
        a, b = judge.agent.loglikelihood([(history, word), (history, word.capitalize())])
        masses.append(math.exp(a) + math.exp(b))
    assert probs[0] == pytest.approx(np.array(masses) / sum(masses), abs=1e-6)
    assert judge.score(ITEMS)[0] == pytest.approx(probs[0, 0] - probs[0, 2])


def test_scorer_spec_dispatch(tiny_classifier: Path, tiny_causal_lm: Path, tiny_encoder: Path):
    assert isinstance(open_agreement_scorer(str(tiny_classifier)), AgreementScorer)
    assert isinstance(open_agreement_scorer(str(tiny_causal_lm)), LocalJudge)
    with pytest.raises(ScorerSpecError, match="is a encoder"):
        open_agreement_scorer(str(tiny_encoder))
    with pytest.raises(ScorerSpecError, match="openai:MODEL@BASE_URL"):
        open_agreement_scorer("openai:nothing")


class FixedLogprobBot:
    """A bot whose next-token distribution is known: the judge's reading can be hand-checked."""

    def respond(self, histories: Sequence[list[Turn]]) -> list[str]:
        return ["agree" for _ in histories]

    def next_token_logprobs(self, histories: Sequence[list[Turn]], top_k: int) -> list[Any]:
        top = [
            {"token": "dis", "logprob": math.log(0.6)},
            {"token": "agree", "logprob": math.log(0.2)},
            {"token": "ne", "logprob": math.log(0.1)},
        ][:top_k]
        return [{**top[0], "top_logprobs": top} for _ in histories]


@pytest.fixture
def served() -> Iterator[Callable[[object], str]]:
    stops: list[Callable[[], None]] = []

    def start(agent: object) -> str:
        url, stop = _run_server(create_app(agent, "judge"))  # type: ignore[arg-type]
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()


def test_endpoint_judge_against_moralsim_serve(served: Callable[[object], str]) -> None:
    url = served(FixedLogprobBot())
    judge = EndpointJudge(parse_endpoint_spec(f"openai:judge@{url}/v1"))  # type: ignore[arg-type]
    probs = judge.probabilities(ITEMS)
    assert probs == pytest.approx(np.array([[0.2, 0.1, 0.6]] * 2) / 0.9)
    assert judge.score(ITEMS) == pytest.approx([(0.2 - 0.6) / 0.9] * 2)


def test_served_tiny_transformers_judge_matches_its_local_logprobs(
    served: Callable[[object], str], tiny_causal_lm: Path
) -> None:
    from agents.hf import TransformersAgent

    bot = TransformersAgent(str(tiny_causal_lm))
    url = served(bot)
    judge = EndpointJudge(parse_endpoint_spec(f"openai:judge@{url}/v1"))  # type: ignore[arg-type]
    top = bot.next_token_logprobs([[Turn("user", judge_prompt(ITEMS[0]))]], 20)[0]
    expected = normalise(class_masses_from_top_logprobs(top["top_logprobs"]), "local")
    assert judge.probabilities(ITEMS[:1])[0] == pytest.approx(expected, abs=1e-6)


def test_server_refuses_logprobs_for_long_replies(served: Callable[[object], str]) -> None:
    url = served(FixedLogprobBot())
    body = {
        "model": "judge",
        "messages": [{"role": "user", "content": "hi"}],
        "logprobs": True,
        "max_tokens": 5,
    }
    response = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert response.status_code == 400
    assert "logprobs only with max_tokens=1" in response.json()["error"]["message"]


def test_endpoint_without_logprobs_is_refused_not_read_from_text(
    served: Callable[[object], str],
) -> None:
    class NoLogprobs:
        def respond(self, histories: Sequence[list[Turn]]) -> list[str]:
            return ["agree" for _ in histories]

    url = served(NoLogprobs())
    judge = EndpointJudge(parse_endpoint_spec(f"openai:judge@{url}/v1"))  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match="cannot return log-probabilities"):
        judge.probabilities(ITEMS[:1])
