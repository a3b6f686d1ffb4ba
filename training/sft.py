"""LoRA multi-task SFT of a moral bot on constructed discussions (MoralDial §2), via TRL + PEFT.

A thin layer over `trl.SFTTrainer`: it loads the base model through agents.models, tokenises
the discussions with a loss mask on each row's modelled answer (training.sft_data), and hands
TRL a CPU-safe fp32 config. What it adds is bookkeeping a long CPU run needs: checkpoints in
`output_dir/checkpoints` that a rerun of the same command resumes from, a refusal to resume
with a changed recipe or to overwrite a finished run, and a self-describing output folder (a
standard PEFT adapter, the tokenizer with the chat template it was trained with, a model card
and metrics.json).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from training.sft_config import (
    KEYS_ADDED_LATER,
    RESUMABLE_CHANGES,
    SFTConfigError,
    SFTRunConfig,
    config_dict,
)
from training.sft_data import SplitStats, tokenize_split, training_chat_template
from training.stance_metric import StanceAccuracy, StanceTracker, stance_card_line, stance_metrics

Say = Callable[[str], None]
RUN_CONFIG = "run_config.json"
METRICS = "metrics.json"
CHECKPOINTS = "checkpoints"


@dataclass
class SFTResult:
    output_dir: Path
    global_step: int
    train_loss: float | None
    best_dev_loss: float | None
    best_step: int | None
    resumed_from: str | None
    seconds: float
    train_stats: SplitStats
    dev_stats: SplitStats | None
    stance: StanceAccuracy | None = None


def _quiet(message: str) -> None:
    del message


# --------------------------------------------------------------------------- data


def load_discussions(spec: str, seed: int, flows: Sequence[str], verdicts: int = 0) -> Any:
    """A DatasetDict of discussions: a saved folder, or `pack:NAME` built now (seeded, with
    `verdicts` verdict answers from the pack's written corpus)."""
    from datasets import DatasetDict, load_from_disk

    if spec.startswith("pack:"):
        from training.discussions import DiscussionConfig, build_discussions

        pack = spec.removeprefix("pack:")
        return build_discussions(
            DiscussionConfig(pack=pack, seed=seed, flows=tuple(flows), verdicts=verdicts)
        )
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        raise SFTConfigError(
            f"'data': {spec!r} is neither a discussions folder nor pack:NAME "
            "(build one with `moralsim train discussions`)"
        )
    try:
        loaded = load_from_disk(str(folder))
    except (FileNotFoundError, ValueError) as exc:
        raise SFTConfigError(
            f"'data': {folder} is not a saved discussions dataset ({exc})"
        ) from None
    if not isinstance(loaded, DatasetDict):
        raise SFTConfigError(f"'data': {folder} holds one dataset, not train/dev/test splits")
    return loaded


def _check_columns(dataset: Any, spec: str) -> None:
    if "train" not in dataset:
        raise SFTConfigError(f"'data': {spec} has no train split (splits: {list(dataset)})")
    for split, part in dataset.items():
        missing = {"messages", "flow"} - set(part.column_names)
        if missing:
            raise SFTConfigError(
                f"'data': {spec} split {split} lacks column(s) {', '.join(sorted(missing))}"
            )


# --------------------------------------------------------------------------- output folder


def _prepare_output(config: Any, say: Say, kind: str = "SFT") -> Path:
    """Decide between a fresh run, a resumed one, and a refusal; returns the checkpoint dir.

    `config` is any run-config dataclass with `output_dir` and `overwrite` (SFT, DPO)."""
    out = Path(config.output_dir).expanduser()
    checkpoints = out / CHECKPOINTS
    saved_config = out / RUN_CONFIG
    if out.exists() and any(out.iterdir()) and not saved_config.is_file():
        raise SFTConfigError(
            f"'output_dir': {out} is not empty and holds no {kind} run ({RUN_CONFIG} missing); "
            "choose a new folder"
        )
    if (out / METRICS).is_file() and not config.overwrite:
        raise SFTConfigError(
            f"'output_dir': {out} already holds a finished run; pass --overwrite "
            "(overwrite=true) to replace it, or choose another output_dir"
        )
    if config.overwrite and out.exists():
        say(f"overwrite: removing the previous run in {out}")
        shutil.rmtree(out)
    elif saved_config.is_file() and _last_checkpoint(checkpoints):
        before = json.loads(saved_config.read_text(encoding="utf-8"))
        before = {**keys_it_lacked(before), **before}
        now = config_dict(config)
        changed = sorted(
            k
            for k in set(before) | set(now)
            if k not in RESUMABLE_CHANGES and before.get(k) != now.get(k)
        )
        if changed:
            was = ", ".join(f"{k}={before.get(k)!r}" for k in changed)
            raise SFTConfigError(
                f"'output_dir': {out} holds an unfinished run with a different "
                f"{', '.join(changed)} (it had {was}); rerun with the same settings to resume, "
                "or pass --overwrite to start again"
            )
    out.mkdir(parents=True, exist_ok=True)
    saved_config.write_text(json.dumps(config_dict(config), indent=2) + "\n", encoding="utf-8")
    return checkpoints


def _last_checkpoint(checkpoints: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None


# --------------------------------------------------------------------------- training


def build_trainer(
    config: SFTRunConfig,
    checkpoints: Path,
    say: Say = _quiet,
    callbacks: Sequence[Any] = (),
) -> tuple[Any, SplitStats, SplitStats | None]:
    """The configured SFTTrainer (model, LoRA, tokenised splits), not yet trained."""
    from trl import SFTConfig, SFTTrainer

    from agents.models import load_causal_lm

    config = settle_placement(config)  # as train_sft settled it (idempotent)
    model, tokenizer = load_causal_lm(config.base_model, placement=model_placement(config))
    template = training_chat_template(tokenizer, config.chat_template)
    tokenizer.chat_template = template  # saved with the adapter: generation uses it too
    tokenizer.padding_side = "left"  # how agents.hf batches prompts; TRL pads labels itself

    train_dataset, train_stats, dev_dataset, dev_stats = _tokenized_splits(
        config, tokenizer, template, say
    )
    evaluate = dev_dataset is not None
    args = SFTConfig(
        **shared_trainer_args(config, checkpoints, evaluate),
        activation_checkpointing=config.activation_checkpointing,
        lr_scheduler_type=config.lr_scheduler_type,
        weight_decay=config.weight_decay,
        train_sampling_strategy="group_by_length" if config.group_by_length else "random",
        completion_only_loss=True,
        load_best_model_at_end=evaluate,
        metric_for_best_model="eval_loss" if evaluate else None,
        greater_is_better=False if evaluate else None,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=dev_dataset,
        processing_class=tokenizer,
        peft_config=lora_config(config),
        callbacks=list(callbacks),
    )
    return trainer, train_stats, dev_stats


def _tokenized_splits(
    config: SFTRunConfig, tokenizer: Any, template: str, say: Say
) -> tuple[Any, SplitStats, Any, SplitStats | None]:
    """The train split (required) and the dev split (when evaluating and it has rows) as
    tokenised datasets, with what tokenising kept and dropped of each."""
    from datasets import Dataset

    discussions = load_discussions(config.data, config.seed, config.flows, config.verdict_answers)
    _check_columns(discussions, config.data)
    train_cols, train_stats = tokenize_split(
        discussions["train"], "train", tokenizer, template, config.flows, config.max_length
    )
    if not train_cols["input_ids"]:
        raise SFTConfigError(
            f"'flows': no train rows of {', '.join(config.flows)} in {config.data}"
        )
    dev_dataset, dev_stats = None, None
    if config.eval_steps > 0 and "dev" in discussions:
        dev_cols, dev_stats = tokenize_split(
            discussions["dev"],
            "dev",
            tokenizer,
            template,
            config.flows,
            config.max_length,
            max_rows=config.max_eval_samples,
            seed=config.seed,
        )
        dev_dataset = Dataset.from_dict(dev_cols) if dev_cols["input_ids"] else None
    if config.eval_steps > 0 and dev_dataset is None:
        say("no dev rows for the chosen flows: training without evaluation")
    _report_split(say, "train", train_stats)
    if dev_stats is not None:
        _report_split(say, "dev", dev_stats)
    return Dataset.from_dict(train_cols), train_stats, dev_dataset, dev_stats


def lora_config(config: Any) -> Any:
    """The LoRA adapter SFT and DPO train (rank, alpha, dropout, target modules from config)."""
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )


def shared_trainer_args(config: Any, checkpoints: Path, evaluate: bool) -> dict[str, Any]:
    """The TRL arguments SFT and DPO runs share: the settled device and mixed precision
    (`settle_placement`), checkpoints every `checkpoint_every` steps for resume, evaluation when
    there is a dev split."""
    every = config.checkpoint_every
    return {
        "output_dir": str(checkpoints),
        "use_cpu": not config.device.startswith("cuda"),
        "bf16": config.dtype == "bfloat16",
        "fp16": config.dtype == "float16",
        "learning_rate": config.learning_rate,
        "warmup_steps": config.warmup_ratio,
        "num_train_epochs": config.num_train_epochs,
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.batch_size,
        "per_device_eval_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "max_length": config.max_length,
        "seed": config.seed,
        "data_seed": config.seed,
        "logging_steps": config.logging_steps,
        "eval_strategy": "steps" if evaluate else "no",
        "eval_steps": config.eval_steps if evaluate else None,
        "save_strategy": "steps" if every > 0 else "no",
        "save_steps": every if every > 0 else None,
        "report_to": "none",
        "dataloader_num_workers": 0,
        "disable_tqdm": False,
    }


def keys_it_lacked(saved: dict[str, Any]) -> dict[str, Any]:
    """The values a run saved before a key existed trained with: KEYS_ADDED_LATER, except that
    a run with use_cpu false trained on the GPU (in float32) before `device` existed."""
    lacked = {k: v for k, v in KEYS_ADDED_LATER.items() if k not in saved}
    if "device" in lacked and saved.get("use_cpu") is False:
        lacked["device"] = "cuda"
    return lacked


def settle_placement(config: Any) -> Any:
    """An SFT or DPO config with `device` and `dtype` resolved on this machine (auto: the GPU in
    bfloat16 where torch sees one), so the run folder records where it trained and a resume on
    another device or precision is refused; raises SFTConfigError naming the key."""
    from agents.placement import PlacementError, cuda_state, resolve_placement

    try:
        placement = resolve_placement("cpu" if config.use_cpu else config.device, config.dtype)
    except PlacementError as exc:
        raise SFTConfigError(str(exc)) from None
    if placement.dtype == "float16" and not placement.on_cuda:
        raise SFTConfigError("'dtype' float16 trains only on a GPU; on the CPU use float32")
    visible = cuda_state()[0] if placement.on_cuda else 0
    if visible > 1:
        raise SFTConfigError(
            f"'device' is {placement.device} and {visible} GPUs are visible: training "
            "uses one GPU; pick it with CUDA_VISIBLE_DEVICES=N"
        )
    return dataclasses.replace(
        config, device=placement.device, dtype=placement.dtype, use_cpu=False
    )


def model_placement(config: Any) -> Any:
    """Where a settled config's base model loads (its weights in `dtype`; LoRA stays float32)."""
    from agents.placement import Placement

    return Placement(config.device, config.dtype)


def finish_output(
    out: Path, checkpoints: Path, card: str, metrics: dict[str, Any], keep_checkpoints: bool
) -> None:
    """Model card, checkpoint clean-up, then metrics.json last: its presence marks the run
    as finished (what a rerun checks before resuming or refusing)."""
    (out / "README.md").write_text(card, encoding="utf-8")
    if not keep_checkpoints:
        shutil.rmtree(checkpoints, ignore_errors=True)
    tmp = out / (METRICS + ".tmp")
    tmp.write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / METRICS)


