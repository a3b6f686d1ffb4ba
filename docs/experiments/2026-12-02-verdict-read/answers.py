"""First answers of a bot to the core pack's questions of one split, read by a judge.

Greedy, 60 new tokens, as a run's first turn; the judge gets the pack's stated directions, as
in a run. Writes answers_NAME_SPLIT.jsonl here and prints the judge's classes overall and by
the RoT's direction (for / against the asked act).

    python answers.py NAME ADAPTER|- SPLIT JUDGE
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from agents.base import GenerationSettings
from agents.hf import TransformersAgent
from evaluators.agreement import AgreementItem
from evaluators.scorers import open_agreement_scorer
from scenarios.pack import load_pack
from scenarios.records import Turn

CLASSES = ("agree", "neutral", "disagree")


def main(name: str, adapter: str | None, split: str, judge_spec: str) -> None:
    pack = load_pack("core").pack
    directions = pack.direction_map()
    questions = pack.questions_in(split)
    agent = TransformersAgent("smollm2-135m-instruct", adapter=adapter)
    prompts = [[Turn("user", q.question)] for q in questions]
    answers = agent.respond(prompts, GenerationSettings(max_new_tokens=60))
    judge = open_agreement_scorer(judge_spec)
    judge.use_directions(directions)
    items = [
        AgreementItem(q.question, a, q.rot.text) for q, a in zip(questions, answers, strict=True)
    ]
    rows = []
    for q, answer, p in zip(questions, answers, judge.probabilities(items), strict=True):
        rows.append(
            {
                "bot": name,
                "qid": q.id,
                "question": q.question,
                "rot": q.rot.text,
                "direction": directions.get((q.question, q.rot.text)),
                "answer": answer,
                "as": float(p[0] - p[2]),
                "cls": CLASSES[int(p.argmax())],
            }
        )
    out = Path(__file__).parent / f"answers_{name}_{split}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(name, split, "all", dict(Counter(r["cls"] for r in rows)))
    for side in ("for", "against"):
        print("  RoT", side, dict(Counter(r["cls"] for r in rows if r["direction"] == side)))


if __name__ == "__main__":
    name, adapter, split, judge = sys.argv[1:5]
    main(name, None if adapter == "-" else adapter, split, judge)
