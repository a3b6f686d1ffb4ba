"""Preference pairs for DPO: the same prompt, a reply that follows the RoT and one that breaks it.

SFT teaches a bot the pack's answer style; whether it takes the RoT's side is a preference
between two replies to the same context, which is what DPO trains on. Each pair is a
conversational TRL row, `{"prompt": [...messages], "chosen": [assistant], "rejected":
[assistant]}`, plus the step and question it comes from. Per train question of a pack:

- answer     every wording (question and paraphrases): chosen = the agreeing answer,
             rejected = the disagreeing one;
- why        after the agreeing answer, "why?": chosen = the pack's explanation, rejected = the
             disagreeing answer's own reason (so the bot learns to explain the RoT's side);
- revision   after the disagreeing answer, the user pushes back with the RoT: chosen = a
             sorry-phrase + the agreeing answer, rejected = holding the disagreeing answer;
- related    after answer and why, the related question that shares the RoT: chosen = the
             related answer that follows the RoT, rejected = the one that breaks it (packs
             that have both).

Phrases (why, but, sorry, hold, base) come from scenarios.phrases, drawn by a generator seeded
by (seed, question), so the pairs are the same for the same seed. Only questions of the asked
split are used: a test question's answers never reach training (checked by the caller's split
choice and by `check_no_leaks`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scenarios.phrases import HOLD as HOLD_PHRASES
from scenarios.phrases import because, pick, pushback, reason_of
from scenarios.types import MoralQuestion

STEPS: tuple[str, ...] = ("answer", "why", "revision", "related")


@dataclass(frozen=True)
class PreferencePair:
    prompt: tuple[tuple[str, str], ...]  # (role, text), roles "user" / "assistant"
    chosen: str
    rejected: str
    step: str
    question_id: str

    def to_row(self) -> dict[str, Any]:
        """The TRL conversational preference row (plus where it came from)."""
        return {
            "prompt": [{"role": r, "content": t} for r, t in self.prompt],
            "chosen": [{"role": "assistant", "content": self.chosen}],
            "rejected": [{"role": "assistant", "content": self.rejected}],
            "step": self.step,
            "question_id": self.question_id,
        }


def question_pairs(
    q: MoralQuestion, seed: int, steps: Sequence[str] = STEPS
) -> list[PreferencePair]:
    """Every pair one question gives (see the module docstring)."""
    rng = random.Random(f"dpo:{seed}:{q.id}")
    follow, breaks = q.agree_answer, q.disagree_answer
    pairs: list[PreferencePair] = []
    if "answer" in steps:
        for wording in (q.question, *q.paraphrases):
            pairs.append(PreferencePair((("user", wording),), follow, breaks, "answer", q.id))
    why = pick("why", rng)
    asked = (("user", q.question), ("assistant", follow), ("user", why))
    if "why" in steps:
        pairs.append(PreferencePair(asked, q.explanation, because(reason_of(breaks)), "why", q.id))
    if "revision" in steps:
        context = (
            ("user", q.question),
            ("assistant", breaks),
            ("user", pushback(q.rot.text, rng, firm=rng.random() < 0.5)),
        )
        chosen = f"{pick('sorry', rng)} {follow}"
        rejected = f"{rng.choice(HOLD_PHRASES)} {breaks}"
        pairs.append(PreferencePair(context, chosen, rejected, "revision", q.id))
    if "related" in steps and q.related_answer and q.related_disagree_answer:
        context = (
            *asked,
            ("assistant", q.explanation),
            ("user", pick("base", rng) + q.related_question),
        )
        pairs.append(
            PreferencePair(context, q.related_answer, q.related_disagree_answer, "related", q.id)
        )
    return pairs


def build_pairs(
    questions: Iterable[MoralQuestion], split: str, seed: int, steps: Sequence[str] = STEPS
) -> list[PreferencePair]:
    """All pairs of the questions in one split, in question order."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown DPO step(s) {unknown}; known: {', '.join(STEPS)}")
    return [p for q in questions if q.split == split for p in question_pairs(q, seed, steps)]


def step_counts(pairs: Sequence[PreferencePair]) -> dict[str, int]:
    return dict(sorted(Counter(p.step for p in pairs).items()))


def held_out_pair_texts(held_out: Iterable[MoralQuestion]) -> set[str]:
    """Every text of the held-out questions (wordings, answers, explanation, related question
    and answers, RoT), normalised for `leaked_text`."""
    return {
        _norm(t)
        for q in held_out
        for t in (
            q.question, *q.paraphrases, q.agree_answer, q.disagree_answer, q.explanation,
            q.related_question, q.related_answer, q.related_disagree_answer, q.rot.text,
        )
        if t.strip()
    }  # fmt: skip


def leaked_text(pair: PreferencePair, held: set[str]) -> str | None:
    """The first held-out text found inside the pair's prompt or replies, if any."""
    texts = [_norm(t) for _, t in pair.prompt] + [_norm(pair.chosen), _norm(pair.rejected)]
    return next((h for h in held for t in texts if h in t), None)


def check_no_leaks(train: Sequence[PreferencePair], held_out: Iterable[MoralQuestion]) -> None:
    """Refuse training pairs whose prompt or replies contain any text of a held-out question."""
    held = held_out_pair_texts(held_out)
    for p in train:
        leaked = leaked_text(p, held)
        if leaked is not None:
            raise ValueError(
                f"DPO pair of {p.question_id} ({p.step}) holds held-out text: {leaked[:60]!r}"
            )


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
