"""The LoRA SFT run config: one dataclass whose fields are the YAML keys and `--set` flags.

Kept apart from the trainer so the command line can list, load and validate a config without
importing torch. Field names follow TRL/transformers where one exists (`learning_rate`,
`max_steps`, `gradient_accumulation_steps`), so a reader who knows `SFTConfig` knows these.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from evaluators.scorers import DEFAULT_SCORER

FLOWS: tuple[str, ...] = ("MA", "ME", "MR", "RIL", "PT", "GD")
"""The MoralDial flows (docs/methods.md §2) a discussion row can belong to."""

CHAT_TEMPLATE_CHOICES = ("auto", "chatml", "plain")

# Keys that may change between an interrupted run and its continuation: lengthening a run is
# the point of resuming; anything else would mix two recipes in one adapter.
# Stance accuracy only measures the adapter, so it may be switched on or off when resuming.
RESUMABLE_CHANGES = frozenset(
    {"max_steps", "num_train_epochs", "overwrite", "keep_checkpoints"}
    | {"stance_eval_questions", "stance_judge", "stance_max_new_tokens"}
    | {"activation_checkpointing"}  # the same gradients, computed with less memory
    | {"use_cpu"}  # settled into `device` before the comparison
)
# Keys a run saved before they existed did not have, with the behaviour it had then: a DPO run
# saved before `group_by_length` read its pairs in random order, so resuming it needs false.
# A run saved before `device` and `dtype` trained on the CPU in float32 (use_cpu: true).
KEYS_ADDED_LATER: dict[str, Any] = {"group_by_length": False, "device": "cpu", "dtype": "float32"}


class SFTConfigError(ValueError):
    """A bad SFT config value; the message names the key."""


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


STANCE_HELP = {
    "stance_eval_questions": (
        "Stance accuracy on the first N dev-split questions of the pack, at every evaluation "
        "and at the end: the share of greedy first answers the judge reads as taking the "
        "RoT's side (0 = off)."
    ),
    "stance_judge": (
        "Agreement scorer that reads the answers' stance (an evaluators.agreement_model spec); "
        "stance accuracy is only as valid as its scorer card."
    ),
    "stance_max_new_tokens": "Most tokens of each first answer generated for stance accuracy.",
}


def check_placement_keys(config: Any) -> None:
    """`device` and `dtype` of an SFT or DPO config, by spelling (the GPU itself is checked
    when training starts); raises SFTConfigError naming the key."""
    from agents.placement import device_problem, dtype_problem

    for key, problem in (
        ("device", device_problem(config.device)),
        ("dtype", dtype_problem(config.dtype)),
    ):
        if problem:
            raise SFTConfigError(f"'{key}' {problem}")
    if config.device.startswith("cuda:"):
        raise SFTConfigError(
            f"'device' is {config.device}: training uses the GPU the trainer is given; pick one "
            "with CUDA_VISIBLE_DEVICES and write cuda"
        )
    if config.use_cpu and config.device.startswith("cuda"):
        raise SFTConfigError("'use_cpu' is true but 'device' is cuda; keep one of them")


def check_stance_keys(config: Any) -> None:
    """The stance-accuracy keys SFT and DPO configs share; raises SFTConfigError naming one."""
    if config.stance_eval_questions < 0:
        raise SFTConfigError(
            f"'stance_eval_questions' must be >= 0 (0 = off), got {config.stance_eval_questions!r}"
        )
    if config.stance_max_new_tokens < 1:
        raise SFTConfigError(
            f"'stance_max_new_tokens' must be >= 1, got {config.stance_max_new_tokens!r}"
        )
    if config.stance_eval_questions and not config.stance_judge.strip():
        raise SFTConfigError("'stance_judge' is empty: name an agreement scorer")


@dataclass
class SFTRunConfig:
    """LoRA multi-task SFT of a chat model on constructed MoralDial discussions."""

    # model
    base_model: str = _f(
        "smollm2-135m-instruct", "Base chat model: local Hugging Face folder or embedded name."
    )
    chat_template: str = _f(
        "auto",
        "Template for training AND generation: auto (chatml when the tokenizer has ChatML "
        "tokens, else plain), chatml, plain, or a .jinja file. Saved with the adapter.",
    )
    # data
    data: str = _f(
        "pack:core",
        "Discussions: a folder saved by `moralsim train discussions`, or pack:NAME to build "
        "them from a scenario pack now.",
    )
    flows: list[str] = field(
        default_factory=lambda: list(FLOWS),
        metadata={"help": "Flows to train on; leave one out for an ablation (MA ME MR RIL PT GD)."},
    )
    verdict_answers: int = _f(
        0,
        "With data=pack:NAME: this many verdict answers from the pack's written corpus (and a "
        "tenth as many in dev) join the MA rows (training.verdict_answers); 0: none.",
    )
    max_length: int = _f(
        384,
        "Most tokens per row; longer rows lose their oldest context turns first (as the bot "
        "does at generation), never the modelled answer.",
    )
    max_eval_samples: int | None = _f(
        None, "Use at most this many dev rows (seeded sample) per evaluation; null = all."
    )
    # LoRA
    lora_r: int = _f(16, "LoRA rank.")
    lora_alpha: int = _f(32, "LoRA scaling numerator (scale = alpha / r).")
    lora_dropout: float = _f(0.05, "Dropout on the LoRA branch.")
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        metadata={"help": "Module names that get LoRA adapters."},
    )
    # optimisation
    learning_rate: float = _f(2e-4, "Peak AdamW learning rate.")
    lr_scheduler_type: str = _f("linear", "transformers scheduler name (linear, cosine, ...).")
    warmup_ratio: float = _f(0.05, "Share of the steps spent warming the learning rate up.")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    num_train_epochs: float = _f(1.0, "Passes over the training rows (ignored if max_steps > 0).")
    max_steps: int = _f(-1, "Optimisation steps; > 0 overrides num_train_epochs.")
    batch_size: int = _f(8, "Rows per forward pass.")
    gradient_accumulation_steps: int = _f(1, "Forward passes per optimisation step.")
    group_by_length: bool = _f(
        True, "Batch rows of similar length together: less padding, much faster on a CPU."
    )
    activation_checkpointing: bool = _f(
        False, "Recompute activations in the backward pass: less memory, ~20-30% slower."
    )
    seed: int = _f(0, "Seed for LoRA initialisation, data order and discussion building.")
    # evaluation, checkpoints, output
    eval_steps: int = _f(
        50, "Evaluate on the dev split every N steps and keep the best (0 = never evaluate)."
    )
    save_steps: int | None = _f(
        None,
        "Checkpoint every N steps (null = every eval_steps; none if that is 0); a rerun "
        "resumes from the last checkpoint.",
    )
    logging_steps: int = _f(10, "Log the training loss every N steps.")
    stance_eval_questions: int = _f(0, STANCE_HELP["stance_eval_questions"])
    stance_judge: str = _f(DEFAULT_SCORER, STANCE_HELP["stance_judge"])
    stance_max_new_tokens: int = _f(48, STANCE_HELP["stance_max_new_tokens"])
    output_dir: str = _f("models/moral-bot", "Folder for the adapter, model card and metrics.")
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

    def validate(self) -> SFTRunConfig:
        """Value checks a type cannot express; raises SFTConfigError naming the key."""
        positive = ("max_length", "lora_r", "lora_alpha", "batch_size")
        positive += ("gradient_accumulation_steps", "logging_steps")
        for key in positive:
            if getattr(self, key) < 1:
                raise SFTConfigError(f"'{key}' must be >= 1, got {getattr(self, key)!r}")
        for key in ("eval_steps", "weight_decay"):
            if getattr(self, key) < 0:
                raise SFTConfigError(f"'{key}' must be >= 0, got {getattr(self, key)!r}")
        if self.max_eval_samples is not None and self.max_eval_samples < 1:
            raise SFTConfigError(
                f"'max_eval_samples' must be >= 1 or null, got {self.max_eval_samples!r}"
            )
        for key in ("lora_dropout", "warmup_ratio"):
            value = getattr(self, key)
            if not 0 <= value < 1:
                raise SFTConfigError(f"'{key}' must be in [0, 1), got {value!r}")
        if self.learning_rate <= 0:
            raise SFTConfigError(f"'learning_rate' must be > 0, got {self.learning_rate!r}")
        if self.max_steps <= 0 and self.num_train_epochs <= 0:
            raise SFTConfigError("'max_steps' or 'num_train_epochs' must be > 0 (both are not)")
        if self.max_steps == 0:
            raise SFTConfigError("'max_steps' must be > 0, or -1 to train for num_train_epochs")
        unknown = [f for f in self.flows if f not in FLOWS]
        if unknown:
            raise SFTConfigError(
                f"'flows' has unknown flow(s) {', '.join(map(repr, unknown))}; known: "
                f"{', '.join(FLOWS)}"
            )
        if not self.flows:
            raise SFTConfigError("'flows' is empty: name at least one flow to train on")
        if len(set(self.flows)) != len(self.flows):
            raise SFTConfigError(f"'flows' lists a flow twice: {self.flows}")
        if not self.target_modules:
            raise SFTConfigError("'target_modules' is empty: LoRA needs at least one module")
        if not self.output_dir.strip():
            raise SFTConfigError("'output_dir' is empty")
        if not self.data.strip():
            raise SFTConfigError("'data' is empty: give a discussions folder or pack:NAME")
        if self.verdict_answers < 0:
            raise SFTConfigError(f"'verdict_answers' must be >= 0, got {self.verdict_answers}")
        if self.verdict_answers and "MA" not in self.flows:
            raise SFTConfigError("'verdict_answers' are MA rows: add MA to 'flows' or set it to 0")
        if self.verdict_answers and not self.data.startswith("pack:"):
            raise SFTConfigError(
                "'verdict_answers' needs data=pack:NAME (a saved discussions folder holds its "
                "rows already: build it with `moralsim train discussions --verdicts N`)"
            )
        template = self.chat_template
        if template not in CHAT_TEMPLATE_CHOICES and not template.endswith((".jinja", ".j2")):
            raise SFTConfigError(
                f"'chat_template' must be one of {', '.join(CHAT_TEMPLATE_CHOICES)} or a "
                f".jinja file, got {template!r}"
            )
        if self.save_steps is not None and self.save_steps < 1:
            raise SFTConfigError(f"'save_steps' must be >= 1 or null, got {self.save_steps!r}")
        if self.eval_steps > 0 and self.checkpoint_every % self.eval_steps != 0:
            raise SFTConfigError(
                f"'save_steps' ({self.save_steps}) must be a multiple of 'eval_steps' "
                f"({self.eval_steps}): the best checkpoint is chosen among evaluated ones"
            )
        check_stance_keys(self)
        check_placement_keys(self)
        return self


def config_dict(config: SFTRunConfig) -> dict[str, Any]:
    return dataclasses.asdict(config)


# --------------------------------------------------------------------------- presets

# moral-smollm2: the embedded moral bot, trained on the core pack's train split in under
# 20 minutes on 2 CPU cores.
# Budget. On 2 CPU cores LoRA r=16 took ~6.5 s/step for batch 8 of ~50-token dialogues. Core-pack
# discussions are longer (94 tokens on average, max 169, with the chat markup and SmolLM2's
# default system line; 742 train rows), but batches grouped by length waste little on
# padding. Measured here, LoRA r=16 on q/k/v/o, batch 8: 6.9 s/step with 2 threads on an idle
# machine (12.6 s/step with 1 thread on a busy one). Fixed costs: ~10 s (model load,
# building and tokenising the discussions, saving) plus 4 dev evaluations of 48 rows (6
# forward-only batches, ~16 s each). So
#   100 steps x 6.9 s + 4 x 16 s + 10 s = ~765 s = ~13 min,
# which leaves ~7 min (about 50%) for longer rows (RIL contexts) or a slower machine.
# Measured with the RIL rows in (1,565 train rows, 197k tokens): 7.05 s/step, 712 s in all on
# 2 cores (2026-11-29). 100 x 8 = 800 rows, about half a pass over the train discussions.
# Stance accuracy (32 dev questions, greedy, up to 48 new tokens, at each of the 4 evaluations)
# adds 4 generation rounds; with it the preset took 1,214 s on 2026-12-01, a day the same
# machine ran its steps at ~12 s instead of ~7 s.
PRESETS: dict[str, dict[str, Any]] = {
    "moral-smollm2": {
        "base_model": "smollm2-135m-instruct",
        "data": "pack:core",
        "flows": list(FLOWS),
        "max_length": 256,
        "lora_r": 16,
        "lora_alpha": 32,
        "learning_rate": 3e-4,
        "batch_size": 8,
        "gradient_accumulation_steps": 1,
        "max_steps": 100,
        "eval_steps": 25,
        "max_eval_samples": 48,
        "logging_steps": 5,
        "stance_eval_questions": 32,
        "output_dir": "models/moral-smollm2",
    }
}


def preset_values(presets: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    """A preset's values as a plain mapping (a YAML file and `--set` apply on top of it)."""
    if name not in presets:
        raise SFTConfigError(f"unknown preset '{name}'; known: {', '.join(sorted(presets))}")
    return {k: list(v) if isinstance(v, list) else v for k, v in presets[name].items()}


def preset(name: str) -> dict[str, Any]:
    """An SFT preset's values."""
    return preset_values(PRESETS, name)
