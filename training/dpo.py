"""LoRA DPO of a moral bot on stance preference pairs (TRL `DPOTrainer` + PEFT).

SFT on the pack teaches the answer style; the bot still takes the wrong side about as often as
the right one. DPO trains the preference itself: for the same context, the reply that follows
the RoT over the one that breaks it (training.dpo_pairs). On top of an SFT adapter, the adapter
is trained further and the frozen base + SFT model is the reference, so the result is still a
standard PEFT adapter on the base model. Checkpoints, resume, refusal to overwrite, the model
card and metrics.json work as in `train sft` (training.sft).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from training.dpo_config import DPORunConfig
from training.dpo_pairs import PreferencePair, build_pairs, check_no_leaks, step_counts
from training.sft import (
    _last_checkpoint,
    _prepare_output,
    finish_output,
    lora_config,
    model_placement,
    settle_placement,
    shared_trainer_args,
)
from training.sft_config import SFTConfigError
from training.sft_data import training_chat_template
from training.stance_metric import StanceAccuracy, StanceTracker, stance_card_line, stance_metrics

Say = Callable[[str], None]


@dataclass
class DPOResult:
    output_dir: Path
    global_step: int
    train_loss: float | None
    resumed_from: str | None
    seconds: float
    train_pairs: dict[str, int]
    dev_pairs: dict[str, int]
    stance: StanceAccuracy | None = None


def load_pairs(config: DPORunConfig) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """Train and dev pairs of the pack; train pairs never hold dev or test question text."""
    from scenarios.pack import load_pack

    pack = load_pack(config.data.removeprefix("pack:")).pack
    train = build_pairs(pack.questions, "train", config.seed, config.steps)
    dev = build_pairs(pack.questions, "dev", config.seed, config.steps)
    if config.extra_pairs:
        train += extra_pairs(Path(config.extra_pairs))
    if not train:
        raise SFTConfigError(f"'data': {config.data} gives no train pairs for {config.steps}")
    check_no_leaks(train, pack.questions_in("dev") + pack.questions_in("test"))
    if config.max_eval_samples is not None and len(dev) > config.max_eval_samples:
        import random

        dev = random.Random(config.seed).sample(dev, config.max_eval_samples)
    return train, dev


def extra_pairs(path: Path) -> list[PreferencePair]:
    """The `extra_pairs` file's pairs; a missing or bad file is one config error."""
    from training.onpolicy_pairs import read_pairs

    if not path.is_file():
        raise SFTConfigError(f"'extra_pairs': {path} is not a file")
    try:
        return read_pairs(path)
    except ValueError as exc:
        raise SFTConfigError(f"'extra_pairs': {exc}") from None


def _models(config: DPORunConfig) -> tuple[Any, Any, Any, Any]:
    """(policy, reference or None, tokenizer, peft_config or None)."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    from agents.models import load_causal_lm

    placement = model_placement(config)
    model, tokenizer = load_causal_lm(config.base_model, placement=placement)
    if config.sft_adapter:
        adapter = Path(config.sft_adapter).expanduser()
        if not (adapter / "adapter_config.json").is_file():
            raise SFTConfigError(f"'sft_adapter': {adapter} holds no adapter_config.json")
        tokenizer = AutoTokenizer.from_pretrained(str(adapter))
        reference, _ = load_causal_lm(config.base_model, placement=placement)
        reference = PeftModel.from_pretrained(reference, str(adapter)).merge_and_unload()
        policy = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
        return policy, reference.eval(), tokenizer, None
    tokenizer.chat_template = training_chat_template(tokenizer, config.chat_template)
    return model, None, tokenizer, lora_config(config)


def build_dpo_trainer(
    config: DPORunConfig,
    checkpoints: Path,
    callbacks: Sequence[Any] = (),
    pairs: tuple[list[PreferencePair], list[PreferencePair]] | None = None,
) -> tuple[Any, dict[str, int], dict[str, int]]:
    """The configured DPOTrainer, not yet trained, and the pair counts per step."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    config = settle_placement(config)  # as train_dpo settled it (idempotent)
    train, dev = pairs if pairs is not None else load_pairs(config)
    policy, reference, tokenizer, peft_config = _models(config)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    evaluate = config.eval_steps > 0 and bool(dev)
    args = DPOConfig(
        **shared_trainer_args(config, checkpoints, evaluate),
        beta=config.beta,
        loss_type=[config.loss_type],
        truncation_mode="keep_end",
        # TRL turns checkpointing on by default; on a CPU it costs time, not needed memory
        activation_checkpointing=config.activation_checkpointing,
        # grouped runs read the pairs in the order built below, which is already shuffled
        train_sampling_strategy="sequential" if config.group_by_length else "random",
    )
    columns = ("prompt", "chosen", "rejected")

    def dataset(pairs: list[PreferencePair], grouped: bool = False) -> Any:
        rows = [p.to_row() for p in pairs]
        if grouped:
            lengths = [_text_length(r) for r in rows]
            rows = [rows[i] for i in length_grouped_order(lengths, config.batch_size, config.seed)]
        return Dataset.from_list([{k: r[k] for k in columns} for r in rows])

    trainer = DPOTrainer(
        model=policy,
        ref_model=reference,
        args=args,
        train_dataset=dataset(train, grouped=config.group_by_length),
        eval_dataset=dataset(dev) if evaluate else None,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=list(callbacks),
    )
    return trainer, step_counts(train), step_counts(dev)


def _text_length(row: dict[str, Any]) -> int:
    """Characters of the prompt and the longer reply: what sorting pairs into batches of
    similar padded length needs (tokens would order them the same way, near enough)."""
    prompt = sum(len(m["content"]) for m in row["prompt"])
    return prompt + max(len(row["chosen"][0]["content"]), len(row["rejected"][0]["content"]))


