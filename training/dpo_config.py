"""The DPO run config: one dataclass whose fields are the YAML keys and `--set` flags.

Names follow TRL's `DPOConfig` where one exists (`beta`, `loss_type`, `learning_rate`,
`max_steps`), and the LoRA / output / resume keys are those of `train sft`, so a reader who
knows either knows these. Kept apart from the trainer so the command line can list and
validate a config without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.scorers import DEFAULT_SCORER
from training.dpo_pairs import STEPS
from training.sft_config import (
    CHAT_TEMPLATE_CHOICES,
    STANCE_HELP,
    SFTConfigError,
    check_placement_keys,
    check_stance_keys,
    preset_values,
)

LOSS_TYPES = ("sigmoid", "ipo", "hinge")


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class DPORunConfig:
    """LoRA DPO of a chat model on stance preference pairs built from a scenario pack."""

    base_model: str = _f(
        "smollm2-135m-instruct", "Base chat model: local Hugging Face folder or embedded name."
    )
    sft_adapter: str | None = _f(
        None,
        "An SFT adapter folder to start from: it is trained further, and the frozen base + SFT "
        "model is the DPO reference. Null: a fresh LoRA on the base (the base is the reference).",
    )
    chat_template: str = _f(
        "auto",
        "Template when there is no SFT adapter (auto, chatml, plain or a .jinja file); with an "
        "adapter, the one saved with it is used so training and generation match.",
    )
    data: str = _f("pack:core", "Preference pairs: pack:NAME (train split -> train, dev -> dev).")
    steps: list[str] = field(
        default_factory=lambda: list(STEPS),
        metadata={"help": "Pair kinds: answer, why, revision, related."},
    )
    extra_pairs: str | None = _f(
        None,
        "A JSONL of more train pairs, e.g. the bot's own answers ranked by a judge "
        "(python -m training.onpolicy_pairs); checked for dev/test text like the pack's.",
    )
    beta: float = _f(0.1, "DPO temperature: how far the policy may move from the reference.")
    loss_type: str = _f("sigmoid", "DPO loss: sigmoid (the paper's), ipo or hinge.")
    max_length: int = _f(384, "Most tokens of prompt + reply; longer prompts lose their start.")
    max_eval_samples: int | None = _f(64, "Dev pairs per evaluation (seeded sample); null = all.")
    lora_r: int = _f(16, "LoRA rank (fresh adapter only).")
    lora_alpha: int = _f(32, "LoRA scaling numerator (fresh adapter only).")
    lora_dropout: float = _f(0.05, "Dropout on the LoRA branch (fresh adapter only).")
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        metadata={"help": "Module names that get LoRA adapters (fresh adapter only)."},
    )
    learning_rate: float = _f(5e-5, "Peak AdamW learning rate.")
    warmup_ratio: float = _f(0.1, "Share of the steps spent warming the learning rate up.")
    num_train_epochs: float = _f(1.0, "Passes over the pairs (ignored if max_steps > 0).")
    max_steps: int = _f(-1, "Optimisation steps; > 0 overrides num_train_epochs.")
    batch_size: int = _f(8, "Pairs per forward pass.")
    gradient_accumulation_steps: int = _f(1, "Forward passes per optimisation step.")
    group_by_length: bool = _f(
        True,
        "Batch pairs of similar length together: less padding, much faster on a CPU (the "
        "seeded order is read again in each epoch).",
    )
    activation_checkpointing: bool = _f(
        False, "Recompute activations in the backward pass: less memory, ~1.6x slower on CPU."
    )
    seed: int = _f(0, "Seed for LoRA initialisation, data order and the pairs' phrases.")
    eval_steps: int = _f(25, "Evaluate on dev pairs every N steps (0 = never).")
    save_steps: int | None = _f(None, "Checkpoint every N steps (null = every eval_steps).")
    logging_steps: int = _f(5, "Log the training loss every N steps.")
    stance_eval_questions: int = _f(0, STANCE_HELP["stance_eval_questions"])
    stance_judge: str = _f(DEFAULT_SCORER, STANCE_HELP["stance_judge"])
    stance_max_new_tokens: int = _f(48, STANCE_HELP["stance_max_new_tokens"])
    output_dir: str = _f("models/moral-dpo", "Folder for the adapter, model card and metrics.")
    overwrite: bool = _f(False, "Replace a finished run in output_dir instead of refusing.")
    keep_checkpoints: bool = _f(False, "Keep output_dir/checkpoints after a finished run.")
    device: str = _f("auto", "Where it trains: auto (the GPU if torch sees one), cpu or cuda.")
    dtype: str = _f(
        "auto",
        "auto (bfloat16 on a GPU, float32 on the CPU), float32, bfloat16 or float16: the base "
        "model's weights, with mixed precision in that type (LoRA weights stay float32).",
    )
    use_cpu: bool = _f(
        False, "Same as device: cpu (read from configs of earlier releases, where it was true)."
    )

    @property
    def checkpoint_every(self) -> int:
        return self.save_steps if self.save_steps is not None else max(self.eval_steps, 0)

    def validate(self) -> DPORunConfig:
        """Value checks a type cannot express; raises SFTConfigError naming the key."""
        for key in ("max_length", "lora_r", "lora_alpha", "batch_size", "logging_steps"):
            if getattr(self, key) < 1:
                raise SFTConfigError(f"'{key}' must be >= 1, got {getattr(self, key)!r}")
        if self.gradient_accumulation_steps < 1:
            raise SFTConfigError("'gradient_accumulation_steps' must be >= 1")
        if self.beta <= 0:
            raise SFTConfigError(f"'beta' must be > 0, got {self.beta!r}")
        if self.loss_type not in LOSS_TYPES:
            raise SFTConfigError(
                f"'loss_type' must be one of {', '.join(LOSS_TYPES)}, got {self.loss_type!r}"
            )
        if self.learning_rate <= 0:
            raise SFTConfigError(f"'learning_rate' must be > 0, got {self.learning_rate!r}")
        for key in ("lora_dropout", "warmup_ratio"):
            if not 0 <= getattr(self, key) < 1:
                raise SFTConfigError(f"'{key}' must be in [0, 1), got {getattr(self, key)!r}")
        if self.max_steps == 0 or (self.max_steps < 0 and self.num_train_epochs <= 0):
            raise SFTConfigError("'max_steps' must be > 0, or -1 with num_train_epochs > 0")
        unknown = [s for s in self.steps if s not in STEPS]
        if unknown or not (self.steps or self.extra_pairs):
            raise SFTConfigError(
                f"'steps' must name pair kinds among {', '.join(STEPS)} (or be [] with "
                f"extra_pairs), got {self.steps!r}"
            )
        if not self.data.startswith("pack:") or not self.data.removeprefix("pack:").strip():
            raise SFTConfigError(f"'data' must be pack:NAME (a scenario pack), got {self.data!r}")
        if self.eval_steps < 0:
            raise SFTConfigError(f"'eval_steps' must be >= 0, got {self.eval_steps!r}")
        if self.save_steps is not None and self.save_steps < 1:
            raise SFTConfigError(f"'save_steps' must be >= 1 or null, got {self.save_steps!r}")
        if self.eval_steps > 0 and self.checkpoint_every % self.eval_steps != 0:
            raise SFTConfigError("'save_steps' must be a multiple of 'eval_steps'")
        if self.max_eval_samples is not None and self.max_eval_samples < 1:
            raise SFTConfigError("'max_eval_samples' must be >= 1 or null")
        template = self.chat_template
        if template not in CHAT_TEMPLATE_CHOICES and not template.endswith((".jinja", ".j2")):
            raise SFTConfigError(f"'chat_template' must be one of {CHAT_TEMPLATE_CHOICES}")
        if not self.output_dir.strip():
            raise SFTConfigError("'output_dir' is empty")
        check_stance_keys(self)
        check_placement_keys(self)
        return self


PRESETS: dict[str, dict[str, Any]] = {
    "moral-smollm2-dpo": {
        "base_model": "smollm2-135m-instruct",
        "sft_adapter": "models/moral-smollm2",
        "data": "pack:core",
        "beta": 0.1,
        "learning_rate": 5e-5,
        "batch_size": 8,
        "max_steps": 30,
        "eval_steps": 15,
        "max_eval_samples": 48,
        "max_length": 256,
        "output_dir": "models/moral-smollm2-dpo",
    }
}
"""moral-smollm2-dpo: DPO on top of the `moral-smollm2` SFT adapter (train that first).

30 steps of 8 pairs: dev preference accuracy was already 0.81 at step 15 and stayed there at 30
(2026-12-01, seed 0); on 2 CPU cores a step took ~19 s on an idle machine (33-42 s while tests
ran beside it) and each of the two evaluations ~70-85 s, so the preset takes ~12 minutes idle
(1,132 s measured under load)."""


def preset(name: str) -> dict[str, Any]:
    """A DPO preset's values."""
    return preset_values(PRESETS, name)
