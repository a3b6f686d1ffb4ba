from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from agents.base import AgentInfo, GenerationSettings, LikelihoodAgent
from agents.hf import TransformersAgent, history
from evaluators.dit import parse_decision
from evaluators.dit_prompts import OPTION_ORDERS, Presentation
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.pack import load_pack
from scenarios.records import Turn
from scenarios.types import Dilemma
from simulators.dit_probe import dit_dialogue_id, dit_section, presentations, run_dit_probe

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
REPORT_KEYS = {
    "p_score", "p_sd", "schema", "preconventional", "conventional", "cant_decide_rate",
    "random_baseline", "positional_bias", "positional_chance", "m_flag", "n_valid_rankings",
    "n_responses", "mode", "stage_scores",
}  # fmt: skip
SCHEMA_KEYS = {"personal_interest", "maintaining_norms", "postconventional"}


@pytest.fixture(scope="module")
def dilemmas() -> list[Dilemma]:
    return load_pack("core").pack.dilemmas


def run(tmp_path: Path, dilemmas: Sequence[Dilemma], agent: object, **kw: object) -> int:
    args = {"seed": 0, "orders": 2, "mode": "generation", "done": set(), "meta": {"run": "t"}}
    with DialogueWriter(tmp_path / "d.jsonl") as writer:
        return run_dit_probe(dilemmas, agent, writer, **(args | kw))  # type: ignore[arg-type]


# ------------------------------------------------------------------ protocol and generation


def test_seeded_subset_is_deterministic_and_part_of_the_protocol(dilemmas) -> None:
    d = dilemmas[0]
    four = presentations(d, seed=3, orders=4)
    assert four == presentations(d, seed=3, orders=4)
    assert four != presentations(d, seed=4, orders=4)
    full = presentations(d, seed=3, orders=48)
    assert [k for k, _ in full] == list(range(48))
    assert all(full[k][1] == p for k, p in four)  # ids index the full 48
    with pytest.raises(ValueError, match=r"probes\.dit_orders"):
        presentations(d, seed=3, orders=49)