def length_grouped_order(lengths: Sequence[int], size: int, seed: int) -> list[int]:
    """A seeded random order of the rows in which each run of `size` rows (one batch) holds
    rows of similar length: rows are shuffled, sorted by length within windows of 50 batches,
    cut into batches, and the full batches shuffled. Padding shrinks; the order stays random.
    The trainer reads it sequentially, so a run of several epochs reads it again each epoch."""
    import random

    rng = random.Random(f"{seed}/dpo-order")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = size * 50
    grouped: list[int] = []
    for start in range(0, len(order), window):
        grouped += sorted(order[start : start + window], key=lambda i: lengths[i])
    batches = [grouped[i : i + size] for i in range(0, len(grouped), size)]
    short = batches.pop() if batches and len(batches[-1]) < size else []
    rng.shuffle(batches)  # the short batch stays last, so every batch boundary holds
    return [i for batch in batches for i in batch] + short


def train_dpo(
    config: DPORunConfig, *, say: Say = lambda m: None, callbacks: Sequence[Any] = ()
) -> DPOResult:
    """Train (or resume) the DPO adapter and write the finished folder."""
    from agents.models import force_offline

    force_offline()
    config = settle_placement(config.validate())
    start = time.perf_counter()
    pairs = load_pairs(config)  # before anything in output_dir is replaced
    stance = StanceTracker.from_config(config, config.data.removeprefix("pack:"), say)
    checkpoints = _prepare_output(config, say, kind="DPO")
    out = checkpoints.parent
    resume = _last_checkpoint(checkpoints)
    if stance:
        stance.open()
    callbacks = [*callbacks, *([stance.callback()] if stance else [])]
    trainer, train_counts, dev_counts = build_dpo_trainer(config, checkpoints, callbacks, pairs)
    say(f"train pairs {train_counts}; dev pairs {dev_counts}")
    if resume:
        say(f"resuming from {resume}")
    output = trainer.train(resume_from_checkpoint=resume)
    trainer.model.save_pretrained(str(out), safe_serialization=True)
    trainer.processing_class.save_pretrained(str(out))
    state = trainer.state
    final = (
        stance.final(trainer.model, trainer.processing_class, state.global_step, state.log_history)
        if stance
        else None
    )
    result = DPOResult(
        output_dir=out,
        global_step=state.global_step,
        train_loss=None if math.isnan(output.training_loss) else output.training_loss,
        resumed_from=Path(resume).name if resume else None,
        seconds=time.perf_counter() - start,
        train_pairs=train_counts,
        dev_pairs=dev_counts,
        stance=final,
    )
    metrics = _metrics(config, result, state.log_history)
    metrics.update(stance_metrics(state.log_history, final, state.global_step, stance))
    finish_output(out, checkpoints, model_card(config, metrics), metrics, config.keep_checkpoints)
    return result


def _metrics(
    config: DPORunConfig, result: DPOResult, log_history: list[dict[str, Any]]
) -> dict[str, Any]:
    """The model card's figures: loss and the preference accuracy (chosen reward above
    rejected) on train batches and on the dev pairs, over the steps."""

    def curve(key: str) -> list[tuple[int, float]]:
        return [(e["step"], e[key]) for e in log_history if key in e and "step" in e]

    dev_acc = curve("eval_rewards/accuracies")
    return {
        "base_model": config.base_model,
        "sft_adapter": config.sft_adapter,
        "data": config.data,
        "global_step": result.global_step,
        "train_loss": result.train_loss,
        "dev_preference_accuracy": dev_acc[-1][1] if dev_acc else None,
        "resumed_from": result.resumed_from,
        "seconds": round(result.seconds, 1),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "train_pairs": result.train_pairs,
        "dev_pairs": result.dev_pairs,
        "train_loss_curve": curve("loss"),
        "train_preference_accuracy_curve": curve("rewards/accuracies"),
        "dev_loss_curve": curve("eval_loss"),
        "dev_preference_accuracy_curve": dev_acc,
        "config": asdict(config),
    }


def model_card(config: DPORunConfig, metrics: dict[str, Any]) -> str:
    acc = metrics.get("dev_preference_accuracy")
    start = f"the SFT adapter `{config.sft_adapter}`" if config.sft_adapter else "a fresh LoRA"
    return (
        f"# {Path(config.output_dir).name}\n\n"
        f"A PEFT LoRA adapter for `{config.base_model}`, trained with DPO (TRL) from {start} "
        f"on stance preference pairs from `{config.data}` (train split): for the same context, "
        "the reply that follows the rule of thumb is preferred over the one that breaks it "
        f"(pair kinds {', '.join(config.steps)}; beta {config.beta}, loss {config.loss_type}).\n\n"
        f"- steps: {metrics['global_step']}, train loss {metrics['train_loss']}\n"
        f"- dev preference accuracy (chosen reward > rejected): "
        f"{'n/a' if acc is None else f'{acc:.3f}'}\n"
        f"- pairs: train {metrics['train_pairs']}, dev {metrics['dev_pairs']}\n"
        f"- time: {metrics['seconds']} s\n"
        + "".join(f"{line}\n" for line in [stance_card_line(metrics)] if line)
        + "\nPreference accuracy measures the pairs, not the bot's behaviour: measure the bot with "
        "`moralsim simulate` (or `moralsim eval`) on the test split and read its answers.\n\n"
        "Load it like any adapter: `moralsim chat --model BASE --adapter THIS_FOLDER`.\n"
    )
