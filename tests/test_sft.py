"""LoRA SFT (training/sft.py): loss mask, adapter round trip, resume, config errors, flows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moralsim.config import ConfigError
from moralsim.train_sft_cmd import load_sft_config
from training.sft import build_trainer, train_sft
from training.sft_config import SFTConfigError, SFTRunConfig
from training.sft_data import (
    SFTDataError,
    chatml_template,
    end_of_turn_ids,
    tokenize_row,
    training_chat_template,
)


def _u(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _a(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


# The MR row's context answer ("yes it is okay to lie .") disagrees with the RoT: it must not
# be learned; only the revision after the push-back is.
ROWS: list[dict[str, Any]] = [
    {"flow": "MA", "messages": [_u("is it okay to lie ?"), _a("no you should not lie .")]},
    {
        "flow": "MR",
        "messages": [
            _u("is it okay to lie ?"),
            _a("yes it is okay to lie ."),
            _u("it is wrong to lie ."),
            _a("no it is wrong ."),
        ],
    },
    {"flow": "PT", "messages": [_a("it is wrong to lie .")]},
]


def _save_discussions(folder: Path, rows: list[dict[str, Any]] = ROWS, copies: int = 2) -> str:
    from datasets import Dataset, DatasetDict

    def split(n: int, tag: str) -> Dataset:
        records = [
            {**row, "question_id": f"{tag}{i}", "source": "test"} for i, row in enumerate(rows * n)
        ]
        return Dataset.from_list(records)

    DatasetDict(train=split(copies, "t"), dev=split(1, "d"), test=split(1, "x")).save_to_disk(
        folder
    )
    return str(folder)


def _config(model: Path, data: str, out: Path, **extra: Any) -> SFTRunConfig:
    values: dict[str, Any] = {
        "base_model": str(model),
        "data": data,
        "output_dir": str(out),
        "max_steps": 2,
        "batch_size": 3,
        "eval_steps": 1,
        "logging_steps": 1,
        "learning_rate": 0.05,
        "warmup_ratio": 0.0,
        "lora_r": 4,
        "lora_alpha": 8,
    }
    values.update(extra)
    return SFTRunConfig(**values).validate()


# --------------------------------------------------------------------------- the loss mask


def test_labels_cover_exactly_the_final_answer_and_its_end_token(
    tiny_causal_lm: Path, tmp_path: Path
) -> None:
    data = _save_discussions(tmp_path / "data", copies=1)
    config = _config(tiny_causal_lm, data, tmp_path / "out")
    trainer, stats, _ = build_trainer(config, tmp_path / "out" / "checkpoints")
    tokenizer = trainer.processing_class
    eos = tokenizer.eos_token_id
    assert stats.rows_by_flow == {"MA": 1, "ME": 0, "MR": 1, "RIL": 0, "PT": 1, "GD": 0}

    processed = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    batch = trainer.data_collator(processed)
    assert len(processed) == len(ROWS)
    for row, example, ids, labels in zip(
        ROWS, processed, batch["input_ids"].tolist(), batch["labels"].tolist(), strict=True
    ):
        answer = tokenizer(row["messages"][-1]["content"], add_special_tokens=False)["input_ids"]
        expected = [*answer, eos]
        n = len(example["input_ids"])
        assert ids[:n] == example["input_ids"]
        learned = [(i, t) for i, t in enumerate(labels) if t != -100]
        # exactly the last len(expected) real tokens, in order, and nothing else (no padding)
        assert [i for i, _ in learned] == list(range(n - len(expected), n))
        assert [t for _, t in learned] == expected
        assert ids[n - len(expected) : n] == expected

    # the MR context answer is in the input but carries no label
    mr_ids, mr_labels = batch["input_ids"][1].tolist(), batch["labels"][1].tolist()
    yes = tokenizer.convert_tokens_to_ids("yes")
    assert yes in mr_ids and mr_labels[mr_ids.index(yes)] == -100


STOCK_CHATML = (
    "{% for m in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a test bot<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _chatml_tokenizer(tiny_causal_lm: Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_causal_lm)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = STOCK_CHATML
    return tokenizer


def test_chatml_template_keeps_the_models_prompts_and_default_system(
    tiny_causal_lm: Path,
) -> None:
    tokenizer = _chatml_tokenizer(tiny_causal_lm)
    template = training_chat_template(tokenizer, "auto")
    assert template == chatml_template("You are a test bot")
    for conversation in (ROWS[0]["messages"][:1], ROWS[1]["messages"][:3]):
        stock = tokenizer.apply_chat_template(
            conversation, tokenize=False, add_generation_prompt=True
        )
        ours = tokenizer.apply_chat_template(
            conversation, chat_template=template, tokenize=False, add_generation_prompt=True
        )
        assert ours == stock
    # no newline is rendered (and so learned) after the final answer's end token
    whole = tokenizer.apply_chat_template(
        ROWS[1]["messages"], chat_template=template, tokenize=False
    )
    assert whole.endswith("no it is wrong .<|im_end|>")

    # a PT row (empty prompt) still gets the default system line in front of its answer
    stop = end_of_turn_ids(tokenizer)
    row = tokenize_row(tokenizer, template, ROWS[2]["messages"], 64, stop, "pt")
    assert row is not None
    im_start, im_end = tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    assert row.input_ids[0] == im_start and row.input_ids.count(im_start) == 2  # system, answer
    assert row.input_ids[-1] == im_end
    learned = [t for t, m in zip(row.input_ids, row.completion_mask, strict=True) if m]
    assert learned[-1] == im_end and learned.count(im_end) == 1


def test_long_rows_lose_old_turns_never_the_answer(tiny_causal_lm: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_causal_lm)
    template = training_chat_template(tokenizer, "auto")
    stop = end_of_turn_ids(tokenizer)
    messages = ROWS[1]["messages"]
    full = tokenize_row(tokenizer, template, messages, 200, stop, "mr")
    assert full is not None and full.dropped_turns == 0
    cut = tokenize_row(tokenizer, template, messages, len(full.input_ids) - 1, stop, "mr")
    assert cut is not None and cut.dropped_turns >= 1
    assert (
        cut.input_ids[-sum(cut.completion_mask) :] == full.input_ids[-sum(full.completion_mask) :]
    )
    assert tokenize_row(tokenizer, template, messages, 3, stop, "mr") is None


def test_bad_rows_are_named(tiny_causal_lm: Path, tmp_path: Path) -> None:
    rows = [*ROWS, {"flow": "MA", "messages": [_a("no ."), _u("why ?")]}]
    data = _save_discussions(tmp_path / "data", rows, copies=1)
    config = _config(tiny_causal_lm, data, tmp_path / "out")
    with pytest.raises(SFTDataError, match=r"train row 3 \(question_id 't3', flow MA\).*last"):
        build_trainer(config, tmp_path / "out" / "checkpoints")


# --------------------------------------------------------------------------- training runs


def test_two_steps_save_an_adapter_the_agent_loads(tiny_causal_lm: Path, tmp_path: Path) -> None:
    import torch

    from agents.hf import TransformersAgent, history

    data = _save_discussions(tmp_path / "data")
    out = tmp_path / "adapter"
    result = train_sft(_config(tiny_causal_lm, data, out, learning_rate=0.5))
    assert result.global_step == 2 and result.best_dev_loss is not None
    for name in ("adapter_config.json", "adapter_model.safetensors", "tokenizer_config.json"):
        assert (out / name).is_file(), name
    assert not (out / "checkpoints").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train"]["rows_by_flow"]["MR"] == 2 and metrics["global_step"] == 2
    assert metrics["best_dev_loss"] == pytest.approx(min(v for _, v in metrics["dev_loss_curve"]))
    card = (out / "README.md").read_text()
    assert str(tiny_causal_lm) in card and "MR 2" in card and "Best dev loss" in card

    base = TransformersAgent(str(tiny_causal_lm))
    tuned = TransformersAgent(str(tiny_causal_lm), adapter=str(out))
    # generation uses the template the adapter was trained with (the base has none)
    assert not base.use_chat_template and tuned.use_chat_template
    assert tuned.tokenizer.chat_template == training_chat_template(base.tokenizer, "auto")
    ids = torch.tensor([tuned.prompt_ids(history(("user", "is it okay to lie ?")), 4)])
    with torch.no_grad():
        delta = (tuned.model(ids).logits - base.model(ids).logits).abs().max().item()
    assert delta > 1e-3
    assert len(tuned.respond([history(("user", "is it okay to lie ?"))])) == 1


class _Interrupt(Exception):
    pass


def test_interrupted_run_resumes_and_finished_run_is_protected(
    tiny_causal_lm: Path, tmp_path: Path
) -> None:
    from transformers import TrainerCallback

    class StopAfterSave(TrainerCallback):
        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 2:
                raise _Interrupt

    data = _save_discussions(tmp_path / "data")
    out = tmp_path / "run"
    with pytest.raises(_Interrupt):
        train_sft(_config(tiny_causal_lm, data, out, max_steps=2), callbacks=[StopAfterSave()])
    assert (out / "checkpoints" / "checkpoint-2").is_dir() and not (out / "metrics.json").exists()

    # a different recipe may not continue this run
    with pytest.raises(SFTConfigError, match="learning_rate"):
        train_sft(_config(tiny_causal_lm, data, out, max_steps=4, learning_rate=0.01))

    result = train_sft(_config(tiny_causal_lm, data, out, max_steps=4))
    assert result.resumed_from == "checkpoint-2" and result.global_step == 4
    steps = [step for step, _ in json.loads((out / "metrics.json").read_text())["train_loss_curve"]]
    assert steps == [1, 2, 3, 4]  # the first two steps come from the restored trainer state

    with pytest.raises(SFTConfigError, match="--overwrite"):
        train_sft(_config(tiny_causal_lm, data, out, max_steps=4))
    again = train_sft(_config(tiny_causal_lm, data, out, max_steps=1, overwrite=True))
    assert again.global_step == 1 and again.resumed_from is None


def test_flows_filter(tiny_causal_lm: Path, tmp_path: Path) -> None:
    data = _save_discussions(tmp_path / "data")
    config = _config(tiny_causal_lm, data, tmp_path / "out", flows=["MR", "PT"])
    trainer, train_stats, dev_stats = build_trainer(config, tmp_path / "out" / "checkpoints")
    assert train_stats.rows_by_flow == {"MR": 2, "PT": 2}
    assert dev_stats is not None and dev_stats.rows_by_flow == {"MR": 1, "PT": 1}
    assert len(trainer.train_dataset) == 4
    ma_answer = trainer.processing_class("no you should not lie .", add_special_tokens=False)
    for example in trainer.train_dataset:
        learned = [t for t in example["labels"] if t != -100]
        assert learned[:-1] != ma_answer["input_ids"]

    with pytest.raises(SFTConfigError, match="'flows'"):
        build_trainer(_config(tiny_causal_lm, data, tmp_path / "o2", flows=["ME"]), tmp_path / "o2")


# --------------------------------------------------------------------------- config and CLI


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("lora_r=0", "'lora_r'"),
        ("lora_r=abc", "'lora_r'"),
        ("lora_rank=8", "did you mean 'lora_r'"),
        ("flows=[MA, XX]", "'flows'"),
        ("save_steps=15", "'save_steps'"),
        ("learning_rate=-1", "'learning_rate'"),
        ("chat_template=fancy", "'chat_template'"),
        ("max_steps=0", "'max_steps'"),
        ("verdict_answers=-1", "'verdict_answers'"),
        ("data=./some-folder && verdict_answers=5", "needs data=pack:NAME"),
        ("flows=[ME] && verdict_answers=5", "'verdict_answers' are MA rows"),
    ],
)
def test_config_errors_name_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        load_sft_config(None, ["eval_steps=10", *override.split(" && ")])


def test_preset_then_file_then_overrides(tmp_path: Path) -> None:
    cfg = load_sft_config(None, ["max_steps=5"], "moral-smollm2")
    assert cfg.max_steps == 5 and cfg.base_model == "smollm2-135m-instruct"
    assert cfg.data == "pack:core" and cfg.output_dir == "models/moral-smollm2"
    path = tmp_path / "sft.yaml"
    path.write_text("lora_r: 4\nflows: [MA, MR]\n", encoding="utf-8")
    cfg = load_sft_config(path, ["lora_alpha=8"], "moral-smollm2")
    assert (cfg.lora_r, cfg.lora_alpha, cfg.flows) == (4, 8, ["MA", "MR"])
    path.write_text("lora_rr: 4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sft\.yaml.*lora_rr"):
        load_sft_config(path)
    with pytest.raises(SFTConfigError, match="unknown preset"):
        load_sft_config(None, [], "nope")


def test_cli_trains_and_reports_errors(tiny_causal_lm: Path, tmp_path: Path) -> None:
    from moralsim.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["train", "sft", "--set", "lora_r=0"])
    assert bad.exit_code == 2 and "lora_r" in bad.output
    data = _save_discussions(tmp_path / "data", copies=1)
    path = tmp_path / "sft.yaml"
    path.write_text(
        f"base_model: {tiny_causal_lm}\ndata: {data}\nmax_steps: 1\neval_steps: 1\n"
        "batch_size: 3\nlora_r: 2\n",
        encoding="utf-8",
    )
    out = tmp_path / "cli-out"
    ok = runner.invoke(app, ["train", "sft", "-c", str(path), "--output-dir", str(out)])
    assert ok.exit_code == 0, ok.output
    assert (out / "adapter_model.safetensors").is_file()
    again = runner.invoke(app, ["train", "sft", "-c", str(path), "--output-dir", str(out)])
    assert again.exit_code == 2 and "--overwrite" in again.output


@pytest.mark.slow
def test_smollm2_template_masks_the_answer_and_its_im_end_only() -> None:
    """The embedded model's own template: same prompts, default system line, no newline."""
    from transformers import AutoTokenizer

    from agents.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct").path)
    template = training_chat_template(tokenizer, "auto")
    history_ = [_u("Is it okay to lie?"), _a("Yes."), _u("But it's wrong to lie.")]
    assert tokenizer.apply_chat_template(
        history_, chat_template=template, tokenize=False, add_generation_prompt=True
    ) == tokenizer.apply_chat_template(history_, tokenize=False, add_generation_prompt=True)
    stop = end_of_turn_ids(tokenizer)
    for messages in ([*history_, _a("Sorry, you're right.")], [_a("It's wrong to lie.")]):
        row = tokenize_row(tokenizer, template, messages, 256, stop, "slow")
        assert row is not None
        answer = tokenizer(messages[-1]["content"], add_special_tokens=False)["input_ids"]
        learned = [t for t, m in zip(row.input_ids, row.completion_mask, strict=True) if m]
        assert learned == [*answer, tokenizer.convert_tokens_to_ids("<|im_end|>")]
        assert "You are a helpful AI assistant" in tokenizer.decode(row.input_ids)


def test_scientific_notation_is_a_number_in_set_and_yaml(tmp_path: Path) -> None:
    # YAML 1.1 reads 1e-4 (no dot) as a string; the config reads it as the number meant.
    assert load_sft_config(None, ["learning_rate=1e-4"]).learning_rate == 1e-4
    path = tmp_path / "sft.yaml"
    path.write_text("learning_rate: 2E-5\n", encoding="utf-8")
    assert load_sft_config(path).learning_rate == 2e-5
    with pytest.raises(ConfigError, match="'learning_rate' must be a number"):
        load_sft_config(None, ["learning_rate=1e-4x"])
