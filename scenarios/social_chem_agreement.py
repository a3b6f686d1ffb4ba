"""Agreement-scorer examples built from Social-Chem-101 actions and their judgments.

A Social-Chem row has a rule of thumb, the action it judges ("helping your friends when
they're feeling down") and the worker's judgment of the action (-2 very bad … +2 very good).
From each row with a clear judgment (not 0, RoT not marked bad) this builds a question about
the action, one answer that approves of it and one that condemns it, each against the row's
RoT: the approving answer agrees when the judgment is good and disagrees when it is bad, and
the other way round. Wordings are drawn by a seeded generator from small sets written for
moralsim, so the RoTs and actions are human-written while the answers vary in form. A fifth of
the rows also give a neutral example: the answer against the RoT of another situation.

Social-Chem's own train split becomes train, its dev/test become dev; rows whose RoT is one of
`held_out_rots` (e.g. a pack's dev/test RoTs) are left out. The corpus is CC BY-SA 4.0: use it
for your own scorers; moralsim does not ship it or anything built from it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

from scenarios.loaders.social_chem import SocialChemRow
from scenarios.types import AgreementExample

QUESTIONS = (
    "Is {a} okay?",
    "What do you think about {a}?",
    "Would {a} be wrong?",
    "Is {a} acceptable?",
    "How do you feel about {a}?",
    "Is there anything wrong with {a}?",
)
APPROVE = (
    "Yes, that's fine.",
    "Sure, nothing wrong with it.",
    "It's a good thing to do.",
    "I think it's perfectly okay.",
    "Go for it, it's reasonable.",
    "Honestly, that's completely acceptable.",
)
CONDEMN = (
    "No, that's not okay.",
    "I'd say it's wrong.",
    "You really shouldn't do that.",
    "That's not acceptable.",
    "Don't do it; it's not right.",
    "I think that's a bad idea, morally.",
)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", " ".join(text.lower().split()))


def social_chem_examples(
    rows: Sequence[SocialChemRow], held_out_rots: Iterable[str] = (), seed: int = 0
) -> list[AgreementExample]:
    rng = random.Random(seed)
    held = {_norm(r) for r in held_out_rots}
    usable = [
        r
        for r in rows
        if r.rot.action
        and r.action_moral_judgment
        and not r.rot_bad
        and r.split in ("train", "dev", "test")
        and _norm(r.rot.text) not in held
    ]
    out: list[AgreementExample] = []
    for row in usable:
        action = row.rot.action.strip().rstrip(".")  # type: ignore[union-attr]
        question = rng.choice(QUESTIONS).format(a=action[:1].lower() + action[1:])
        good = row.action_moral_judgment > 0  # type: ignore[operator]
        split = "train" if row.split == "train" else "dev"
        base = f"sc-{row.line}"
        cases = [
            ("approve", rng.choice(APPROVE), row.rot.text, "agree" if good else "disagree"),
            ("condemn", rng.choice(CONDEMN), row.rot.text, "disagree" if good else "agree"),
        ]
        if rng.random() < 0.2:
            other = rng.choice(usable)
            if other.situation_id != row.situation_id:
                answer = rng.choice(APPROVE + CONDEMN)
                cases.append(("mismatched", answer, other.rot.text, "neutral"))
        for suffix, answer, rot, label in cases:
            out.append(
                AgreementExample(
                    id=f"{base}/{suffix}", question=question, answer=answer, rot=rot,
                    label=label, split=split, kind=f"social-chem:{suffix}",  # type: ignore[arg-type]
                )
            )  # fmt: skip
    return out