def _report_split(say: Say, split: str, stats: SplitStats) -> None:
    counts = ", ".join(f"{flow} {n}" for flow, n in stats.rows_by_flow.items())
    extra = f"; {stats.truncated} lost old turns to max_length" if stats.truncated else ""
    if stats.skipped_too_long:
        extra += f"; {stats.skipped_too_long} skipped (answer alone longer than max_length)"
    say(f"{split}: {sum(stats.rows_by_flow.values())} rows ({counts}){extra}")


def train_sft(
    config: SFTRunConfig, *, say: Say = _quiet, callbacks: Sequence[Any] = ()
) -> SFTResult:
    """Train (or resume) a LoRA adapter and write the finished folder.

    Args:
        config: the run recipe; validated here too.
        say: where progress lines go (the trainer's own bar prints to stderr).
        callbacks: extra `transformers.TrainerCallback`s (tests use one to interrupt a run).
    """
    from agents.models import force_offline, resolve_model

    force_offline()
    config = settle_placement(config.validate())
    start = time.perf_counter()
    stance = StanceTracker.from_config(config, None, say)  # judge checked before any model
    checkpoints = _prepare_output(config, say)
    out = checkpoints.parent
    resume = _last_checkpoint(checkpoints)
    if stance:
        stance.open()
    callbacks = [*callbacks, *([stance.callback()] if stance else [])]
    trainer, train_stats, dev_stats = build_trainer(config, checkpoints, say, callbacks)
    if resume:
        say(f"resuming from {resume}")
    output = trainer.train(resume_from_checkpoint=resume)

    trainer.model.save_pretrained(str(out), safe_serialization=True)
    trainer.processing_class.save_pretrained(str(out))
    state = trainer.state
    best_step = _step_of(state.best_model_checkpoint)
    saved_step = best_step if best_step is not None else state.global_step
    final = (
        stance.final(trainer.model, trainer.processing_class, saved_step, state.log_history)
        if stance
        else None
    )
    result = SFTResult(
        output_dir=out,
        global_step=state.global_step,
        train_loss=None if math.isnan(output.training_loss) else output.training_loss,
        best_dev_loss=state.best_metric,
        best_step=best_step,
        resumed_from=Path(resume).name if resume else None,
        seconds=time.perf_counter() - start,
        train_stats=train_stats,
        dev_stats=dev_stats,
        stance=final,
    )
    base_path = str(resolve_model(config.base_model).path)
    steps_run = state.global_step - (_step_of(resume) or 0)
    train_seconds = output.metrics.get("train_runtime")
    metrics = _metrics(config, result, state.log_history, base_path, train_seconds, steps_run)
    metrics.update(stance_metrics(state.log_history, final, saved_step, stance))
    finish_output(out, checkpoints, model_card(config, metrics), metrics, config.keep_checkpoints)
    return result