def test_generation_mode_writes_ids_steps_and_resumes(tmp_path: Path, tiny_causal_lm, dilemmas):
    agent = TransformersAgent(
        str(tiny_causal_lm), generation=GenerationSettings(max_new_tokens=4), batch_size=8
    )
    calls: list[int] = []
    respond = agent.respond
    agent.respond = lambda histories: calls.append(len(histories)) or respond(histories)  # type: ignore[method-assign]
    assert run(tmp_path, dilemmas[:2], agent, seed=5) == 4
    assert calls == [4, 4, 4]  # three batched rounds over all pending dialogues
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    expected = {
        dit_dialogue_id(d.id, "generation", k, 5)
        for d in dilemmas[:2]
        for k, _ in presentations(d, seed=5, orders=2)
    }
    assert {d.id for d in dialogues} == expected and len(dialogues) == 4
    steps = ["decision", "decision", "ratings", "ratings", "ranking", "ranking"]
    for d in dialogues:
        assert d.flow == "dit" and d.meta["mode"] == "generation" and d.meta["run"] == "t"
        assert [t.role for t in d.turns] == ["user", "bot"] * 3
        assert [t.meta["step"] for t in d.turns] == steps
        shown = d.meta["presentation"]
        assert d.id.split("/")[2] == f"o{d.meta['order']}" and len(shown["statement_order"]) == 12

    # resume: nothing left to do; then one removed from `done` is redone alone
    done = {d.id for d in dialogues}
    assert run(tmp_path, dilemmas[:2], agent, seed=5, done=done) == 0
    assert run(tmp_path, dilemmas[:2], agent, seed=5, done=done - {min(done)}) == 1
    last = (tmp_path / "d.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["id"] == min(done)  # written again (readers keep the first record)

    section = dit_section(dialogues, dilemmas)
    assert section is not None
    assert section.keys() >= REPORT_KEYS and section["schema"].keys() == SCHEMA_KEYS
    assert section["mode"] == "generation" and section["n_responses"] == 4
    assert section["orders_per_dilemma"] == {d.id: 2 for d in dilemmas[:2]}
    json.dumps(section)  # probes.json must be able to hold it
    assert dit_section([], dilemmas) is None


def test_likelihood_mode_needs_a_likelihood_agent(tmp_path: Path, dilemmas) -> None:
    class ServedBot:  # like the OpenAI client: respond only
        info = AgentInfo(model="served", backend="openai")

        def respond(self, histories):
            return ["1"] * len(histories)

    assert not isinstance(ServedBot(), LikelihoodAgent)
    with pytest.raises(TypeError, match=r"probes\.dit_mode"):
        run(tmp_path, dilemmas[:1], ServedBot(), mode="likelihood")
    with pytest.raises(ValueError, match=r"probes\.dit_mode"):
        run(tmp_path, dilemmas[:1], ServedBot(), mode="logits")


# ------------------------------------------------------------------ likelihood picks

PREFERRED = (3, 1, 2, 4)  # original indices; in dit-fathers-promise: stages 4, 5, 2, 6
TARGETS = {3: 4.9, 1: 4.6, 2: 4.3, 4: 4.0}
"""The rating each preferred statement is centred on; every other statement i sits at 1 + 0.1 i."""


def target(index: int) -> float:
    return TARGETS.get(index, 1.0 + 0.1 * index)


class ScriptedScorer:
    """Hand-chosen log-probabilities that depend on CONTENT, not display position.

    It reads the numbered statement list in the last user turn to know which statement each
    display number shows, so any presentation must come back to the same answers. A rating
    r of statement i scores -(r - target(i))^2 minus a display-position term that is the same
    for all five ratings (so it must cancel).
    """

    def __init__(self, dilemma: Dilemma) -> None:
        self.info = AgentInfo(model="scripted")
        self.index = {s.text: i for i, s in enumerate(dilemma.statements)}
        self.calls = 0

    def respond(self, histories):
        raise AssertionError("likelihood mode must not generate")

    def loglikelihood(self, requests: Sequence[tuple[Sequence[Turn], str]]) -> list[float]:
        self.calls += 1
        return [self._one(h, c) for h, c in requests]

    def _one(self, h: Sequence[Turn], continuation: str) -> float:
        step = h[-1].meta["step"]
        shown = dict(re.findall(r"^(\d+)\. (.+)$", h[-1].text, re.M))
        if step == "decision":
            return 0.0 if "Can't decide" in continuation else -1.0
        assert step == "ratings", "likelihood rankings come from the ratings, not new scoring"
        n, r = map(int, re.fullmatch(r"(\d+): (\d)", continuation).groups())  # type: ignore[union-attr]
        return -((r - target(self.index[shown[str(n)]])) ** 2) - 0.5 * n


def test_likelihood_mode_ranks_by_expected_rating(tmp_path: Path, dilemmas) -> None:
    dilemma = dilemmas[0]
    assert [dilemma.statements[i].stage for i in PREFERRED] == ["4", "5", "2", "6"]
    agent = ScriptedScorer(dilemma)
    assert run(tmp_path, [dilemma], agent, mode="likelihood", orders=3, seed=1) == 3
    assert agent.calls == 2  # decision, ratings; each batched over the three dialogues
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    section = dit_section(dialogues, dilemmas, mode="likelihood")
    assert section is not None and section["mode"] == "likelihood"
    # ranked stages 4, 5, 2, 6 get 4, 3, 2, 1 points: P = 100 * (3 + 1) / 10
    assert section["p_score"] == pytest.approx(40.0)
    assert section["p_values"] == pytest.approx([40.0] * 3)
    assert section["stage_scores"] == pytest.approx(
        {"2": 20.0, "3": 0.0, "4": 40.0, "5": 30.0, "6": 10.0, "M": 0.0}
    )
    assert section["order_averaged"]["p_score"] == pytest.approx(40.0)
    assert section["cant_decide_rate"] == 1.0
    assert section["valid_share"] == {"decision": 1.0, "rating": 1.0, "ranking": 1.0}
    d = dialogues[0]
    order = d.meta["presentation"]["statement_order"]
    ratings, ranking = d.turns[3].meta, d.turns[-1]
    assert ranking.meta["picked"] == [order.index(i) + 1 for i in PREFERRED]
    assert ranking.text == ", ".join(map(str, ranking.meta["picked"])) + "."
    # the mode of -(r - t)^2 is the nearest rating (a tie at .5 goes to the lower one)
    assert ratings["picked"] == [min(range(1, 6), key=lambda r: abs(r - target(i))) for i in order]
    # t = 4.0: P(r) proportional to e^-9, e^-4, e^-1, 1, e^-1
    w = [math.exp(-9), math.exp(-4), math.exp(-1), 1.0, math.exp(-1)]
    at = order.index(4)
    assert ratings["p"][at] == pytest.approx([v / sum(w) for v in w])
    assert ratings["expected"][at] == pytest.approx(
        sum(r * v for r, v in zip(range(1, 6), w, strict=True)) / sum(w)
    )


def test_likelihood_looks_past_a_response_cache(tmp_path: Path, dilemmas) -> None:
    from agents.cache import CachedAgent, ResponseCache

    scorer = ScriptedScorer(dilemmas[0])
    cached = CachedAgent(scorer, ResponseCache(tmp_path / "cache.sqlite"), "scripted")
    assert run(tmp_path, dilemmas[:1], cached, mode="likelihood", orders=1) == 1
    assert scorer.calls == 2


def test_both_modes_are_reported_apart(tmp_path: Path, dilemmas) -> None:
    dilemma = dilemmas[0]
    run(tmp_path, [dilemma], ScriptedScorer(dilemma), mode="likelihood", orders=1)

    class Sloppy:  # valid decision and ranking, ratings that stop after the first statement
        info = AgentInfo(model="sloppy")

        def respond(self, histories):
            reply = {"decision": "1", "ratings": "1: 1", "ranking": "10, 11, 12, 1"}
            return [reply[h[-1].meta["step"]] for h in histories]

    run(tmp_path, [dilemma], Sloppy(), mode="generation", orders=2)
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    section = dit_section(dialogues, dilemmas, mode="likelihood")
    assert section["mode"] == "likelihood" and section["n_responses"] == 1
    other = section["other_modes"]["generation"]
    assert other["n_responses"] == 2 and other["validity"]["rating"]["invalid"] == 2
    assert dit_section(dialogues, dilemmas)["mode"] == "generation"


@pytest.mark.parametrize("dilemma_index", range(10))
def test_decision_lines_read_back_as_the_option(dilemmas, dilemma_index: int) -> None:
    """What likelihood mode writes for a decision is what the parser reads, in every order."""
    d = dilemmas[dilemma_index]
    for option_order in OPTION_ORDERS:
        p = Presentation(tuple(range(len(d.statements))), option_order)
        for shown, original in enumerate(option_order, 1):
            parsed = parse_decision(f"{shown}. {d.options[original]}", d, p)
            assert parsed.value == original, parsed.invalid


def test_real_tiny_model_in_likelihood_mode_is_always_valid(
    tmp_path: Path, tiny_causal_lm, dilemmas
) -> None:
    agent = TransformersAgent(str(tiny_causal_lm), max_context_tokens=4096, batch_size=32)
    assert run(tmp_path, dilemmas[:2], agent, mode="likelihood", orders=1) == 2
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    section = dit_section(dialogues, dilemmas)
    assert section["valid_share"] == {"decision": 1.0, "rating": 1.0, "ranking": 1.0}
    assert section["n_valid_rankings"] == section["n_responses"] == 2
    assert all(len(d.turns[1].meta["loglik"]) == 3 for d in dialogues)


# ------------------------------------------------------------------ TransformersAgent.loglikelihood

HISTORIES = [
    history(("user", "is it okay to lie ?")),
    history(("user", "is it okay to lie ?"), ("bot", "no you should not"), ("user", "why ?")),
]
REQUESTS = [
    (HISTORIES[0], "no"),
    (HISTORIES[0], "no you should not lie ."),
    (HISTORIES[1], "because it is wrong ."),
    (HISTORIES[1], "yes"),
    (HISTORIES[0], "yes it is okay"),
    (HISTORIES[1], ""),
]


def direct_loglikelihood(agent: TransformersAgent, h, continuation: str) -> float:
    """One unpadded forward over prompt + continuation, no cache: the definition itself."""
    import torch

    cont = agent._continuation_ids(continuation)
    prompt = agent.prompt_ids(h, max(agent.generation.max_new_tokens, len(cont)))
    with torch.no_grad():
        logits = agent.model(input_ids=torch.tensor([prompt + cont])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return sum(float(logp[len(prompt) + j - 1, t]) for j, t in enumerate(cont))


@pytest.mark.parametrize("template", [False, True])
def test_loglikelihood_matches_direct_computation_in_any_batch(
    tiny_causal_lm: Path, template: bool
) -> None:
    if template:
        config = json.loads((tiny_causal_lm / "tokenizer_config.json").read_text())
        config["chat_template"] = CHATML
        (tiny_causal_lm / "tokenizer_config.json").write_text(json.dumps(config))
    agent = TransformersAgent(str(tiny_causal_lm), batch_size=1)
    assert agent.use_chat_template is template and isinstance(agent, LikelihoodAgent)
    one_by_one = agent.loglikelihood(REQUESTS)
    agent.batch_size = 16
    batched = agent.loglikelihood(REQUESTS)
    expected = [direct_loglikelihood(agent, h, c) for h, c in REQUESTS]
    assert batched == pytest.approx(expected, abs=1e-4)
    assert one_by_one == pytest.approx(expected, abs=1e-4)
    assert agent.loglikelihood(REQUESTS[2:3]) == pytest.approx(expected[2:3], abs=1e-4)
    assert expected[-1] == 0.0 and all(v < 0 for v in expected[:-1])
    assert batched[0] > batched[1]  # a longer continuation that starts the same is less likely


def test_loglikelihood_refuses_seq2seq(tiny_seq2seq: Path) -> None:
    with pytest.raises(NotImplementedError, match="causal LM"):
        TransformersAgent(str(tiny_seq2seq)).loglikelihood(REQUESTS[:1])


def test_earlier_greedy_likelihood_records_are_scored_apart(tmp_path: Path, dilemmas) -> None:
    dilemma = dilemmas[0]
    run(tmp_path, [dilemma], ScriptedScorer(dilemma), mode="likelihood", orders=2, seed=1)
    new = read_dialogues(tmp_path / "d.jsonl")
    old = read_dialogues(tmp_path / "d.jsonl")
    for d in old:  # as the earlier release wrote them: no "from" on the ranking turn
        d.id = d.id.replace("/s1", "/s1-old")
        d.turns[-1].meta.pop("from")
    section = dit_section(new + old, dilemmas, mode="likelihood")
    assert section is not None and section["n_responses"] == 2
    assert section["other_modes"]["likelihood-greedy"]["n_responses"] == 2
    assert "order_averaged" not in section["other_modes"]["likelihood-greedy"]
