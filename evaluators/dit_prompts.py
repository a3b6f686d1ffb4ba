"""How a DIT dilemma is shown to a bot: the order protocol and the three prompts.

A language model's DIT answers move with the order in which statements and options are
listed, so each dilemma is shown in many orders (docs/methods.md §6) and every parsed answer is
mapped back to the dilemma's original numbering before it is scored.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from scenarios.types import Dilemma

OPTION_ORDERS: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (0, 2, 1),
    (1, 0, 2),
    (1, 2, 0),
    (2, 0, 1),
    (2, 1, 0),
)
"""All six orders of (should, can't decide, should not), display position -> original index."""


@dataclass(frozen=True)
class Presentation:
    """One order in which a dilemma is shown; each tuple maps display position -> original index.

    `statement_order[0]` is the original index of the statement displayed as number 1, and so on.
    """

    statement_order: tuple[int, ...]
    option_order: tuple[int, int, int]

    def __post_init__(self) -> None:
        if sorted(self.statement_order) != list(range(len(self.statement_order))):
            raise ValueError(f"statement_order is not a permutation: {self.statement_order}")
        if sorted(self.option_order) != [0, 1, 2]:
            raise ValueError(f"option_order is not a permutation of 0, 1, 2: {self.option_order}")

    def display_position(self, original: int) -> int:
        """0-based display position of an original statement (for positional-bias checks)."""
        return self.statement_order.index(original)


@dataclass(frozen=True)
class DitPrompts:
    """The three user turns of one administration, asked in this order in one conversation."""

    decision: str
    rating: str
    ranking: str


def order_protocol(
    dilemma: Dilemma, seed: int, n_statement_orders: int = 8, *, sample: int | None = None
) -> list[Presentation]:
    """Statement orders x option orders (8 x 6 = 48 by default), reproducible from `seed`.

    The first statement order is the original one, so the protocol always contains the order
    the dilemma's author wrote; the others are distinct random permutations. The generator is
    seeded with the dilemma id too, so dilemmas do not share the same shuffles.

    Args:
        dilemma: the dilemma to present.
        seed: run seed.
        n_statement_orders: how many statement orders (the original included).
        sample: if set, a seeded subset of this many presentations, kept in protocol order,
            for runs that cannot afford all of them.

    Returns:
        Presentations, statement order outermost.
    """
    n = len(dilemma.statements)
    if not 1 <= n_statement_orders <= math.factorial(n):
        raise ValueError(f"{n} statements allow 1..{math.factorial(n)} orders")
    rng = random.Random(f"dit-order:{seed}:{dilemma.id}")
    orders: list[tuple[int, ...]] = [tuple(range(n))]
    while len(orders) < n_statement_orders:
        order = tuple(rng.sample(range(n), n))
        if order not in orders:
            orders.append(order)
    protocol = [Presentation(s, o) for s in orders for o in OPTION_ORDERS]
    if sample is None:
        return protocol
    if not 0 <= sample <= len(protocol):
        raise ValueError(f"sample must be in 0..{len(protocol)}, got {sample}")
    return [protocol[i] for i in sorted(rng.sample(range(len(protocol)), sample))]


def _statement_list(dilemma: Dilemma, presentation: Presentation) -> str:
    return "\n".join(
        f"{d}. {dilemma.statements[i].text}"
        for d, i in enumerate(presentation.statement_order, start=1)
    )


def render_prompts(dilemma: Dilemma, presentation: Presentation) -> DitPrompts:
    """The decision, rating and ranking prompts in the presentation's order.

    Wording is short and literal so a small chat model can follow it. The ranking prompt
    repeats the numbered list instead of pointing "above", and gives no example numbers: an
    example like "3, 7, 1, 12" would be copied by weak models and read as a preference.
    """
    n = len(dilemma.statements)
    if len(presentation.statement_order) != n:
        raise ValueError(
            f"presentation orders {len(presentation.statement_order)} statements, "
            f"dilemma {dilemma.id} has {n}"
        )
    options = "\n".join(
        f"{d}. {dilemma.options[i]}" for d, i in enumerate(presentation.option_order, start=1)
    )
    statements = _statement_list(dilemma, presentation)
    decision = (
        "Please read this story and answer the question after it.\n\n"
        f"{dilemma.story.strip()}\n\n"
        f"{dilemma.question.strip()}\n{options}\n\n"
        "Which option do you choose? Answer with the number of your choice (1, 2 or 3)."
    )
    rating = (
        f"Here are {n} statements about this story. Each one is an issue a person might think "
        "about when deciding what to do. Rate how important each issue is to your decision, "
        "from 1 to 5:\n1 = no importance, 2 = little, 3 = some, 4 = much, 5 = great importance.\n"
        "Rate every statement on its own; several can get the same rating.\n\n"
        f"{statements}\n\n"
        f"Give all {n} ratings in this format: 1: <rating>, 2: <rating>, and so on up to {n}."
    )
    ranking = (
        f"From the same {n} statements, choose the four issues that are most important to your "
        f"decision.\n\n{statements}\n\n"
        "Answer with the four statement numbers, most important first, separated by commas."
    )
    return DitPrompts(decision=decision, rating=rating, ranking=ranking)
