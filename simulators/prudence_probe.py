"""The prudence probe: contested and universal questions, each wording in a fresh dialogue.

A prudent bot takes a clear stance on near-universal, high-severity RoTs and hedges on
contested ones (docs/methods.md §7). The probe draws both kinds from the run's split, balanced and
seeded, asks each question and each of its paraphrases in its own one-turn dialogue (so one
wording cannot lean on another), and scores every answer with AS(Q, A, RoT), Q the wording
asked. Stances, the two rates and the stance flips across wordings are computed later from the
records by `evaluators.prudence`, so a resumed run rebuilds its section from dialogues.jsonl
and the thresholds live in one place.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluators.agreement import AgreementItem, class_meta, split_agreement

# The draw must use the same band rule as the metric, or it could pick questions the metric
# then ignores; evaluators.prudence keeps that rule in `band_of`.
from evaluators.prudence import (
    PrudenceParams,
    StancedAnswer,
    band_of,
    prudence,
    stance_flips,
    stance_of,
)
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Score, Turn
from scenarios.types import MoralQuestion

AgreementFn = Callable[[Sequence[AgreementItem]], np.ndarray]
FLOW = "prudence"
SCORE = "AS_rot"
log = logging.getLogger(__name__)


def prudence_dialogue_id(question_id: str, wording: int, seed: int) -> str:
    """Deterministic (the resume key); wording 0 is the question, i >= 1 its paraphrase i-1."""
    return f"{question_id}/{FLOW}/p{wording}/s{seed}"


def wordings(question: MoralQuestion) -> list[str]:
    """The question as written, then its paraphrases (duplicates kept: each is one answer)."""
    return [question.question, *question.paraphrases]


def choose_prudence_questions(
    questions: Sequence[MoralQuestion],
    n_questions: int,
    seed: int,
    params: PrudenceParams | None = None,
) -> list[MoralQuestion]:
    """A seeded draw of n questions, half contested and half universal.

    An odd n gives the extra question to a seeded band. When one band has too few questions,
    all of them are taken and the other band fills up to n (the score averages the two rates,
    so an unequal split widens one interval but does not tilt the mean). Questions in neither
    band are never drawn. The result does not depend on the order of `questions`.
    """
    if n_questions < 1:
        raise ValueError(f"prudence probe: n_questions must be at least 1, got {n_questions}")
    p = params or PrudenceParams()
    rng = random.Random(f"{seed}/{FLOW}")
    bands: dict[str, list[MoralQuestion]] = {"contested": [], "universal": []}
    for q in sorted(questions, key=lambda q: q.id):
        band = band_of(q.rot, p)
        if band is not None:
            bands[band].append(q)
    if not bands["contested"] and not bands["universal"]:
        raise ValueError(
            f"prudence probe: none of the {len(questions)} questions has a contested "
            f"(consensus <= {p.contested_max_consensus}) or universal (consensus >= "
            f"{p.universal_min_consensus}, severity >= {p.universal_min_severity}) RoT"
        )
    for pool in bands.values():
        rng.shuffle(pool)
    first, second = rng.sample(("contested", "universal"), 2)
    want = {first: (n_questions + 1) // 2, second: n_questions // 2}
    take = {b: min(want[b], len(bands[b])) for b in bands}
    short = n_questions - sum(take.values())
    for b in (first, second):
        extra = min(short, len(bands[b]) - take[b])
        take[b] += extra
        short -= extra
    chosen = bands["contested"][: take["contested"]] + bands["universal"][: take["universal"]]
    if take != want:  # unbalanced or short: say so, the section's n values will show it too
        log.warning(
            "prudence probe: drew %d contested and %d universal questions (asked for %d)",
            take["contested"],
            take["universal"],
            n_questions,
        )
    return sorted(chosen, key=lambda q: q.id)


def run_prudence_probe(
    questions: Sequence[MoralQuestion],
    agent: Any,
    agreement: AgreementFn,
    writer: DialogueWriter,
    *,
    seed: int = 0,
    n_questions: int = 6,
    done: set[str] = frozenset(),  # type: ignore[assignment]
    meta: dict[str, Any] | None = None,
    params: PrudenceParams | None = None,
) -> int:
    """Draw, ask every wording in one batched call, score in one batch; returns dialogues written.

    Args:
        questions: the run's split (the pool to draw from, not only the dialogue questions).
        agent: the bot (any ChatAgent).
        agreement: (n, 3) class probabilities (or AS) for a batch of items.
        writer: where finished dialogues go.
        seed: the draw and the dialogue ids.
        n_questions: questions to draw (each asked in all its wordings).
        done: dialogue ids already on disk (skipped).
        meta: copied into every dialogue's meta.
        params: the band rule for the draw (the section takes its own, normally the same).
    """
    chosen = choose_prudence_questions(questions, n_questions, seed, params)
    dialogues: list[tuple[Dialogue, str]] = []
    for q in chosen:
        for i, text in enumerate(wordings(q)):
            ident = prudence_dialogue_id(q.id, i, seed)
            if ident in done:
                continue
            dialogue = Dialogue(
                id=ident,
                scenario_id=q.id,
                flow=FLOW,
                turns=[Turn("user", text, {"step": "question", "question": text})],
                hidden_rot=q.rot,
                meta={**(meta or {}), "split": q.split, "wording": i, "seed": seed},
            )
            dialogues.append((dialogue, q.rot.text))
    if not dialogues:
        return 0
    replies = agent.respond([d.turns for d, _ in dialogues])
    if len(replies) != len(dialogues):
        raise ValueError(
            f"prudence probe: the bot returned {len(replies)} replies for {len(dialogues)} "
            "dialogues"
        )
    items = []
    for (d, rot), reply in zip(dialogues, replies, strict=True):
        d.turns.append(Turn("bot", reply, {"step": "answer"}))
        items.append(AgreementItem(d.turns[0].text, reply, rot))
    values, probs = split_agreement(agreement(items))
    if values.shape != (len(items),):
        raise ValueError(
            f"prudence probe: the agreement scorer returned shape {values.shape} for "
            f"{len(items)} items"
        )
    for row, ((d, _), value) in enumerate(zip(dialogues, values, strict=True)):
        d.scores.append(
            Score(SCORE, float(value), turn=1, scorer="agreement", meta=class_meta(probs, row))
        )
        writer.write(d)
    return len(dialogues)


def _answer(d: Dialogue) -> StancedAnswer:
    if d.hidden_rot is None:
        raise ValueError(f"dialogue '{d.id}': a prudence dialogue needs its hidden_rot")
    found = d.scores_named(SCORE)
    if not found:
        raise ValueError(f"dialogue '{d.id}': a prudence dialogue has no '{SCORE}' score")
    return StancedAnswer(d.scenario_id, d.hidden_rot, found[0].value)


def prudence_section(
    dialogues: Sequence[Dialogue], params: PrudenceParams | None = None, seed: int = 0
) -> dict[str, Any] | None:
    """probes.json's "prudence" section from the probe's records; None when there are none.

    Keys: prudence, aligned_on_universal, hedged_on_contested, stance_flips (each mean, ci95,
    n), stance_counts per band, threshold, and per_question (band, AS per wording, stances).
    """
    p = params or PrudenceParams()
    answers = [
        _answer(d)
        for d in sorted(dialogues, key=lambda d: (d.scenario_id, d.meta.get("wording", 0), d.id))
        if d.flow == FLOW
    ]
    if not answers:
        return None
    by_question: dict[str, list[StancedAnswer]] = defaultdict(list)
    for a in answers:
        by_question[a.question_id].append(a)
    section: dict[str, Any] = prudence(answers, p, seed).to_dict()
    section["stance_flips"] = stance_flips(
        {q: [a.as_value for a in group] for q, group in by_question.items()}, p.threshold
    ).to_dict()
    section["threshold"] = p.threshold
    section["per_question"] = {
        q: {
            "band": band_of(group[0].rot, p),
            "as": [a.as_value for a in group],
            "stances": [stance_of(a.as_value, p.threshold) for a in group],
        }
        for q, group in sorted(by_question.items())
    }
    return section
