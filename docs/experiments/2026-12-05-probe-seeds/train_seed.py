"""Train `agreement-minilm`'s recipe with another seed, on the same data and exactly as its
builder trains it (training.scorer.build_default_agreement_scorer), into a folder.

    python docs/experiments/2026-12-05-probe-seeds/train_seed.py SEED OUT
"""

import sys
from dataclasses import replace
from pathlib import Path

from scenarios.pack import load_pack
from scenarios.packs import PACKS_DIR
from training.scorer import DEFAULT_SCORER_RECIPE, recipe_examples, train_agreement_classifier


def main() -> None:
    seed, out = int(sys.argv[1]), Path(sys.argv[2])
    pack = load_pack(PACKS_DIR / "core").pack
    recipe = replace(DEFAULT_SCORER_RECIPE, seed=seed)
    train_agreement_classifier(
        recipe_examples(pack, recipe.sources, "train"),
        recipe_examples(pack, recipe.sources, "dev"),
        [e for e in pack.agreement_in("test") if e.source in ("derived", "hard")],
        out, recipe, progress=print, show_bar=False,
    )  # fmt: skip


if __name__ == "__main__":
    main()
