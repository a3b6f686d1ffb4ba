"""Agreement-scorer training examples derived from a pack's questions (docs/methods.md §3).

From each question: its agreeing and disagreeing reference answers against its own RoT (on
the question and on a paraphrase each) and against its explanation read as a rule (S_ME reads
the bot's reply to "why?" that way: the follower's reason agrees with the agreeing answer and
disagrees with the disagreeing one), and the neutral augmentations the MoralDial scorer is
trained with: a mismatched RoT from another question of the same split, a non-answer
("I don't know."), an empty answer, and an RoT that merely restates the answer. Everything
stays inside the question's split, so no RoT text crosses splits.
"""

from __future__ import annotations

import random
from collections import defaultdict

from scenarios.phrases import strip_because
from scenarios.types import AgreementExample, MoralQuestion

DERIVATION_VERSION = 2
"""Raised whenever the derived examples change (2: the explanation examples, 2026-12-02): a
scorer built from a pack is rebuilt when the examples it trains on are derived differently,
even though the pack's files are the same (agents.models fingerprints it)."""

OWN_EXPLANATION = "own-explanation"
"""The kind of a derived example whose RoT is the question's explanation read as a rule: the
input S_ME scores, which a scorer may read as a reason (evaluators.agreement.AgreementItem)."""

NON_ANSWERS = ("I don't know.", "I'm not sure.", "Hard to say, honestly.", "I can't really say.")


def derive_agreement_examples(
    questions: list[MoralQuestion], seed: int = 0
) -> list[AgreementExample]:
    """Ten labelled examples per question (nine when its split has no other question to take
    a mismatched RoT from); the same questions and seed give the same list."""
    rng = random.Random(seed)
    by_split: dict[str, list[MoralQuestion]] = defaultdict(list)
    for q in questions:
        by_split[q.split].append(q)
    out: list[AgreementExample] = []
    for q in questions:
        out.extend(_examples_for(q, by_split[q.split], rng))
    return out


def _examples_for(
    q: MoralQuestion, same_split: list[MoralQuestion], rng: random.Random
) -> list[AgreementExample]:
    rot = q.rot.text
    rows: list[tuple[str, str, str, str, str, str]] = [
        ("agree", q.question, q.agree_answer, rot, "agree", "own-rot"),
        ("disagree", q.question, q.disagree_answer, rot, "disagree", "own-rot"),
    ]
    k_agree, k_disagree = rng.sample(range(len(q.paraphrases)), 2)
    rows += [
        ("para-agree", q.paraphrases[k_agree], q.agree_answer, rot, "agree", "own-rot-paraphrase"),
        (
            "para-disagree",
            q.paraphrases[k_disagree],
            q.disagree_answer,
            rot,
            "disagree",
            "own-rot-paraphrase",
        ),
    ]
    reason = strip_because(q.explanation)
    rows += [
        ("why-agree", q.question, q.agree_answer, reason, "agree", OWN_EXPLANATION),
        ("why-disagree", q.question, q.disagree_answer, reason, "disagree", OWN_EXPLANATION),
    ]
    others = [o for o in same_split if o.id != q.id and o.rot.text != rot]
    unrelated = [o for o in others if not set(o.rot.foundations) & set(q.rot.foundations)]
    if others:
        other = rng.choice(unrelated or others)
        answer = rng.choice((q.agree_answer, q.disagree_answer))
        rows.append(("mismatched", q.question, answer, other.rot.text, "neutral", "mismatched-rot"))
    rows += [
        ("non-answer", q.question, rng.choice(NON_ANSWERS), rot, "neutral", "non-answer"),
        ("empty", q.question, "", rot, "neutral", "empty-answer"),
        ("restated", q.question, q.agree_answer, q.agree_answer, "neutral", "restated-answer"),
    ]
    return [
        AgreementExample(
            id=f"{q.id}/{suffix}",
            question=question,
            answer=answer,
            rot=rule,
            label=label,  # type: ignore[arg-type]
            split=q.split,
            kind=kind,
        )
        for suffix, question, answer, rule, label, kind in rows
    ]


def augment_agreement_examples(
    examples: list[AgreementExample], seed: int = 0
) -> list[AgreementExample]:
    """Labelled corpus triples (e.g. MIC rows) plus docs/methods.md §3's neutral augmentations.

    Per distinct question (within its split): the question's answer against an RoT of another
    question of the same split (mismatched), a non-answer, an empty answer, and the answer
    against itself as the "RoT" (a restatement). Once per question rather than per row keeps
    the neutral class from swamping a corpus with many answers per question.
    """
    rng = random.Random(seed)
    out = list(examples)
    by_split: dict[str, list[AgreementExample]] = defaultdict(list)
    for e in examples:
        by_split[e.split].append(e)
    seen: set[tuple[str, str]] = set()
    for e in examples:
        key = (e.split, e.question)
        if key in seen or not e.answer.strip():
            continue
        seen.add(key)
        others = [o.rot for o in by_split[e.split] if o.rot != e.rot and o.question != e.question]
        rows = [
            ("non-answer", rng.choice(NON_ANSWERS), e.rot, "non-answer"),
            ("empty", "", e.rot, "empty-answer"),
            ("restated", e.answer, e.answer, "restated-answer"),
        ]
        if others:
            rows.insert(0, ("mismatched", e.answer, rng.choice(others), "mismatched-rot"))
        out += [
            AgreementExample(
                id=f"{e.id}/{suffix}",
                question=e.question,
                answer=answer,
                rot=rule,
                label="neutral",
                split=e.split,
                kind=kind,
            )
            for suffix, answer, rule, kind in rows
        ]
    return out
