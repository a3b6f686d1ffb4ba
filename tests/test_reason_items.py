"""Written reasons expand into examples labelled by their side and each RoT's direction."""

import pytest

from training.reason_items import expand_all, expand_reason

QUESTION = {
    "qid": "rs9001",
    "question": "Is it rude not to send thank-you notes for birthday presents?",
    "split": "train",
    "rot_for": "A warm thank-you in person is enough for a casual gift.",
    "rot_against": "You should thank people in writing for gifts.",
}
FOR = {"id": "rs9001-r1", "qid": "rs9001", "reason": "Because you already thanked them.",
       "side": "for", "style": "plain"}  # fmt: skip
AGAINST = {"id": "rs9001-r2", "qid": "rs9001", "reason": "Well, people like a card.",
           "side": "against", "style": "no-because"}  # fmt: skip


def test_a_reason_agrees_with_the_rot_on_its_side_and_not_with_the_other() -> None:
    # the act is NOT sending notes: a reason for it agrees with the RoT that permits skipping
    rows = {r["id"]: r["label"] for r in expand_reason(QUESTION, FOR, "for")}
    assert rows == {"rs9001-r1-for": "agree", "rs9001-r1-against": "disagree"}
    rows = {r["id"]: r["label"] for r in expand_reason(QUESTION, AGAINST, "against")}
    assert rows == {"rs9001-r2-for": "disagree", "rs9001-r2-against": "agree"}
    neither = {r["label"] for r in expand_reason(QUESTION, FOR, "neither")}
    assert neither == {"neutral"}


def test_a_question_with_one_rot_gives_one_example_per_reason() -> None:
    one = {k: v for k, v in QUESTION.items() if k != "rot_against"}
    [row] = expand_reason(one, FOR, "for")
    assert (row["rot"], row["label"], row["phenomenon"]) == (QUESTION["rot_for"], "agree",
                                                             "explanation")  # fmt: skip


def test_rater_sides_expand_to_the_same_rows_and_unrated_reasons_are_left_out() -> None:
    rows, ratings = expand_all([QUESTION], [FOR, AGAINST], {"rs9001-r1": "against"})
    assert [r["id"] for r in rows["train"]] == ["rs9001-r1-for", "rs9001-r1-against"]
    assert ratings == {"rs9001-r1-for": "disagree", "rs9001-r1-against": "agree"}  # disagrees


def test_bad_sides_and_unknown_questions_are_named() -> None:
    with pytest.raises(ValueError, match="rs9001-r1: side 'maybe'"):
        expand_reason(QUESTION, FOR, "maybe")
    with pytest.raises(ValueError, match="rs9001-r1: qid 'rs0000'"):
        expand_all([QUESTION], [{**FOR, "qid": "rs0000"}], {"rs9001-r1": "for"})
