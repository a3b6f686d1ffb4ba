"""Collect a bot's replies to a pack's train questions, to be labelled as scorer training data.

The agreement scorer must see the text it will score at run time: a small bot's answers,
explanations, revisions after push-back and answers to related questions, not only polished
reference answers. For each question of the chosen split this asks, with greedy decoding:

- the question and `paraphrases` of its paraphrases (step `answer`);
- "why?" after the first answer (step `explanation`);
- a push-back with the question's RoT after the first answer (step `revision`);
- the related question (step `new_answer`).

Each reply is written twice, once against the question's own RoT and once against the nearest
*other* RoT of the split (MiniLM cosine), so that a labeller decides stance against a rule that
is close in topic but not the same. Labels are added later, by people; this module only
collects. Usage:

    python -m training.bot_replies --out data/bot_replies.jsonl [--model M] [--adapter A]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

from scenarios.phrases import pick, pushback
from scenarios.records import Turn
from scenarios.types import MoralQuestion


@dataclass(frozen=True)
class ReplyRequest:
    question: MoralQuestion
    step: str
    history: list[Turn]
    asked: str


def first_round(questions: list[MoralQuestion], paraphrases: int) -> list[ReplyRequest]:
    out = []
    for q in questions:
        out.append(ReplyRequest(q, "answer", [Turn("user", q.question)], q.question))
        for text in q.paraphrases[:paraphrases]:
            out.append(ReplyRequest(q, "answer", [Turn("user", text)], text))
        out.append(
            ReplyRequest(q, "new_answer", [Turn("user", q.related_question)], q.related_question)
        )
    return out


def second_round(
    firsts: dict[str, str], questions: list[MoralQuestion], rng: random.Random
) -> list[ReplyRequest]:
    out = []
    for q in questions:
        opening = [Turn("user", q.question), Turn("bot", firsts[q.id])]
        out.append(
            ReplyRequest(q, "explanation", [*opening, Turn("user", pick("why", rng))], q.question)
        )
        out.append(
            ReplyRequest(
                q, "revision", [*opening, Turn("user", pushback(q.rot.text, rng))], q.question
            )
        )
    return out


def nearest_other_rots(questions: list[MoralQuestion], encoder: str) -> dict[str, str]:
    """For each question, the most similar RoT of another question (a near but different rule)."""
    import numpy as np

    from agents.models import load_sentence_encoder
    from evaluators.stack import encode_normalized

    rots = [q.rot.text for q in questions]
    vectors = encode_normalized(load_sentence_encoder(encoder), rots)
    sims = np.asarray(vectors) @ np.asarray(vectors).T
    out = {}
    for i, q in enumerate(questions):
        order = np.argsort(-sims[i])
        j = next(int(j) for j in order if rots[int(j)] != rots[i])
        out[q.id] = rots[j]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pack", default="core")
    parser.add_argument("--split", default="train")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--adapter", default=None)
    parser.add_argument("--paraphrases", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=60)
    parser.add_argument("--limit", type=int, default=0, help="First N questions only (0: all).")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from scenarios.pack import load_pack

    questions = load_pack(args.pack).pack.questions_in(args.split)
    if args.limit:
        questions = questions[: args.limit]
    near = nearest_other_rots(questions, "minilm-l6")
    agent = TransformersAgent(
        args.model,
        adapter=args.adapter,
        batch_size=32,
        generation=GenerationSettings(max_new_tokens=args.max_new_tokens),
    )
    rng = random.Random(args.seed)
    bot = args.model + (f"+{Path(args.adapter).name}" if args.adapter else "")

    def run(requests: list[ReplyRequest]) -> list[str]:
        print(f"generating {len(requests)} replies", flush=True)
        return agent.respond([r.history for r in requests])

    round1 = first_round(questions, args.paraphrases)
    replies1 = run(round1)
    firsts = {
        r.question.id: reply
        for r, reply in zip(round1, replies1, strict=True)
        if r.step == "answer" and r.asked == r.question.question
    }
    round2 = second_round(firsts, questions, rng)
    replies2 = run(round2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with args.out.open("w", encoding="utf-8") as fh:
        for r, reply in zip([*round1, *round2], [*replies1, *replies2], strict=True):
            context = [{"role": t.role, "text": t.text} for t in r.history[:-1]]
            for which, rot in (("own", r.question.rot.text), ("near", near[r.question.id])):
                n += 1
                row = {
                    "id": f"bot-{n:05d}",
                    "question_id": r.question.id,
                    "step": r.step,
                    "bot": bot,
                    "question": r.asked,
                    "context": context,
                    "user_turn": r.history[-1].text,
                    "answer": reply,
                    "rot": rot,
                    "rot_kind": which,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {n} rows to {args.out}", flush=True)


if __name__ == "__main__":
    main()
