"""Does a one-hidden-layer head read RoT direction from SmolLM2's states better than the
shipped linear head? (rule.md, fixed before any fit.)

Reads the last + mean states cached by ../2026-12-06-probe-pooling/pooling.py --train 0
(every train direction example, then the pack's direction dev split, then signs-dev), fits
the grid of rule.md on the train rows with torch, chooses the epoch by pack dev macro-F1 and
prints pack dev and signs-dev figures per setting and seed. About a minute per fit on 2 cores.

    PYTHONPATH=. python docs/experiments/2026-12-06-mlp-head/mlp_head.py \
        --cache /tmp/pool_full.npz --out figures.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-05-direction-pairs"))

from direction_pairs import figures, sign_dev_directions  # noqa: E402

from evaluators.agreement import AGREEMENT_LABELS  # noqa: E402
from scenarios.pack import load_pack  # noqa: E402
from training.lm_probe import DEFAULT_PROBE_RECIPE, direction_split, probe_examples  # noqa: E402


def fit_mlp(
    x: np.ndarray,
    y: np.ndarray,
    x_dev: np.ndarray,
    *,
    weight_decay: float,
    seed: int,
    hidden: int = 256,
    dropout: float = 0.3,
    epochs: int = 20,
) -> list[np.ndarray]:
    """Train one head; the dev rows' probabilities after each epoch."""
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Dropout(dropout),
        torch.nn.Linear(x.shape[1], hidden),
        torch.nn.ReLU(),
        torch.nn.Dropout(dropout),
        torch.nn.Linear(hidden, len(AGREEMENT_LABELS)),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=weight_decay)
    xt, yt, xd = (torch.tensor(a) for a in (x, y, x_dev))
    g = torch.Generator().manual_seed(seed)
    per_epoch = []
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(xt), generator=g).split(256):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            per_epoch.append(torch.softmax(model(xd), dim=1).numpy())
    return per_epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pack = load_pack("core").pack
    train = probe_examples(pack, DEFAULT_PROBE_RECIPE)
    sets = {"pack dev": direction_split(pack)[1], "signs-dev": sign_dev_directions(pack)}
    with np.load(args.cache) as cached:
        x = np.hstack([cached["last"], cached["mean"]])
    n = len(train)
    mean, scale = x[:n].mean(axis=0), x[:n].std(axis=0)
    scale[scale == 0] = 1.0
    z = ((x - mean) / scale).astype(np.float32)
    y = np.array([AGREEMENT_LABELS.index(e[2]) for e in train])
    n_dev = len(sets["pack dev"])
    out = {}
    for wd in (0.01, 0.1):
        for seed in (0, 1):
            per_epoch = fit_mlp(z[:n], y, z[n:], weight_decay=wd, seed=seed)
            dev_f1 = [figures(p[:n_dev], sets["pack dev"])["macro_f1"] for p in per_epoch]
            best = int(np.argmax(dev_f1))
            p = per_epoch[best]
            row = {
                "epoch": best + 1,
                "pack dev": figures(p[:n_dev], sets["pack dev"]),
                "signs-dev": figures(p[n_dev:], sets["signs-dev"]),
                "pack dev macro-F1 by epoch": dev_f1,
            }
            out[f"wd={wd} seed={seed}"] = row
            shown = {k: row[k] for k in ("epoch", "pack dev", "signs-dev")}
            print(f"wd={wd} seed={seed}", json.dumps(shown), flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
