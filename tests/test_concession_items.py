"""Concession-then-lean answers expand into examples labelled by their stance and each RoT's
direction (the factored scorer's sign rule), written and rated judgments side by side."""

import pytest

from training.concession_items import expand_answer
from training.reason_items import expand_all

QUESTION = {
    "qid": "qf9-0001",
    "question": "Is it wrong to skip my cousin's wedding for a paid work trip?",
    "split": "dev",
    "rot_for": "It's okay to put a real career chance first.",
    "rot_against": "You should show up for family milestones.",
}
ENDORSE = {"id": "qf9-0001-c1", "qid": "qf9-0001", "stance": "endorse", "lean_said": "b",
           "answer": "She'd love you there. Still, I'd take the trip and send a gift."}  # fmt: skip
REJECT = {"id": "qf9-0001-c2", "qid": "qf9-0001", "stance": "reject", "lean_said": "b",
          "answer": "The money matters, I know. But I'd be at the wedding."}  # fmt: skip


def test_an_endorsing_answer_agrees_with_the_rot_for_the_act_and_not_the_other() -> None:
    # "Is it wrong to skip...?": leaning toward the trip endorses the act (skipping)
    rows = {
        r["id"]: (r["label"], r["phenomenon"]) for r in expand_answer(QUESTION, ENDORSE, "endorse")
    }
    assert rows == {"qf9-0001-c1-for": ("agree", "hedged-late"),
                    "qf9-0001-c1-against": ("disagree", "hedged-late")}  # fmt: skip
    labels = {r["id"]: r["label"] for r in expand_answer(QUESTION, REJECT, "reject")}
    assert labels == {"qf9-0001-c2-for": "disagree", "qf9-0001-c2-against": "agree"}
    assert {r["label"] for r in expand_answer(QUESTION, REJECT, "none")} == {"neutral"}


def test_the_rater_stance_expands_to_the_same_rows_in_the_question_split() -> None:
    rows, ratings = expand_all(
        [QUESTION], [ENDORSE, REJECT], {"qf9-0001-c1": "endorse", "qf9-0001-c2": "endorse"},
        expand_answer, "stance",
    )  # fmt: skip
    assert list(rows) == ["dev"]
    written = {r["id"]: r["label"] for r in rows["dev"]}
    assert written["qf9-0001-c2-for"] == "disagree"
    assert ratings["qf9-0001-c2-for"] == "agree"  # the rater read it the other way: dropped later
    assert ratings["qf9-0001-c1-for"] == written["qf9-0001-c1-for"] == "agree"


def test_an_unknown_stance_is_named() -> None:
    with pytest.raises(ValueError, match="qf9-0001-c1: stance 'lean'"):
        expand_answer(QUESTION, ENDORSE, "lean")


def test_a_stance_on_the_named_act_is_turned_where_the_sets_act_is_its_opposite() -> None:
    # "Do I have to return it?" with the sets' RoT "for" permitting keeping it: an answer
    # leaning toward returning it disagrees with that RoT and agrees with the one against
    question = {
        "qid": "qf9-0002", "question": "Do I have to return the charger I took home?",
        "split": "train", "act_negated": True,
        "rot_for": "You don't have to chase every small thing back.",
        "rot_against": "You should give back what isn't yours.",
    }  # fmt: skip
    answer = {"id": "qf9-0002-c1", "qid": "qf9-0002", "stance": "endorse",
              "answer": "It's only a charger. Still, I'd drop it back tomorrow."}  # fmt: skip
    labels = {r["rot"]: r["label"] for r in expand_answer(question, answer, "endorse")}
    assert labels == {question["rot_for"]: "disagree", question["rot_against"]: "agree"}
