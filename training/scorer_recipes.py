"""Try an agreement-scorer recipe and measure it on real text: the recipe search behind the default.

Trains one recipe on chosen sources of the pack's training examples and prints, after every
epoch, the dev macro-F1 (pack dev + written dev: what the build selects the epoch by) and the
Moral Stories pairwise accuracy (validation only: read, never trained on, never used to pick
the epoch inside a build). At the end every figure of `moralsim scorer eval` is written to
`<out>/recipe.json`. Usage:

    python -m training.scorer_recipes --out runs/scorer-a --moral-stories dev.jsonl \
        --epochs 2 --sources derived,hard,written,bot [--unfreeze] [--balance] [--max-length 128]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def moral_stories_pairwise(
    model: Any, tokenizer: Any, pairs: list[Any], max_length: int, rot_direction: bool = False
) -> float:
    """Pairwise accuracy of the model being trained (no saving, no reloading); its id2label is
    agree, neutral, disagree."""
    from evaluators.agreement import AgreementItem, agreement_score, cross_encoder_probabilities

    def scores(actions: list[str]) -> np.ndarray:
        items = [AgreementItem("", a, p.norm) for a, p in zip(actions, pairs, strict=True)]
        probs = cross_encoder_probabilities(
            model, tokenizer, items, max_length=max_length, rot_direction=rot_direction
        )
        return agreement_score(probs)

    follow = scores([p.follow for p in pairs])
    break_ = scores([p.break_ for p in pairs])
    return float(np.mean(follow > break_))


def _pairs(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in text.split(",") if item)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--moral-stories", type=Path, required=True)
    parser.add_argument("--pack", default="core")
    parser.add_argument("--sources", default="derived,hard,written,bot")
    parser.add_argument(
        "--exclude-kinds",
        default="",
        help="Derived kinds left out of training (e.g. own-rot,own-rot-paraphrase).",
    )
    parser.add_argument(
        "--independent",
        action="store_true",
        help="Leave out the pack's reference answers (the moral bot's SFT targets).",
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--unfreeze", action="store_true")
    parser.add_argument("--balance", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frozen-layers", type=int, default=0)
    parser.add_argument(
        "--base-model", default="minilm-l6", help="Encoder to start from (a stage-1 folder too)."
    )
    parser.add_argument(
        "--repeat", default="", help="Sources seen several times per epoch, e.g. derived=3,hard=3."
    )
    parser.add_argument(
        "--cap",
        default="",
        help="At most N examples of a source (seeded sample), e.g. written=6000.",
    )
    parser.add_argument(
        "--flip",
        default="",
        help="RoT-reversed twins added per source (counterfactual pairs), e.g. written=1500.",
    )
    parser.add_argument(
        "--rot-direction",
        action="store_true",
        help="Read answers against recommending-form RoTs (agree/disagree swapped back).",
    )
    args = parser.parse_args(argv)

    from evaluators.agreement import AgreementScorer
    from evaluators.scorer_eval import PairSet, evaluate_scorer, merge_card, pack_sets, write_card
    from scenarios.loaders import load_moral_stories
    from scenarios.pack import load_pack
    from training.scorer import (
        REFERENCE_ANSWER_KINDS,
        ScorerTrainingConfig,
        train_agreement_classifier,
        trainable,
    )

    pack = load_pack(args.pack).pack
    sources = set(args.sources.split(","))

    excluded = set(filter(None, args.exclude_kinds.split(",")))
    if args.independent:
        excluded |= set(REFERENCE_ANSWER_KINDS)
    train = [
        e
        for e in trainable(pack.agreement_in("train"))
        if e.source in sources and e.kind not in excluded
    ]
    dev = [e for e in trainable(pack.agreement_in("dev")) if e.source in sources]
    pairs = load_moral_stories(args.moral_stories)[0]
    cfg = ScorerTrainingConfig(
        epochs=args.epochs,
        max_length=args.max_length,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        freeze_embeddings=not args.unfreeze,
        class_balance=args.balance,
        seed=args.seed,
        frozen_layers=args.frozen_layers,
        source_repeats=_pairs(args.repeat),
        source_caps=_pairs(args.cap),
        rot_flips=_pairs(args.flip),
        base_model=args.base_model,
        rot_direction=args.rot_direction,
    )
    result = train_agreement_classifier(
        train,
        dev,
        None,
        args.out,
        cfg,
        progress=lambda m: print(m, flush=True),
        show_bar=False,
        on_epoch=lambda model, tok, _: {
            "moral_stories_pairwise": moral_stories_pairwise(
                model, tok, pairs, args.max_length, args.rot_direction
            )
        },
    )
    scorer = AgreementScorer(str(args.out))
    figures = evaluate_scorer(scorer, pack_sets(pack), [PairSet("moral-stories", pairs)])
    metrics = json.loads((args.out / "metrics.json").read_text(encoding="utf-8"))
    write_card(args.out, merge_card(None, str(args.out), figures, metrics))
    summary = {
        "recipe": vars(args) | {"out": str(args.out), "moral_stories": str(args.moral_stories)},
        "train_examples": len(train),
        "seconds": round(result.seconds),
        "best_epoch": result.best_epoch,
        "epochs": metrics["epochs"],
        "figures": {
            name: {k: v for k, v in f.items() if k not in ("confusion", "by_phenomenon")}
            for name, f in figures.items()
        },
    }
    (args.out / "recipe.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary["figures"], indent=1))


if __name__ == "__main__":
    main()
