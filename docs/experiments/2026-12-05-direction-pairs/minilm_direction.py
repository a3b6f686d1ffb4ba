"""Second look: can a fine-tuned reader learn the direction pairs the probe cannot? (2026-12-05)

Trains the factored scorer's MiniLM direction half (training.factored_scorer) twice, without
and with the `directions` source, one pass each in bfloat16 (the fastest step on this CPU; the
factored recipe's two float32 passes would take about 20 minutes a run), and reads, as
direction.py's heads were read: direction dev macro-F1 on the pack's dev examples, for/against
accuracy on the pairs' dev split and on signs-dev's RoTs (its writers' directions).

    python docs/experiments/2026-12-05-direction-pairs/minilm_direction.py --out /tmp/md
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.placement import Placement
from evaluators.agreement import AgreementItem, AgreementScorer
from scenarios.pack import load_pack
from training.factored_data import pair_examples, with_explanation_directions
from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits, train_factored_scorer

HERE = Path(__file__).resolve().parent


def main() -> None:
    import sys

    sys.path.insert(0, str(HERE))
    from direction_pairs import figures, sign_dev_directions

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pack = load_pack("core").pack
    base = replace(
        DEFAULT_FACTORED_RECIPE, direction=replace(DEFAULT_FACTORED_RECIPE.direction, epochs=1)
    )
    recipes = {"base": base, "pairs": replace(base, sources=(*base.sources, "directions"))}
    labelled = with_explanation_directions(pack.questions, pack.direction_map())
    dev = factored_splits(pack, base, labelled)["direction"][1]
    sets = {
        "pack dev": [(e.answer, e.rot, e.label) for e in dev],
        "pairs dev": [
            (e.answer, e.rot, e.label) for e in pair_examples(pack.direction_pairs_in("dev"))
        ],
        "signs-dev": sign_dev_directions(pack),
    }
    out: dict = {}
    for name, recipe in recipes.items():
        folder = args.out / name
        result = train_factored_scorer(
            pack, folder, recipe, halves=("direction",), show_bar=False,
            placement=Placement("cpu", "bfloat16"), progress=lambda m: print(m, flush=True),
        )  # fmt: skip
        reader = AgreementScorer(str(folder / "direction"))
        out[name] = {"seconds": result.seconds["direction"]}
        for s, ex in sets.items():
            p = np.asarray(reader.probabilities([AgreementItem("", a, r) for a, r, _ in ex]))
            out[name][s] = figures(p, ex)
        print(name, json.dumps(out[name]), flush=True)
    (HERE / "minilm_direction.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