def _step_of(checkpoint: str | None) -> int | None:
    if not checkpoint:
        return None
    tail = Path(checkpoint).name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


def _metrics(
    config: SFTRunConfig,
    result: SFTResult,
    log_history: list[dict[str, Any]],
    base_path: str,
    train_seconds: float | None,
    steps_run: int,
) -> dict[str, Any]:
    """Everything the model card reports, machine-readable; `seconds_per_step` covers only
    the steps this invocation ran, evaluations included (a resumed run's earlier steps were
    timed elsewhere)."""
    train_curve = [(e["step"], e["loss"]) for e in log_history if "loss" in e and "step" in e]
    dev_curve = [(e["step"], e["eval_loss"]) for e in log_history if "eval_loss" in e]
    return {
        "base_model": config.base_model,
        "base_model_path": base_path,
        "data": config.data,
        "flows": list(config.flows),
        "global_step": result.global_step,
        "train_loss": result.train_loss,
        "best_dev_loss": result.best_dev_loss,
        "best_step": result.best_step,
        "resumed_from": result.resumed_from,
        "seconds": round(result.seconds, 1),
        "train_seconds": round(train_seconds, 1) if train_seconds is not None else None,
        "seconds_per_step": (
            round(train_seconds / steps_run, 2) if train_seconds and steps_run else None
        ),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "train": asdict(result.train_stats),
        "dev": asdict(result.dev_stats) if result.dev_stats else None,
        "train_loss_curve": train_curve,
        "dev_loss_curve": dev_curve,
        "config": config_dict(config),
    }


