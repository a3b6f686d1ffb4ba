"""Verdict answers: more moral questions for SFT, answered by the act, not by yes or no.

Why: a scenario pack holds a few hundred train questions (226 in the core pack). Fine-tuned on
them, the embedded 135M bot learns to answer decisively but takes the RoT's side on new
questions no more often than the other side (README, "Does training help?"). The core pack's
written agreement corpus holds thousands of further direct moral questions, each with a RoT
and, in the pack's `agreement_directions` files, the RoT's stated direction on the act the
question asks about. That is a moral verdict per question, which this module turns into an
answer a bot can learn: a verdict phrase that names the side by the act ("I wouldn't do
that." / "That's fine to do."), then the RoT as the reason.

The verdict never starts with "Yes" or "No": what those mean flips with the question's wording
("Is it okay to…?" against "Is it wrong to…?"), and the pack-trained bot answers "No" to both
kinds alike (2026-12-01 reading sheet). A phrase about doing the act means the same under
every wording.

Only questions that ask about an act qualify: narrated examples ("What did Yuki do?") and
examples judged against an unrelated RoT are skipped, and so is a question whose RoTs are
stated in both directions (the pack then holds it contested). The answers enter the MA flow
only: the answer already carries the RoT, so an ME row would repeat it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from scenarios.rot import RoT
from training.discussion_sources import Corpus, SourceAnswer, normalise

SOURCE = "verdicts"
"""The `source` of every verdict answer (rows, leak reports and stats name it)."""

FOR_PHRASES: tuple[str, ...] = (
    "That's fine to do.",
    "Go ahead, that's okay.",
    "You can do that.",
    "That's a reasonable thing to do.",
)
AGAINST_PHRASES: tuple[str, ...] = (
    "I wouldn't do that.",
    "Better not.",
    "That's not okay to do.",
    "You shouldn't do that.",
)
SKIPPED_PHENOMENA: tuple[str, ...] = (
    "narrated-first-person",
    "narrated-third-person",
    "unrelated-rot",
)
DEV_SHARE = 10
"""A build asking for N verdict answers also takes up to N // DEV_SHARE (at least one) from the
corpus's dev split, so the dev loss sees the kind of row it trains on; a dev loss with verdicts
on is therefore not comparable with one without them."""


@dataclass(frozen=True)
class VerdictItem:
    """One direct question, the RoT it was labelled against, and that RoT's side on the act."""

    example_id: str
    question: str
    rot: str
    direction: str  # for | against
    split: str


def side_phrases(direction: str) -> tuple[str, ...]:
    """The verdict phrases that take `direction` (for / against) on the asked act."""
    return FOR_PHRASES if direction == "for" else AGAINST_PHRASES


def opposite(direction: str) -> str:
    return "against" if direction == "for" else "for"


def verdict_items(pack: Any) -> list[VerdictItem]:
    """The pack's written examples that state a side on the asked act, one per question. A
    direction that its second reader read otherwise is left out, like a contested question."""
    directions = {(d.question, d.rot): d for d in pack.rot_directions}
    first: dict[str, VerdictItem] = {}
    contested: set[str] = set()
    for example in pack.agreement_examples:
        source, _, phenomenon = example.kind.partition(":")
        if source != "written" or phenomenon in SKIPPED_PHENOMENA:
            continue
        stated = directions.get((example.question, example.rot))
        direction = stated.direction if stated else None
        if direction not in ("for", "against") or not example.question.rstrip().endswith("?"):
            continue
        if stated.second_rater not in (None, direction):
            continue
        key = normalise(example.question)
        item = VerdictItem(example.id, example.question, example.rot, direction, example.split)
        if key in first and first[key].direction != direction:
            contested.add(key)
        first.setdefault(key, item)
    return [item for key, item in first.items() if key not in contested]


def verdict_answer(item: VerdictItem, rng: random.Random) -> str:
    """A verdict phrase for the RoT's side, then the RoT as the reason."""
    return f"{rng.choice(side_phrases(item.direction))} {item.rot.strip()}"


def verdict_corpus(pack: Any, limit: int, seed: int) -> Corpus:
    """Up to `limit` train-split verdict answers (a seeded sample) and up to limit // DEV_SHARE
    (at least one) dev-split ones. Their stance toward the RoT is "agree" by construction."""
    corpus = Corpus()
    if limit <= 0:
        return corpus
    items = verdict_items(pack)
    caps = {"train": limit, "dev": max(1, limit // DEV_SHARE)}
    rng = random.Random(f"{seed}:verdicts")
    for split, cap in caps.items():
        chosen = [item for item in items if item.split == split]
        rng.shuffle(chosen)
        for item in chosen[:cap]:
            corpus.answers.append(
                SourceAnswer(
                    source=SOURCE,
                    question_id=f"{SOURCE}:{item.example_id}",
                    question=item.question,
                    answer=verdict_answer(item, rng),
                    rot=RoT(text=item.rot),
                    stance="agree",
                    revised=False,
                    split=split,
                )
            )
    return corpus
