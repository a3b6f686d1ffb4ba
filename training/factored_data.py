"""Training examples for the factored agreement scorer (evaluators.factored).

An answer agrees with a RoT when it takes the side the RoT takes on the act the question asks
about. The factored scorer learns the two halves apart:

- **stance** (question, answer): does the answer endorse doing the act the question asks
  about, reject it, or neither? The RoT is not read at all, so "Sure, go ahead" is learned as
  an endorsement whatever the RoT says.
- **direction** (act, RoT): is the RoT for the act, against it, or unrelated to it? The act
  is the question's act, or a narrated action itself (Moral Stories style, no question).

Both come from the pack's labelled agreement examples plus one written label per (question,
RoT): the RoT's direction on the question's act (the pack's `agreement_directions`,
scenarios.loaders.directions). With it, each agree/disagree example yields a stance label
(agree + for = endorse, agree + against = reject, ...). Examples whose question proposes no
act ("open") or whose RoT is unrelated to the question's act give no stance label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from scenarios.phrases import strip_because
from scenarios.types import AgreementExample, DirectionPair, MoralQuestion

DERIVATION_VERSION = 2
"""Bumped whenever the halves' examples are derived differently (2: explanations and written
or bot reasons read as rules, with their direction), so a cached factored build made the old
way is rebuilt. (The `reasons` source's kind joined REASON_KINDS later without a bump: the
default recipe does not read that source, so its examples are unchanged.)"""

REASON_KINDS: tuple[str, ...] = (
    "written:explanation",
    "bot:bot-explanation-own",
    "bot:bot-explanation-near",
    "reasons:explanation",
)
"""Labelled answers that are reasons ("Because ..."): read as a rule, each takes the side of
its stance on the act, which is how S_ME reads a bot's reply to "why?"."""

DIRECTION_LABEL = {"for": "agree", "unrelated": "neutral", "against": "disagree"}
"""Direction as the classifier's three labels (the agreement label of doing the act)."""

STANCE_LABEL = {
    ("agree", "for"): "agree",
    ("agree", "against"): "disagree",
    ("disagree", "for"): "disagree",
    ("disagree", "against"): "agree",
    ("neutral", "for"): "neutral",
    ("neutral", "against"): "neutral",
}
"""(agreement label, direction) -> stance label: agree = endorses the act, disagree = rejects."""


UNRELATED_KINDS: tuple[str, ...] = ("mismatched-rot", "restated-answer")


def with_explanation_directions(
    questions: Iterable[MoralQuestion], directions: dict[tuple[str, str], str]
) -> dict[tuple[str, str], str]:
    """The stated directions plus one derived per question: its explanation read as a rule
    ("Because it betrays trust" -> "it betrays trust") takes the side its RoT takes on the act,
    since the explanation is the reason behind the pack's agreeing answer. That is the input
    S_ME scores (the answer against the bot's own reason), which the direction half must read;
    without it the `own-explanation` examples carry no direction and are not trained on.
    Only for and against carry over: an open or unrelated RoT says nothing of the reason."""
    out = dict(directions)
    for q in questions:
        direction = directions.get((q.question, q.rot.text))
        reason = strip_because(q.explanation)
        if direction in ("for", "against") and reason:
            out.setdefault((q.question, reason), direction)
    return out


def direction_of(example: AgreementExample, directions: dict[tuple[str, str], str]) -> str | None:
    """The labelled direction of an example's (question, RoT). Two derived kinds are unrelated
    by the pack's construction: a mismatched RoT (another question's) and a restated answer
    (the answer given as its own RoT, which the pack labels neutral: a RoT is a rule, not a
    reply)."""
    if example.kind in UNRELATED_KINDS:
        return "unrelated"
    return directions.get((example.question, example.rot))


