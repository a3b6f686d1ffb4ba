"""Does a mean-pooled readout of SmolLM2 carry RoT direction better than the last token?

One forward pass per probe prompt gives both: the last token's state (what the shipped probe
reads) and the masked mean over every prompt token, at the probe's layers 15/20/25/30, in
bfloat16 autocast. Heads are fitted on the same seeded sample of the probe recipe's train
examples (C from 0.003 / 0.01 / 0.03) and read on the pack's direction dev split and on
signs-dev's RoT directions. About 8 minutes on 2 cores for 6,000 training examples.

    PYTHONPATH=. python docs/experiments/2026-12-06-probe-pooling/pooling.py \
        --train 6000 --cache /tmp/pool_states.npz --out figures.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-05-direction-pairs"))

from direction_pairs import figures, sign_dev_directions  # noqa: E402

from evaluators.lm_probe import PromptStates, probe_prompt  # noqa: E402
from scenarios.pack import load_pack  # noqa: E402
from training.lm_probe import DEFAULT_PROBE_RECIPE, direction_split, fit_head, probe_examples  # noqa: E402

LAYERS = DEFAULT_PROBE_RECIPE.layers


def read(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(last-token states, mean-pooled states) of each text: the product's reader with
    `last+mean` pooling, whose features are the two side by side."""
    states = PromptStates("smollm2-135m-instruct", LAYERS, pooling="last+mean")
    x = states(texts, progress=lambda done, total: done % 640 == 0 and print(f"{done}/{total}"))
    half = x.shape[1] // 2
    return x[:, :half], x[:, half:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=6000, help="0: every train example")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cs", default="0.003,0.01,0.03", help="the C values to fit")
    parser.add_argument("--features", default="last,mean,last+mean")
    parser.add_argument("--heads", type=Path, help="save each head here as FEATURES_C.npz")
    args = parser.parse_args()
    pack = load_pack("core").pack
    sample = args.train or None  # 0: every train example
    train = probe_examples(pack, replace(DEFAULT_PROBE_RECIPE, examples=sample))
    sets = {"pack dev": direction_split(pack)[1], "signs-dev": sign_dev_directions(pack)}
    all_ex = train + [e for ex in sets.values() for e in ex]
    texts = [probe_prompt(rot, act) for act, rot, _ in all_ex]
    if args.cache.is_file():
        with np.load(args.cache) as cached:
            last, mean = cached["last"], cached["mean"]
    else:
        last, mean = read(texts)
        np.savez(args.cache, last=last, mean=mean)
    n = len(train)
    feats = {"last": last, "mean": mean, "last+mean": np.hstack([last, mean])}
    y = [e[2] for e in train]
    out = {}
    for name in args.features.split(","):
        x = feats[name]
        for c in map(float, args.cs.split(",")):
            head = fit_head(x[:n], y, c)
            if args.heads:
                args.heads.mkdir(parents=True, exist_ok=True)
                head.save(args.heads / f"{name}_{c}.npz")
            row, k = {}, n
            for sname, ex in sets.items():
                row[sname] = figures(head.probabilities(x[k : k + len(ex)]), ex)
                k += len(ex)
            out[f"{name} C={c}"] = row
            print(name, c, json.dumps(row), flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
