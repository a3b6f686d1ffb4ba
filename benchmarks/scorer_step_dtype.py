"""Seconds per agreement-scorer training step: float32 vs bfloat16 autocast, side by side.

Both sides are the project's scorer recipe and step (training.scorer.train_step: the base
encoder with a new 3-way head, its embeddings and lowest layers frozen as the recipe says,
AdamW, gradient clipping) on the same batches of the core pack's training examples, encoded the
same way. Two copies of the model, one per side, start from the same seed; the sides alternate
step by step, so drift in machine load hits both. After `--warmup` untimed steps of each, every
step is timed (forward, loss, backward, optimiser). Printed: both means, their spread, and
bf16/fp32; the bf16 side's loss after the last step next to fp32's, as a sanity check that it
still learns. Whether bfloat16 is faster on a CPU depends on its instructions (AVX512-BF16,
AMX); measure it on yours.

    python benchmarks/scorer_step_dtype.py [--steps 20] [--warmup 3] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any


def _step(model: Any, optimizer: Any, inputs: Any, labels: Any, dtype: str) -> tuple[float, float]:
    from training.scorer import train_step

    start = time.perf_counter()
    loss = train_step(model, optimizer, inputs, labels, dtype)
    return time.perf_counter() - start, float(loss.item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    import torch

    from scenarios.pack import load_pack
    from training.scorer import (
        AGREEMENT_LABELS,
        DEFAULT_SCORER_RECIPE,
        _encode,
        _load_classifier,
        _optimizer,
    )

    cfg = DEFAULT_SCORER_RECIPE
    examples = load_pack("core").pack.agreement_in("train")
    random.Random(0).shuffle(examples)
    n = args.warmup + args.steps
    batches = [examples[i * args.batch_size : (i + 1) * args.batch_size] for i in range(n)]
    index = {label: i for i, label in enumerate(AGREEMENT_LABELS)}
    sides = {}
    for dtype in ("float32", "bfloat16"):
        model, tokenizer = _load_classifier(cfg)
        model.train()
        optimizer, _ = _optimizer(model, cfg, n)
        sides[dtype] = (model, optimizer)
    times: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    losses: dict[str, float] = {}
    for i, batch in enumerate(batches):
        inputs = _encode(tokenizer, batch, cfg.max_length)
        labels = torch.tensor([index[e.label] for e in batch])
        order = ("float32", "bfloat16") if i % 2 == 0 else ("bfloat16", "float32")
        for dtype in order:
            model, optimizer = sides[dtype]
            seconds, losses[dtype] = _step(model, optimizer, inputs, labels, dtype)
            if i >= args.warmup:
                times[dtype].append(seconds)
    for dtype, values in times.items():
        print(
            f"{dtype:9s} {statistics.mean(values):.3f} s/step "
            f"(sd {statistics.stdev(values):.3f}, n {len(values)}), last loss {losses[dtype]:.3f}"
        )
    ratio = statistics.mean(times["bfloat16"]) / statistics.mean(times["float32"])
    print(f"bfloat16 / float32 time per step: {ratio:.2f}")


if __name__ == "__main__":
    main()
