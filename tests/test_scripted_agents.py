"""Known-answer bots: each step of each behaviour, found from the text alone, and the DIT
likelihoods that make a stage bot measurable."""

from __future__ import annotations

import pytest

from agents.scripted import ADOPT, BEHAVIOURS, EVASIVE, HEDGE, HOLD, UNKNOWN_REPLY, ScriptedAgent
from evaluators.dit_prompts import Presentation, render_prompts
from scenarios.pack import load_pack
from scenarios.phrases import pushback
from scenarios.records import Turn
from scenarios.registry import AGENTS


@pytest.fixture(scope="module")
def pack():
    return load_pack("core").pack


def dialogue(q, upto: str) -> list[Turn]:
    """A MoralDial history up to the user turn that asks for `upto`, with no step metadata."""
    import random

    turns = [Turn("user", q.paraphrases[2])]
    for step, user in (
        ("explanation", "Why do you think so?"),
        ("revision", pushback(q.rot.text, random.Random(0))),
        ("new_answer", "Here is a similar question. " + q.related_question),
    ):
        if upto == "answer":
            break
        turns += [Turn("bot", "..."), Turn("user", user)]
        if step == upto:
            break
    return turns


def reply(agent: ScriptedAgent, q, step: str) -> str:
    return agent.respond([dialogue(q, step)])[0]


def test_registered_by_name_with_the_pack_as_model(pack) -> None:
    for behaviour in BEHAVIOURS:
        agent = AGENTS.get(f"scripted:{behaviour}")("core", generation=None, batch_size=4)
        assert agent.info.model == f"scripted:{behaviour}" and agent.pack.name == pack.name
    with pytest.raises(ValueError, match="unknown scripted behaviour"):
        ScriptedAgent("saint", pack)


def test_follower_breaker_and_convert(pack) -> None:
    q = next(q for q in pack.questions if q.related_answer)
    follower, breaker = ScriptedAgent("rot-follower", pack), ScriptedAgent("rot-breaker", pack)
    convert = ScriptedAgent("convert", pack)
    assert reply(follower, q, "answer") == q.agree_answer
    assert reply(follower, q, "explanation") == q.explanation
    assert reply(follower, q, "revision") == ADOPT + q.agree_answer
    assert reply(follower, q, "new_answer") == q.related_answer
    assert reply(breaker, q, "answer") == q.disagree_answer
    assert reply(breaker, q, "explanation").startswith("Because ")
    assert reply(breaker, q, "revision") == HOLD + q.disagree_answer
    assert reply(breaker, q, "new_answer") == q.related_disagree_answer
    # a pack without written breaking answers: the breaker rejects the RoT in so many words
    import dataclasses

    bare = dataclasses.replace(q, related_disagree_answer="")
    assert breaker._dialogue_reply("new_answer", bare, bare.question).startswith(
        "Honestly, I don't agree that"
    )
    assert reply(convert, q, "answer") == q.disagree_answer
    assert reply(convert, q, "revision") == ADOPT + q.agree_answer


def test_evasive_hedger_consistent_random(pack) -> None:
    contested = next(q for q in pack.questions if (q.rot.consensus or 9) <= 3)
    universal = next(q for q in pack.questions if (q.rot.consensus or 0) >= 5)
    assert reply(ScriptedAgent("evasive", pack), contested, "answer") in EVASIVE
    hedger = ScriptedAgent("hedger", pack)
    assert reply(hedger, contested, "answer") == HEDGE
    assert reply(hedger, universal, "answer") == universal.agree_answer
    consistent, rand = ScriptedAgent("consistent", pack), ScriptedAgent("random", pack)
    for q in pack.questions[:6]:
        wordings = [[Turn("user", w)] for w in (q.question, *q.paraphrases)]
        assert len(set(consistent.respond(wordings))) == 1
        assert set(consistent.respond(wordings)) <= {q.agree_answer, q.disagree_answer}
    q = pack.questions[0]
    wordings = [[Turn("user", w)] for w in (q.question, *q.paraphrases)]
    assert len(set(rand.respond(wordings))) > 2
    assert rand.respond(wordings) == rand.respond(wordings)  # a hash, not a generator


def test_unknown_text_is_said_plainly(pack) -> None:
    out = ScriptedAgent("rot-follower", pack).respond([[Turn("user", "What's the weather?")]])
    assert out == [UNKNOWN_REPLY.format(pack=pack.name)]


def test_stage_bots_rate_by_stage_in_any_order(pack) -> None:
    d = pack.dilemmas[0]
    order = tuple(reversed(range(len(d.statements))))
    prompts = render_prompts(d, Presentation(order, (2, 0, 1)))
    history = [Turn("user", prompts.decision), Turn("bot", "1"), Turn("user", prompts.rating)]
    stage6, stage2 = ScriptedAgent("stage6", pack), ScriptedAgent("stage2", pack)
    shown = [d.statements[i].stage for i in order]
    text = stage6.respond([history])[0]
    ratings = [int(part.split(": ")[1]) for part in text.split(", ")]
    assert [r for r, s in zip(ratings, shown, strict=True) if s in ("5", "6")] == [5] * sum(
        s in ("5", "6") for s in shown
    )
    assert all(r <= 3 for r, s in zip(ratings, shown, strict=True) if s not in ("5", "6"))
    # likelihoods: the bot's own rating is the most likely, for every displayed statement
    for bot in (stage6, stage2):
        for n, stage in enumerate(shown, 1):
            values = bot.loglikelihood([(history, f"{n}: {r}") for r in range(1, 6)])
            assert 1 + values.index(max(values)) == bot._rating(stage)
    # decision: the dilemma's first option, wherever it is shown (here second)
    values = stage6.loglikelihood([(history[:1], f"{k}. x") for k in (1, 2, 3)])
    assert values.index(max(values)) == 1
