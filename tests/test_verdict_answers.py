"""Verdict answers: which written examples qualify, the answer's side, and the MA-only rows."""

from __future__ import annotations

import random

import pytest

from scenarios.pack import load_pack
from scenarios.types import AgreementExample, RotDirection, ScenarioPack
from training.discussions import DiscussionConfig, DiscussionError, build_discussions
from training.verdict_answers import (
    AGAINST_PHRASES,
    FOR_PHRASES,
    verdict_answer,
    verdict_corpus,
    verdict_items,
)


def written(
    eid: str,
    question: str,
    rot: str,
    split: str = "train",
    phenomenon: str = "flat-yes-no",
    label: str = "agree",
) -> AgreementExample:
    return AgreementExample(eid, question, "Sure.", rot, label, split, f"written:{phenomenon}")  # type: ignore[arg-type]


def tiny_pack() -> ScenarioPack:
    examples = [
        written("w1", "Is it okay to read my sister's diary?", "You shouldn't snoop."),
        # the same question again, same direction: one item
        written(
            "w2", "Is it okay to read my sister's diary?", "You shouldn't snoop.", label="disagree"
        ),
        written("w3", "Should I return the extra change?", "You should be honest."),
        written(
            "w4",
            "What did Yuki do?",
            "It's wrong to take credit.",
            phenomenon="narrated-third-person",
        ),
        written("w5", "Can I skip the meeting?", "Be kind to animals.", phenomenon="unrelated-rot"),
        written("w6", "Is it rude to leave early?", "It's fine to leave when you're tired."),
        written("w7", "Is it rude to  leave early?", "It's rude to leave early."),  # contested
        written("w8", "Should I tip the courier?", "Tipping is optional.", split="dev"),
        written("w9", "She kept the change.", "You should be honest."),  # not a question
        written("w10", "Why did I sulk?", "Be gracious.", phenomenon="narrated-first-person"),
        # its second reader read the direction the other way
        written("w11", "Is it okay to nap at work?", "Rest when you need it."),
        AgreementExample(
            "f1",
            "Should I lie?",
            "Sure.",
            "You shouldn't lie.",
            "disagree",
            "train",
            "factorial:flat",
        ),
    ]
    directions = [
        RotDirection("Is it okay to read my sister's diary?", "You shouldn't snoop.", "against"),
        RotDirection("Should I return the extra change?", "You should be honest.", "for"),
        RotDirection("What did Yuki do?", "It's wrong to take credit.", "against"),
        RotDirection("Can I skip the meeting?", "Be kind to animals.", "for"),
        RotDirection("Is it rude to leave early?", "It's fine to leave when you're tired.", "for"),
        RotDirection("Is it rude to  leave early?", "It's rude to leave early.", "against"),
        RotDirection("Should I tip the courier?", "Tipping is optional.", "open"),
        RotDirection("She kept the change.", "You should be honest.", "for"),
        RotDirection("Should I lie?", "You shouldn't lie.", "against"),
        RotDirection("Why did I sulk?", "Be gracious.", "against"),
        RotDirection("Is it okay to nap at work?", "Rest when you need it.", "for", "against"),
    ]
    return ScenarioPack("tiny", None, agreement_examples=examples, rot_directions=directions)


def test_only_direct_questions_with_one_stated_side_qualify() -> None:
    items = verdict_items(tiny_pack())
    assert [(i.example_id, i.direction) for i in items] == [("w1", "against"), ("w3", "for")]


def test_the_answer_takes_the_rots_side_by_the_act_and_gives_the_rot() -> None:
    against, for_ = verdict_items(tiny_pack())
    rng = random.Random(0)
    answer = verdict_answer(against, rng)
    assert answer.endswith(" You shouldn't snoop.")
    assert answer.removesuffix(" You shouldn't snoop.") in AGAINST_PHRASES
    answer = verdict_answer(for_, rng)
    assert answer.removesuffix(" You should be honest.") in FOR_PHRASES
    for phrase in (*FOR_PHRASES, *AGAINST_PHRASES):
        assert phrase.split()[0].strip(",.").lower() not in ("yes", "no")


def test_corpus_is_capped_seeded_and_labelled_agree() -> None:
    pack = tiny_pack()
    one = verdict_corpus(pack, limit=1, seed=0)
    assert len(one.answers) == 1 and one.answers[0].split == "train"
    assert one.answers[0].stance == "agree" and one.answers[0].source == "verdicts"
    assert verdict_corpus(pack, limit=0, seed=0).answers == []
    again = verdict_corpus(pack, limit=1, seed=0)
    assert again.answers[0].answer == one.answers[0].answer


def test_core_pack_verdicts_are_ma_rows_only_and_leak_free() -> None:
    plain = build_discussions(DiscussionConfig(pack="core", seed=0))
    more = build_discussions(DiscussionConfig(pack="core", seed=0, verdicts=50))
    added = [r for r in more["train"] if r["source"] == "verdicts"]
    assert len(added) == 50
    assert {r["flow"] for r in added} == {"MA"}
    assert all(len(r["messages"]) == 2 for r in added)
    assert 1 <= sum(r["source"] == "verdicts" for r in more["dev"]) <= 5
    assert not any(r["source"] == "verdicts" for r in more["test"])
    # the pack's own rows are untouched
    own = [r for r in more["train"] if r["source"] != "verdicts"]
    assert [r["messages"] for r in own] == [r["messages"] for r in plain["train"]]


def test_a_verdict_sharing_a_held_out_rot_is_dropped() -> None:
    from training.discussion_sources import core_corpus, drop_split_leaks

    pack = load_pack("core").pack
    held = pack.questions_in("test")[0]
    pack.agreement_examples.append(
        written("leak", "Is it fine to hum at my desk?", held.rot.text)  # a test RoT, in train
    )
    pack.rot_directions.append(RotDirection("Is it fine to hum at my desk?", held.rot.text, "for"))
    corpus = core_corpus(pack.questions)
    corpus.extend(verdict_corpus(pack, limit=100_000, seed=0))
    assert any(a.question_id == "verdicts:leak" for a in corpus.answers)
    kept = drop_split_leaks(corpus)
    assert not any(a.question_id == "verdicts:leak" for a in kept.answers)
    assert kept.dropped["verdicts: train answer shares a question or RoT with test"] >= 1


def test_verdicts_config_errors() -> None:
    with pytest.raises(DiscussionError, match="verdicts"):
        DiscussionConfig(verdicts=-1)
    with pytest.raises(DiscussionError, match="needs a pack"):
        DiscussionConfig(pack=None, verdicts=5)
    with pytest.raises(DiscussionError, match="add MA to flows"):
        DiscussionConfig(flows=("ME", "MR"), verdicts=5)
