"""Fit the probe head that ships in training/probe_head/, on every train direction example.

The probe scorer's first-use build read 9,000 of the core pack's 26,491 train direction
examples with SmolLM2-135M (684 s of a 989 s build). Reading is the whole cost and it is the
same on every machine, so the head is fitted once here, on all of them, and shipped; a first
use only checks that its LM reproduces the head's check pairs (training.lm_probe). This
script:

1. reads the states of every train and dev direction example (cached on disk by text, the
   2026-12-04-probe-direction reader);
2. fits a head at each C of a grid on all of them, and one on the old 9,000-example sample,
   and prints each one's direction dev macro-F1; the C with the best dev macro-F1 is kept
   (Moral Stories is not read here);
3. measures how far the product's reader (evaluators.lm_probe.PromptStates, which batches
   differently) moves a dev pair's probabilities, which sets the check tolerance;
4. with --write, writes the head, its probe.json and its check pairs to training/probe_head.

    python docs/experiments/2026-12-04-shipped-probe/fit_shipped_head.py --cache /tmp/pd --write
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-04-probe-direction"))

from probe_direction import CORE_PACK, ProbeFeatures, prompt  # noqa: E402

from evaluators.agreement_validity import confusion_matrix, macro_f1  # noqa: E402
from evaluators.lm_probe import PromptStates  # noqa: E402
from scenarios.pack import load_pack  # noqa: E402
from training.lm_probe import (  # noqa: E402
    DEFAULT_PROBE_RECIPE,
    SHIPPED_PROBE,
    direction_split,
    fit_head,
    probe_examples,
    write_check,
    write_probe,
)

C_GRID = (0.01, 0.03, 0.1)
LABELS = ("agree", "neutral", "disagree")


def dev_macro_f1(head, x: np.ndarray, labels: list[str]) -> float:
    predicted = [LABELS[k] for k in head.probabilities(x).argmax(axis=1)]
    return macro_f1(confusion_matrix(labels, predicted))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/probe-direction"))
    parser.add_argument("--write", action="store_true", help="write training/probe_head")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument(
        "--read-seconds", type=float, help="the train states' reading time, when cached earlier"
    )
    args = parser.parse_args()
    pack = load_pack(CORE_PACK).pack
    recipe = DEFAULT_PROBE_RECIPE
    train = probe_examples(pack, recipe)
    _, dev = direction_split(pack)
    features = ProbeFeatures(recipe.model, list(recipe.layers), args.cache)
    start = time.perf_counter()
    x_train = features([prompt(rot, act) for act, rot, _ in train])
    read_seconds = args.read_seconds or time.perf_counter() - start
    x_dev = features([prompt(rot, act) for act, rot, _ in dev])
    y_train = [label for _, _, label in train]
    y_dev = [label for _, _, label in dev]
    figures: dict = {"train": len(train), "dev": len(dev), "dev_macro_f1": {}}

    sample = probe_examples(pack, replace(recipe, examples=9000))
    assert sample == train[:9000]  # the same seeded shuffle, so the old sample is a prefix
    old = fit_head(x_train[:9000], y_train[:9000], 0.03)
    figures["dev_macro_f1"]["9000 examples, C=0.03"] = dev_macro_f1(old, x_dev, y_dev)
    heads = {}
    for c in C_GRID:
        heads[c] = fit_head(x_train, y_train, c)
        figures["dev_macro_f1"][f"all examples, C={c}"] = dev_macro_f1(heads[c], x_dev, y_dev)
    for name, f1 in figures["dev_macro_f1"].items():
        print(f"{name}: direction dev macro-F1 {f1:.3f}", flush=True)
    chosen = max(C_GRID, key=lambda c: figures["dev_macro_f1"][f"all examples, C={c}"])
    figures["chosen_c"] = chosen
    print(f"chosen C = {chosen}", flush=True)

    states = PromptStates(recipe.model, recipe.layers)
    product = states([prompt(rot, act) for act, rot, _ in dev])
    moved = np.abs(heads[chosen].probabilities(product) - heads[chosen].probabilities(x_dev))
    figures["reader_difference"] = {
        "max": float(moved.max()),
        "p99": float(np.quantile(moved.max(axis=1), 0.99)),
    }
    print(f"the product's reader moves a dev probability by at most {moved.max():.4f}")
    if args.write:
        if chosen != recipe.c:
            raise SystemExit(f"set DEFAULT_PROBE_RECIPE.c to {chosen} first, then --write")
        write_probe(SHIPPED_PROBE, train, x_train, recipe, read_seconds)
        write_check(SHIPPED_PROBE, pack, states)
        print(f"wrote {SHIPPED_PROBE}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
