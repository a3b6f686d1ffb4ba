"""Train a factored agreement scorer on a pack and measure it on real text (developers' check).

Trains stance and direction (training.factored_scorer), writes the scorer card from every
labelled set of `moralsim scorer eval` plus Moral Stories pairs (validation only: read after
training, never trained on) and `<out>/recipe.json`. Usage:

    python -m training.factored_recipe --out runs/factored-a --moral-stories dev.jsonl \
        [--seed 1] [--dtype bfloat16] [--stance-epochs 1] [--direction-epochs 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import replace
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--moral-stories", type=Path, default=None)
    parser.add_argument("--pack", default="core")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--stance-epochs", type=int, default=None)
    parser.add_argument("--direction-epochs", type=int, default=None)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--frozen-layers", type=int, default=None)
    parser.add_argument("--max-length", type=int, default=None)
    parser.add_argument(
        "--sources", default=None, help="Example sources, e.g. derived,hard,written,bot,factorial."
    )
    args = parser.parse_args(argv)

    from agents.placement import Placement
    from evaluators.scorer_eval import PairSet, evaluate_scorer, merge_card, pack_sets, write_card
    from evaluators.scorers import open_agreement_scorer
    from scenarios.loaders import load_moral_stories
    from scenarios.pack import load_pack
    from training.factored_scorer import factored_recipe, train_factored_scorer

    pack = load_pack(args.pack).pack
    recipe = factored_recipe(
        args.seed, epochs=args.epochs, frozen_layers=args.frozen_layers, max_length=args.max_length
    )
    if args.sources:
        recipe = replace(recipe, sources=tuple(args.sources.split(",")))
    if args.stance_epochs:
        recipe = replace(recipe, stance=replace(recipe.stance, epochs=args.stance_epochs))
    if args.direction_epochs:
        recipe = replace(recipe, direction=replace(recipe.direction, epochs=args.direction_epochs))
    if args.out.exists():
        shutil.rmtree(args.out)
    result = train_factored_scorer(
        pack, args.out, recipe, progress=lambda m: print(m, flush=True), show_bar=False,
        placement=Placement("cpu", args.dtype),
    )  # fmt: skip
    pairs = []
    if args.moral_stories:
        pairs = [PairSet("moral-stories", load_moral_stories(args.moral_stories)[0])]
    figures = evaluate_scorer(open_agreement_scorer(str(args.out)), pack_sets(pack), pairs)
    write_card(args.out, merge_card(None, str(args.out), figures, result.info))
    summary = {
        "recipe": vars(args) | {"out": str(args.out)},
        "seconds": result.seconds,
        "figures": {
            name: {k: v for k, v in f.items() if k != "confusion"} for name, f in figures.items()
        },
    }
    text = json.dumps(summary, indent=2, default=str) + "\n"
    (args.out / "recipe.json").write_text(text, encoding="utf-8")
    for name, f in figures.items():
        print(name, {k: v for k, v in f.items() if k not in ("confusion", "by_phenomenon")})


if __name__ == "__main__":
    main()