def stance_examples(
    examples: Iterable[AgreementExample], directions: dict[tuple[str, str], str]
) -> list[AgreementExample]:
    """Stance-labelled (question, answer) examples, one per distinct (question, answer): the
    RoT is dropped from the input, so an answer judged against two RoTs (one for the act, one
    against) is one stance example, not two copies. A (question, answer) whose labels imply
    two different stances (a reply labelled against two RoTs by readers who saw it
    differently) is left out rather than decided by file order."""
    out: dict[tuple[str, str], AgreementExample] = {}
    conflicting: set[tuple[str, str]] = set()
    for e in examples:
        if not e.question.strip():
            continue
        label = STANCE_LABEL.get((e.label, direction_of(e, directions) or ""))
        if label is None:
            continue
        key = (e.question, e.answer)
        if key in out and out[key].label != label:
            conflicting.add(key)
        out.setdefault(key, replace(e, rot="", label=label))  # type: ignore[arg-type]
    return [e for key, e in out.items() if key not in conflicting]


def direction_examples(
    examples: Iterable[AgreementExample], directions: dict[tuple[str, str], str]
) -> list[AgreementExample]:
    """Direction-labelled (act, RoT) examples, one per distinct (act, RoT).

    A question's act is the question's text; a narrated action (no question) is its own act
    and keeps its agreement label, which is the RoT's direction on it. Labelled reasons read
    as rules (reason_examples) follow, where no (act, RoT) example has the same input.
    """
    out: dict[tuple[str, str], AgreementExample] = {}
    for e in examples:
        if e.question.strip():
            direction = direction_of(e, directions)
            if direction not in DIRECTION_LABEL:
                continue
            act, label = e.question, DIRECTION_LABEL[direction]
        else:
            act, label = e.answer, e.label
        if not act.strip():
            continue
        key = (act, e.rot)
        if key not in out:
            out[key] = replace(e, question="", answer=act, label=label)  # type: ignore[arg-type]
    for r in reason_examples(examples, directions):  # S_ME's input, where no pair has it
        out.setdefault((r.answer, r.rot), r)
    return list(out.values())


def pair_examples(pairs: Iterable[DirectionPair]) -> list[AgreementExample]:
    """Written direction pairs (scenarios.loaders.direction_pairs) in the direction half's
    shape: the question is the act, the RoT's direction its label."""
    return [
        AgreementExample(
            id=p.id,
            question="",
            answer=p.question,
            rot=p.rot,
            label=DIRECTION_LABEL[p.direction],  # type: ignore[arg-type]
            split=p.split,
            kind=f"{p.source}:{p.form}",
        )
        for p in pairs
    ]


def reason_examples(
    examples: Iterable[AgreementExample], directions: dict[tuple[str, str], str]
) -> list[AgreementExample]:
    """Direction-labelled (act, reason-as-rule) examples from labelled reasons: a reason that
    endorses the act (its stance, by the sign rule) is a rule for it, one that rejects it a
    rule against it; a reason without a stance says nothing and is left out. Same shape as
    direction_examples, one per distinct (act, reason), first label kept. Their kind has no
    source, so a recipe counts them with the pack's own derived examples (repeated three
    times by the default recipe, as measured: docs/agreement-scorer.md, "Factoring the
    judgment")."""
    out: dict[tuple[str, str], AgreementExample] = {}
    for e in examples:
        if e.kind not in REASON_KINDS or not e.question.strip():
            continue
        stance = STANCE_LABEL.get((e.label, direction_of(e, directions) or ""))
        reason = strip_because(e.answer)
        if stance in ("agree", "disagree") and reason:
            out.setdefault(
                (e.question, reason),
                replace(e, id=f"{e.id}-reason", question="", answer=e.question, rot=reason,
                        label=stance, kind="reason-as-rule"),  # type: ignore[arg-type]
            )  # fmt: skip
    return list(out.values())


def leaks(train: Sequence[AgreementExample], held: Sequence[AgreementExample]) -> list[str]:
    """Inputs of held-out examples that also occur in training (should be none)."""
    seen = {(e.question, e.answer, e.rot) for e in train}
    return [e.id for e in held if (e.question, e.answer, e.rot) in seen]
