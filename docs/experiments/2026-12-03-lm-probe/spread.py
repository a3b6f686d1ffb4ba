"""How much the probe's Moral Stories figure moves with its training pairs.

The features of every train pair are computed once. Then the head (C fixed at the value that
cross-validation chose on every pair, 0.003) is refitted on five random 80% subsets. The
spread is that of the data, not of a training seed: the head is a convex fit.

    python docs/experiments/2026-12-03-lm-probe/spread.py ../shared/data/moral_stories/dev.jsonl
"""

from __future__ import annotations

import importlib.util
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

from agents.models import prepare_model
from scenarios.pack import load_pack

LAYERS = [15, 20, 25, 30]
C = 0.003


def _probe_module():
    spec = importlib.util.spec_from_file_location("probe", Path(__file__).with_name("probe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    from transformers import AutoModelForCausalLM, AutoTokenizer

    probe = _probe_module()
    folder = prepare_model("smollm2-135m-instruct").path
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    pack = load_pack(probe.CORE_PACK).pack
    train = [e for e in pack.agreement_in("train") if e.source == "pairs" and e.label != "neutral"]
    stories = probe.moral_stories_pairs(Path(sys.argv[1]))

    def states(rows: list[tuple[str, str]]) -> np.ndarray:
        return probe.last_token_states(
            model, tokenizer, [probe.prompt(r, a) for r, a in rows], LAYERS
        )

    start = time.perf_counter()
    x = states([(e.rot, e.answer) for e in train])
    y = np.array([e.label == "agree" for e in train])
    follows = states([(n, m) for n, m, _ in stories])
    breaks = states([(n, i) for n, _, i in stories])
    print(f"features: {time.perf_counter() - start:.0f} s", flush=True)
    for seed in range(5):
        subset = list(range(len(train)))
        random.Random(seed).shuffle(subset)
        subset = subset[: int(0.8 * len(subset))]
        scaler = StandardScaler().fit(x[subset])
        head = LogisticRegression(C=C, max_iter=5000).fit(scaler.transform(x[subset]), y[subset])
        f = head.decision_function(scaler.transform(follows))
        b = head.decision_function(scaler.transform(breaks))
        print(f"subset {seed}: {len(subset)} pairs, Moral Stories pairwise {np.mean(f > b):.3f}")


if __name__ == "__main__":
    main()
