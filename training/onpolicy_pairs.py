"""On-policy preference pairs: the bot's own sampled answers, ranked by an agreement scorer.

The pack's pairs (training.dpo_pairs) teach a preference between two answers the pack wrote;
the bot in training writes differently. MoralDial names the metric-guided alternative: sample
several answers of the bot itself to each train question and prefer the one the judge reads as
following the hidden RoT over the one it reads as breaking it. This is only as good as the
judge, so it is built for a judge whose reading of real bot answers was checked against careful
readers (README, "Does training help?"). A pair is kept only when the chosen answer agrees
(AS > 0), the rejected one does not, and their scores differ by at least `min_gap`: two answers
the judge cannot tell apart teach nothing. Usage (then `moralsim train dpo --set
extra_pairs=FILE`):

    python -m training.onpolicy_pairs --adapter models/moral-smollm2 --samples 4 \
        --out runs/onpolicy/pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.dpo_pairs import PreferencePair

STEP = "answer-onpolicy"


@dataclass(frozen=True)
class ScoredAnswer:
    text: str
    agreement: float
    """AS = P(agree) - P(disagree) against the question's hidden RoT."""


def ranked_pair(
    answers: Sequence[ScoredAnswer], min_gap: float
) -> tuple[ScoredAnswer, ScoredAnswer] | None:
    """(chosen, rejected): the best- and the worst-read answer, when the judge tells them apart
    (see the module docstring); None otherwise."""
    distinct = {a.text.strip(): a for a in answers if a.text.strip()}
    if len(distinct) < 2:
        return None
    ranked = sorted(distinct.values(), key=lambda a: a.agreement)
    worst, best = ranked[0], ranked[-1]
    if best.agreement <= 0 or worst.agreement > 0 or best.agreement - worst.agreement < min_gap:
        return None
    return best, worst


def pair_row(
    question_id: str, question: str, chosen: ScoredAnswer, rejected: ScoredAnswer
) -> dict[str, Any]:
    """A TRL preference row plus the judge's reading of both replies (for a reader's audit)."""
    pair = PreferencePair((("user", question),), chosen.text, rejected.text, STEP, question_id)
    return pair.to_row() | {"chosen_as": chosen.agreement, "rejected_as": rejected.agreement}


def read_pairs(path: Path) -> list[PreferencePair]:
    """Pairs written by this module; bad rows are one error naming the file, line and field."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            prompt = tuple((m["role"], m["content"]) for m in row["prompt"])
            pair = PreferencePair(
                prompt, row["chosen"][0]["content"], row["rejected"][0]["content"],
                row["step"], row["question_id"],
            )  # fmt: skip
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            field = exc.args[0] if isinstance(exc, KeyError) else type(exc).__name__
            raise ValueError(f"{path}: line {number}: bad preference row ({field})") from None
        pairs.append(pair)
    return pairs


def sample_pairs(
    agent: Any, scorer: Any, questions: Sequence[Any], samples: int, settings: Any, min_gap: float
) -> tuple[list[dict[str, Any]], int]:
    """Rows of the kept pairs and the number of questions asked: each question asked `samples`
    times (sampling seeds 0..samples-1), every answer scored against its RoT."""
    from dataclasses import replace

    from evaluators.agreement import AgreementItem
    from scenarios.records import Turn

    prompts = [[Turn("user", q.question)] for q in questions]
    answers = [
        agent.respond(prompts, replace(settings, do_sample=True, seed=seed))
        for seed in range(samples)
    ]
    rows = []
    for i, q in enumerate(questions):
        texts = [answers[s][i] for s in range(samples)]
        items = [AgreementItem(q.question, t, q.rot.text) for t in texts]
        values = scorer.score(items)
        scored = [ScoredAnswer(t, float(v)) for t, v in zip(texts, values, strict=True)]
        ranked = ranked_pair(scored, min_gap)
        if ranked is not None:
            rows.append(pair_row(q.id, q.question, *ranked))
    return rows, len(questions)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bot", default="smollm2-135m-instruct", help="Base model.")
    parser.add_argument("--adapter", default=None, help="LoRA adapter of the bot (e.g. SFT).")
    parser.add_argument("--pack", default="core")
    parser.add_argument("--scorer", default=None, help="Judge (default: the default scorer).")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.9)
    parser.add_argument("--max-new-tokens", type=int, default=60)
    parser.add_argument("--min-gap", type=float, default=0.5)
    parser.add_argument("--limit", type=int, default=None, help="First N train questions only.")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.samples < 2:
        parser.error("--samples must be at least 2 (a pair needs two answers)")

    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from evaluators.scorers import DEFAULT_SCORER, open_agreement_scorer
    from scenarios.pack import load_pack

    pack = load_pack(args.pack).pack
    questions = pack.questions_in("train")[: args.limit]
    scorer = open_agreement_scorer(args.scorer or DEFAULT_SCORER)
    if hasattr(scorer, "use_directions"):
        scorer.use_directions(pack.direction_map())
    agent = TransformersAgent(args.bot, adapter=args.adapter)
    settings = GenerationSettings(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    rows, asked = sample_pairs(agent, scorer, questions, args.samples, settings, args.min_gap)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(rows)} pairs from {asked} train questions ({args.samples} samples each)")


if __name__ == "__main__":
    main()
