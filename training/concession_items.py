"""Expand written concession-then-lean answers into labelled agreement examples (the
`concessions` source).

A hedged answer that grants a point first and leans at the end ("It might hurt her. Still,
I'd go") is where the stance classifier misses most often: on the sign test's development set
it read 67% of hedged answers' stances, against 93% of flat ones
(docs/experiments/2026-12-05-sign-dev/). The written and factorial corpora's hedged answers
mostly lean first and add the caveat after ("Probably yes, unless..."), so the classifier
rarely saw a lean that comes last. Writers gave, for each question of the factorial sets, one
answer that concedes a point against the act and then leans toward doing it (endorse) and
one that concedes a point for it and leans against (reject), the lean said in four ways: the
act named again, the opposite act named, advice, a judgment word.

Each answer becomes an example against the question's RoT for the act and its RoT against
it, labelled by the factored scorer's sign rule, as the written reasons are
(training.reason_items). A rater read each answer blind (question and answer only) and gave
its stance; training.scorer_data keeps an answer's examples only when both saw the same one.
The RoTs and their directions are the factorial set's, so these answers add stance examples
and no new direction example. The questions file holds, per factorial question, its `qid`,
`question`, `split`, `rot_for` and `rot_against` as the pack states them, and `act_negated`
where the sets' flat endorsing answer (row `-a1-`) to a "Do I have to X?" question says
"No" (73 questions). Usage:

    python -m training.concession_items --questions data/agreement_raw/cs/questions.jsonl \
        --answers 'data/agreement_raw/cs/answers_b*.jsonl' \
        --ratings 'data/agreement_raw/cs/ratings_r*.jsonl' --out data/agreement_raw/cs/expanded
"""

from __future__ import annotations

from typing import Any

from training.factorial_items import STANCES, rows_against_rots
from training.reason_items import expand_cli

PHENOMENON = "hedged-late"
"""The phenomenon every expanded row carries: a hedge whose lean comes last."""

NEGATED = {"endorse": "reject", "reject": "endorse", "none": "none"}
"""A stance on doing X -> the stance on not doing X."""


def expand_answer(question: dict[str, Any], answer: dict[str, Any], stance: str) -> list[dict]:
    """One answer as an example against each RoT its question has, labelled from `stance`
    (endorse / reject / none: the answer's stance on doing what the question names).

    Writers and raters took the act to be what the question names, always. The factorial
    sets mostly do too, but on most "Do I have to X?" questions their act is not doing X
    (their RoT "for" it is "You don't have to..."); such a question carries `act_negated`,
    and the stance is turned to the sets' act before the RoTs' directions label it."""
    if stance not in STANCES:
        raise ValueError(f"{answer.get('id', '?')}: stance {stance!r} not in {STANCES}")
    on_their_act = NEGATED[stance] if question.get("act_negated") else stance
    return rows_against_rots(
        answer["id"], question["qid"], question["question"],
        {"for": question.get("rot_for"), "against": question.get("rot_against")},
        answer["answer"], on_their_act,
        phenomenon=PHENOMENON, style=str(answer.get("lean_said") or "unspecified"),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    expand_cli(argv, __doc__.split("\n\n")[0], "answers", "stance", expand_answer, "stance")


if __name__ == "__main__":
    main()
