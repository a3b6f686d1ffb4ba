"""RoT pre-training (PT) statements: `{judgment} {action} {when/if} {situation}`
(docs/methods.md §2).

The situation is dropped at random and the two clauses are swapped at random so the model sees
the same norm in several surface forms instead of memorising one sentence. Only RoTs that were
broken down into judgment and action (Social-Chem-101) can be recombined; any other RoT is used
as written, and the caller counts which way each statement was made.

Every statement draws exactly three numbers from the generator (keep the situation? which
connective? swap?), whatever the outcome, so one statement's choices never shift the next
statement's and a build is reproducible from its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from scenarios.rot import RoT

CONNECTIVES: tuple[str, ...] = ("when", "if")


@dataclass(frozen=True)
class PtStatement:
    """A statement and whether it was recombined from the RoT's fields or is the RoT text."""

    text: str
    from_fields: bool


def _clause(text: str) -> str:
    """A fragment ready to sit inside a sentence: trimmed, no closing punctuation."""
    return text.strip().rstrip(".!?;, ").strip()


def _lower_first(text: str) -> str:
    """Lower the first letter unless it is the pronoun "I" (or "I'm", "I've", ...)."""
    if not text or text == "I" or text.startswith(("I ", "I'")):
        return text
    return text[:1].lower() + text[1:]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def pt_statement(
    rot: RoT, rng: random.Random, *, include_situation_prob: float, swap_prob: float
) -> PtStatement:
    """One PT statement for `rot`; falls back to the RoT text when judgment or action is missing.

    Args:
        rot: the rule of thumb (judgment, action and situation are used when present).
        rng: the caller's seeded generator (three draws per call, always).
        include_situation_prob: chance the situation clause is kept (when the RoT has one).
        swap_prob: chance the situation clause comes first ("When X, it's good to Y.").
    """
    keep_draw, connective, swap_draw = rng.random(), rng.choice(CONNECTIVES), rng.random()
    judgment = _clause(rot.judgment or "")
    action = _clause(rot.action or "")
    if not judgment or not action:
        return PtStatement(rot.text.strip(), from_fields=False)
    main = f"{_upper_first(judgment)} {_lower_first(action)}"
    situation = _clause(rot.situation or "")
    if not situation or keep_draw >= include_situation_prob:
        return PtStatement(f"{main}.", from_fields=True)
    if swap_draw < swap_prob:
        text = f"{_upper_first(connective)} {_lower_first(situation)}, {_lower_first(main)}."
    else:
        text = f"{main} {connective} {_lower_first(situation)}."
    return PtStatement(text, from_fields=True)