def model_card(config: SFTRunConfig, metrics: dict[str, Any]) -> str:
    """A README.md for the adapter folder: what it is, what it saw, how it was trained."""

    def counts(split: str) -> str:
        stats = metrics.get(split)
        if not stats:
            return "none"
        return ", ".join(f"{flow} {n}" for flow, n in stats["rows_by_flow"].items())

    best = metrics["best_dev_loss"]
    hyper = {
        k: metrics["config"][k]
        for k in (
            "lora_r",
            "lora_alpha",
            "lora_dropout",
            "target_modules",
            "learning_rate",
            "lr_scheduler_type",
            "warmup_ratio",
            "batch_size",
            "gradient_accumulation_steps",
            "max_steps",
            "num_train_epochs",
            "max_length",
            "chat_template",
            "seed",
        )
    }
    lines = [
        f"# Moral bot LoRA adapter ({Path(config.output_dir).name})",
        "",
        "A PEFT LoRA adapter trained by `moralsim train sft` on constructed MoralDial",
        "discussions, with the loss on each row's final bot answer only. The tokenizer here",
        "carries the chat template used in training; moralsim generates with it.",
        "",
        f"- Base model: `{config.base_model}` ({metrics['base_model_path']})",
        f"- Data: `{config.data}`; flows: {', '.join(config.flows)}",
        f"- Train rows per flow: {counts('train')}",
        f"- Dev rows per flow (evaluated): {counts('dev')}",
        f"- Steps: {metrics['global_step']}; final train loss: {_fmt(metrics['train_loss'])}",
        f"- Best dev loss: {_fmt(best)} (step {metrics['best_step']})",
        *filter(None, [stance_card_line(metrics)]),
        f"- Finished: {metrics['finished']}; {metrics['seconds']:.0f} s in all, "
        f"{metrics['seconds_per_step']} s per step (evaluations included)"
        + (f" (resumed from {metrics['resumed_from']})" if metrics["resumed_from"] else ""),
        "",
        "## Hyper-parameters",
        "",
        *[f"- {k}: {v}" for k, v in hyper.items()],
        "",
        "## Use",
        "",
        "```",
        f"moralsim chat --model {config.base_model} --adapter {config.output_dir}",
        "```",
        "",
    ]
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
