"""Seconds per optimisation step: the project's SFT trainer vs a bare PEFT LoRA loop.

The project side is `training.sft.build_trainer` (TRL's SFTTrainer with the project's config,
data `pack:core`, completion-only loss) on an SFTRunConfig for the given model, device, dtype,
batch size and max_length; no evaluation, no checkpoints. The bare side is the same base model
(a second copy, same placement), the same `lora_config(config)`, AdamW at the same learning
rate and weight decay, gradient clipping at the trainer's default 1.0, autocast in the config's
dtype (as the trainer's mixed precision does), and the same tokenised batches, taken from the
trainer's own train dataloader. The two sides interleave: a callback pauses the trainer after
every block of `--block` steps and runs as many bare steps, so drift in machine load hits both.
After `--warmup` untimed steps of each side, a trainer step is timed from the end of the
previous one to the end of its own (data loading, loss, metrics and logging included); on CUDA
after `torch.cuda.synchronize()`. Printed: both means, their spread, and project/bare.

    python benchmarks/sft_step.py [--model smollm2-135m-instruct] [--batch-size 8] \
        [--max-length 256] [--steps 8] [--warmup 2] [--device auto] [--dtype auto]

TRL on an offline GPU machine: the project trainer is TRL's SFTTrainer, and trl is pure Python
(one py3-none-any wheel). Where it is missing and there is no package index, fetch the wheel on a
machine with one, `pip download trl==1.16.0 --no-deps -d wheels/`, copy it over and run
`pip install --no-deps wheels/trl-1.16.0-py3-none-any.whl`. TRL and training.sft also import
`datasets`, which is pure Python too but depends on compiled wheels (pyarrow, xxhash, pandas):
download those for the GPU machine's Python with `pip download datasets==5.2.0 -d wheels/
--only-binary=:all: --python-version 3.X --platform manylinux2014_x86_64` and install them all
with `pip install --no-index --find-links wheels/ datasets`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from agents.placement import DEVICE_HELP, DTYPE_HELP

MODEL_INPUTS = ("input_ids", "attention_mask", "labels", "position_ids")
"""What the bare side feeds the model from a collated batch (TRL adds bookkeeping keys)."""


def run_config(args: argparse.Namespace, output_dir: Path) -> Any:
    """The SFT recipe both sides share, settled on this machine (device, dtype)."""
    from training.sft import settle_placement
    from training.sft_config import SFTRunConfig

    config = SFTRunConfig(
        base_model=args.model,
        data="pack:core",
        max_length=args.max_length,
        batch_size=args.batch_size,
        max_steps=args.warmup + args.steps,
        eval_steps=0,
        logging_steps=args.logging_steps,
        output_dir=str(output_dir),
        device=args.device,
        dtype=args.dtype,
    )
    return settle_placement(config.validate())


class BareLoRA:
    """The minimal LoRA loop: forward with labels, backward, clip, AdamW step, zero grads."""

    def __init__(self, config: Any, batches: list[dict[str, Any]]) -> None:
        from peft import get_peft_model

        from agents.models import load_causal_lm
        from training.sft import lora_config, model_placement

        self.placement = model_placement(config)
        base, _ = load_causal_lm(config.base_model, placement=self.placement)
        torch.manual_seed(config.seed)
        self.model = get_peft_model(base, lora_config(config))
        self.model.train()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=config.learning_rate, weight_decay=config.weight_decay
        )
        self.batches = batches
        self.next = 0
        self.autocast = config.dtype in ("bfloat16", "float16")
        self.device_type = "cuda" if self.placement.on_cuda else "cpu"

    def step(self) -> float:
        """One optimisation step on the next batch; returns its loss."""
        batch = self.batches[self.next % len(self.batches)]
        self.next += 1
        with torch.autocast(
            self.device_type, dtype=self.placement.torch_dtype, enabled=self.autocast
        ):
            loss = self.model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    def timed_steps(self, count: int) -> list[float]:
        """Seconds of each of `count` steps."""
        times = []
        for _ in range(count):
            self.placement.synchronize()
            start = time.perf_counter()
            self.step()
            self.placement.synchronize()
            times.append(time.perf_counter() - start)
        return times


def collected_batches(trainer: Any, count: int, device: str) -> list[dict[str, Any]]:
    """`count` collated batches from the trainer's train dataloader, on `device`."""
    batches: list[dict[str, Any]] = []
    while len(batches) < count:
        for batch in trainer.get_train_dataloader():
            batches.append({k: v.to(device) for k, v in batch.items() if k in MODEL_INPUTS})
            if len(batches) == count:
                break
    return batches


def interleaving_callback(bare: BareLoRA, warmup: int, block: int) -> Any:
    """A TrainerCallback that times trainer steps and runs bare blocks between them."""
    from transformers import TrainerCallback

    class Interleave(TrainerCallback):
        def __init__(self) -> None:
            self.project: list[float] = []
            self.bare: list[float] = []
            self.last = time.perf_counter()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 0:
                bare.placement.synchronize()
                self.last = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            bare.placement.synchronize()
            if state.global_step > warmup:
                self.project.append(time.perf_counter() - self.last)
            if state.global_step == warmup:
                bare.timed_steps(warmup)  # untimed: the bare side's warm-up
            elif state.global_step > warmup and (state.global_step - warmup) % block == 0:
                self.bare += bare.timed_steps(block)
            bare.placement.synchronize()
            self.last = time.perf_counter()

    return Interleave()


def summary(name: str, times: list[float]) -> str:
    spread = statistics.stdev(times) if len(times) > 1 else 0.0
    return f"{name:<26} {statistics.mean(times):8.3f} s/step  (sd {spread:.3f}, n {len(times)})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m-instruct", help="name or folder")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--dtype", default="auto", help=DTYPE_HELP)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per side")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per side first")
    parser.add_argument("--block", type=int, default=2, help="steps per side between switches")
    parser.add_argument("--logging-steps", type=int, default=10, help="the trainer's")
    args = parser.parse_args()
    if args.warmup < 1 or args.steps < 1 or args.block < 1 or args.steps % args.block:
        raise SystemExit("--warmup, --steps, --block must be >= 1 and --block divide --steps")

    from agents.models import force_offline
    from training.sft import build_trainer

    force_offline()
    with tempfile.TemporaryDirectory() as tmp:
        config = run_config(args, Path(tmp) / "run")
        trainer, train_stats, _ = build_trainer(config, Path(tmp) / "run" / "checkpoints")
        batches = collected_batches(trainer, args.warmup + args.steps, config.device)
        bare = BareLoRA(config, batches)
        callback = interleaving_callback(bare, args.warmup, args.block)
        trainer.add_callback(callback)
        trainer.train()
    tokens = [int(b["attention_mask"].sum()) for b in batches]
    print(
        f"model {args.model} on {config.device} {config.dtype}, LoRA r {config.lora_r} on "
        f"{'/'.join(config.target_modules)}, batch {args.batch_size}, max_length "
        f"{args.max_length}, {statistics.mean(tokens):.0f} real tokens per batch "
        f"({sum(train_stats.rows_by_flow.values())} train rows), torch {torch.__version__}"
    )
    print(summary("project trainer (TRL SFT)", callback.project))
    print(summary("bare PEFT LoRA loop", callback.bare))
    ratio = statistics.mean(callback.project) / statistics.mean(callback.bare)
    print(f"{'project / bare':<26} {ratio:8.2f}")


if __name__ == "__main__":
    main()
