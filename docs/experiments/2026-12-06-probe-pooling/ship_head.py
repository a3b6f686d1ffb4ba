"""Write the last+mean probe head that ships in training/probe_head/, from pooling.py's states.

pooling.py --train 0 reads every train direction example of the core pack, then the pack's
direction dev split and signs-dev, in one call of its reader, and caches the last-token and
mean states. This script fits the default recipe's head (evaluators.lm_probe, `last+mean`)
on the train rows with the product's `write_probe`, measures how far the product's reader
(which batches the dev pairs apart from the train pairs) moves a dev pair's probabilities,
and writes the check pairs with the product's reader.

    PYTHONPATH=. python docs/experiments/2026-12-06-probe-pooling/ship_head.py \\
        --cache /tmp/pool_full.npz --read-seconds 1900
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from evaluators.lm_probe import HEAD_FILE, LinearHead, probe_prompt
from scenarios.pack import load_pack
from training.lm_probe import (
    DEFAULT_PROBE_RECIPE,
    SHIPPED_PROBE,
    direction_split,
    probe_examples,
    recipe_states,
    write_check,
    write_probe,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--read-seconds", type=float, required=True)
    args = parser.parse_args()
    recipe = DEFAULT_PROBE_RECIPE
    if recipe.pooling != "last+mean":
        raise SystemExit("the default probe recipe does not pool last+mean")
    pack = load_pack("core").pack
    train = probe_examples(pack, recipe)
    dev = direction_split(pack)[1]
    with np.load(args.cache) as cached:
        x = np.hstack([cached["last"], cached["mean"]])
    if len(x) < len(train) + len(dev):
        raise SystemExit(f"{args.cache}: {len(x)} rows, not pooling.py --train 0's")
    info = write_probe(SHIPPED_PROBE, train, x[: len(train)], recipe, args.read_seconds)
    print(f"fitted on {len(train)} examples in {info['seconds']['fit']:.0f} s", flush=True)

    head = LinearHead.load(SHIPPED_PROBE / HEAD_FILE)
    states = recipe_states(recipe)
    product = states([probe_prompt(rot, act) for act, rot, _ in dev])
    cached_dev = x[len(train) : len(train) + len(dev)]
    moved = np.abs(head.probabilities(product) - head.probabilities(cached_dev))
    difference = {
        "max": round(float(moved.max()), 4),
        "p99": round(float(np.quantile(moved.max(axis=1), 0.99)), 4),
    }
    print(f"the product's reader moves a dev probability by {json.dumps(difference)}")
    write_check(SHIPPED_PROBE, pack, states)
    print(f"wrote {SHIPPED_PROBE}")


if __name__ == "__main__":
    main()
