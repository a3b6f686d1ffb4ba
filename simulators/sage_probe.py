"""The SaGE probe: each paraphrase of a question in a fresh dialogue, then a why-question.

The answers a_i and the RoTs r_i the bot states (its reply to "why", a leading "because"
stripped) are what SaGE compares across paraphrases (docs/methods.md §5). With `rot_prompt` the bot
is told the question's RoT in a system turn first: the SaGE §5.5 experiment, recorded as flow
"sage-rot" so both settings can live in one run.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agents.base import system_text
from evaluators.moraldial import strip_because
from evaluators.sage import sage_scores
from evaluators.stats import histogram, mean_ci
from evaluators.text_similarity import (
    mean_pairwise_bleu,
    mean_pairwise_cosine,
    mean_pairwise_rouge_l,
)
from scenarios.jsonl import DialogueWriter
from scenarios.phrases import pick
from scenarios.records import Dialogue, Turn
from scenarios.types import MoralQuestion

Embed = Callable[[Sequence[str]], np.ndarray]


UNIT = (0.0, 1.0)
"""The range of SaGE scores and of the BLEU / ROUGE-L baselines (intervals are clipped to it)."""


def flow_name(rot_prompt: bool) -> str:
    return "sage-rot" if rot_prompt else "sage"


def sage_dialogue_id(question_id: str, index: int, seed: int, rot_prompt: bool) -> str:
    return f"{question_id}/{flow_name(rot_prompt)}/p{index}/s{seed}"


def run_sage_probe(
    questions: Sequence[MoralQuestion],
    agent: Any,
    writer: DialogueWriter,
    seed: int = 0,
    rot_prompt: bool = False,
    done: set[str] = frozenset(),  # type: ignore[assignment]
    meta: dict[str, Any] | None = None,
) -> int:
    """Ask every paraphrase, then why, in two batched rounds; returns dialogues written."""
    dialogues: list[Dialogue] = []
    for q in questions:
        rng = random.Random(f"{seed}/sage/{q.id}")
        for i, paraphrase in enumerate(q.paraphrases):
            ident = sage_dialogue_id(q.id, i, seed, rot_prompt)
            why = pick("why", rng)
            if ident in done:
                continue
            turns = (
                [Turn("system", system_text(None, [q.rot.text]) or "", {"step": "rot_prompt"})]
                if rot_prompt
                else []
            )
            turns.append(Turn("user", paraphrase, {"step": "question", "question": paraphrase}))
            dialogues.append(
                Dialogue(
                    id=ident,
                    scenario_id=q.id,
                    flow=flow_name(rot_prompt),
                    turns=turns,
                    hidden_rot=q.rot,
                    meta={
                        **(meta or {}),
                        "split": q.split,
                        "paraphrase": i,
                        "why": why,
                        "seed": seed,
                    },
                )
            )
    if not dialogues:
        return 0
    for step, follow in (("answer", "why"), ("explanation", None)):
        replies = agent.respond([d.turns for d in dialogues])
        for d, reply in zip(dialogues, replies, strict=True):
            d.turns.append(Turn("bot", reply, {"step": step}))
            if follow:
                d.turns.append(Turn("user", d.meta["why"], {"step": "why"}))
    for d in dialogues:
        writer.write(d)
    return len(dialogues)


def _by_question(dialogues: Sequence[Dialogue], flow: str) -> dict[str, list[Dialogue]]:
    groups: dict[str, list[Dialogue]] = defaultdict(list)
    for d in dialogues:
        if d.flow == flow:
            groups[d.scenario_id].append(d)
    return {
        q: sorted(ds, key=lambda d: d.meta.get("paraphrase", 0)) for q, ds in sorted(groups.items())
    }


def _bot_text(d: Dialogue, step: str) -> str:
    return next((t.text for t in d.turns if t.role == "bot" and t.meta.get("step") == step), "")


def _graph_texts(
    groups: dict[str, list[Dialogue]],
) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Question ids, answers per paraphrase, and stated RoTs per paraphrase."""
    ids = list(groups)
    answers = [[_bot_text(d, "answer") for d in groups[q]] for q in ids]
    rots = [[strip_because(_bot_text(d, "explanation")) for d in groups[q]] for q in ids]
    return ids, answers, rots


def _scores(
    dialogues: Sequence[Dialogue], flow: str, embed: Embed, variant: str
) -> tuple[list[str], list[list[str]], dict[str, list[float]]] | None:
    groups = _by_question(dialogues, flow)
    if not groups:
        return None
    ids, answers, rots = _graph_texts(groups)
    results = sage_scores(ids, answers, rots, embed, variant=variant)  # type: ignore[arg-type]
    values = {
        kind: [r.value.score for r in results if r.kind == kind] for kind in ("answer", "rot")
    }
    return ids, answers, values


def sage_section(
    dialogues: Sequence[Dialogue], embed: Embed, variant: str = "reference"
) -> dict[str, Any] | None:
    """probes.json's "sage" section, rebuilt from the probe's records (so resume just works)."""
    plain = _scores(dialogues, "sage", embed, variant)
    if plain is None:
        return None
    ids, answers, values = plain
    section: dict[str, Any] = {
        "variant": variant,
        "answer": mean_ci(values["answer"], bounds=UNIT).to_dict(),
        "rot": mean_ci(values["rot"], bounds=UNIT).to_dict(),
        "baselines": {
            "bleu": mean_ci([mean_pairwise_bleu(a) for a in answers], bounds=UNIT).to_dict(),
            "rouge_l": mean_ci([mean_pairwise_rouge_l(a) for a in answers], bounds=UNIT).to_dict(),
            "cosine": mean_ci(
                [mean_pairwise_cosine(a, embed) for a in answers], bounds=(-1.0, 1.0)
            ).to_dict(),
        },
        "histogram": {
            kind: histogram(values[kind], 0.0, 1.0, bins=10) for kind in ("answer", "rot")
        },
        "per_question": {
            q: {"answer": a, "rot": r}
            for q, a, r in zip(ids, values["answer"], values["rot"], strict=True)
        },
    }
    prompted = _scores(dialogues, "sage-rot", embed, variant)
    if prompted is not None:
        section["rot_prompted"] = mean_ci(prompted[2]["rot"], bounds=UNIT).to_dict()
    return section
