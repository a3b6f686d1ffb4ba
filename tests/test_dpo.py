"""DPO: preference pairs by hand (polarity, no split leaks), a 2-step run on a tiny model whose
adapter loads and changes outputs, resume, and config errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scenarios.rot import RoT
from scenarios.types import MoralQuestion
from training.dpo import train_dpo
from training.dpo_config import DPORunConfig
from training.dpo_pairs import HOLD_PHRASES, build_pairs, check_no_leaks, question_pairs
from training.sft_config import SFTConfigError


def question(split: str = "train", ident: str = "q1") -> MoralQuestion:
    return MoralQuestion(
        id=ident,
        question=f"Is it okay to read my sister's diary? ({ident})",
        paraphrases=("May I read my sister's diary?", "Can I look in my sister's journal?"),
        rot=RoT("It's wrong to read someone's diary without permission."),
        agree_answer="No, leave it closed. Her diary is private.",
        disagree_answer="Sure, go ahead. Siblings share everything anyway.",
        explanation="Because people have a right to their private thoughts.",
        related_question="Should I check my roommate's messages while she showers?",
        split=split,  # type: ignore[arg-type]
        related_answer="No, her messages are hers; ask her instead.",
        related_disagree_answer="Yes, a quick look won't hurt anyone.",
    )


def test_pairs_prefer_the_rot_at_every_step() -> None:
    q = question()
    pairs = question_pairs(q, seed=0)
    by_step: dict[str, list] = {}
    for p in pairs:
        by_step.setdefault(p.step, []).append(p)
    assert [len(by_step[s]) for s in ("answer", "why", "revision", "related")] == [3, 1, 1, 1]
    for p in by_step["answer"]:  # one per wording, agree over disagree
        assert (p.chosen, p.rejected) == (q.agree_answer, q.disagree_answer)
    why = by_step["why"][0]
    assert why.prompt[1] == ("assistant", q.agree_answer) and why.chosen == q.explanation
    assert why.rejected == "Because siblings share everything anyway."
    rev = by_step["revision"][0]
    assert rev.prompt[1] == ("assistant", q.disagree_answer)
    assert q.rot.text[1:] in rev.prompt[2][1]  # the push-back carries the RoT
    assert rev.chosen.endswith(q.agree_answer) and rev.rejected.endswith(q.disagree_answer)
    assert rev.rejected.startswith(HOLD_PHRASES)
    rel = by_step["related"][0]
    assert rel.prompt[-1][1].endswith(q.related_question)
    assert (rel.chosen, rel.rejected) == (q.related_answer, q.related_disagree_answer)
    row = rel.to_row()
    assert row["chosen"] == [{"role": "assistant", "content": q.related_answer}]
    assert question_pairs(q, seed=0) == pairs  # seeded phrases


def test_only_the_asked_split_and_no_leaks() -> None:
    train, test = question("train", "a"), question("test", "b")
    pairs = build_pairs([train, test], "train", seed=1)
    assert {p.question_id for p in pairs} == {"a"}
    other = MoralQuestion(
        "zzz", "Should I return a lost wallet?", ("Must I hand in a wallet I found?",),
        RoT("You should return lost property."), "Yes, return it.", "No, keep it.",
        "Because it isn't yours.", "Is it fine to keep a found phone?", "test",
    )  # fmt: skip
    check_no_leaks(pairs, [other])  # a different question: fine
    with pytest.raises(ValueError, match="held-out"):
        check_no_leaks(pairs, [question("test", "a")])  # the same texts held out
    with pytest.raises(ValueError, match="unknown DPO step"):
        build_pairs([train], "train", 0, steps=("answer", "vibes"))


def _config(model: Path, out: Path, **extra: Any) -> DPORunConfig:
    values: dict[str, Any] = dict(
        base_model=str(model), output_dir=str(out), max_steps=2, batch_size=2, eval_steps=1,
        max_eval_samples=4, max_length=96, logging_steps=1, learning_rate=0.05,
        steps=["answer", "revision"],
    )  # fmt: skip
    values.update(extra)
    return DPORunConfig(**values)


def test_two_steps_save_an_adapter_that_changes_outputs(
    tiny_causal_lm: Path, tmp_path: Path
) -> None:
    import torch

    from agents.hf import TransformersAgent, history

    out = tmp_path / "dpo"
    result = train_dpo(_config(tiny_causal_lm, out))
    assert result.global_step == 2 and result.train_pairs["answer"] > 0
    for name in ("adapter_config.json", "adapter_model.safetensors", "README.md"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dev_preference_accuracy"] is not None and metrics["global_step"] == 2
    assert len(metrics["train_loss_curve"]) == 2
    base = TransformersAgent(str(tiny_causal_lm))
    tuned = TransformersAgent(str(tiny_causal_lm), adapter=str(out))
    ids = torch.tensor([tuned.prompt_ids(history(("user", "is it okay to lie ?")), 4)])
    with torch.no_grad():
        delta = (tuned.model(ids).logits - base.model(ids).logits).abs().max().item()
    assert delta > 1e-4

    # DPO on top of that adapter: it trains further, the frozen adapter model is the reference
    again = train_dpo(_config(tiny_causal_lm, tmp_path / "dpo2", sft_adapter=str(out)))
    assert again.global_step == 2 and (tmp_path / "dpo2" / "adapter_config.json").is_file()


class _Interrupt(Exception):
    pass


def test_interrupted_run_resumes(tiny_causal_lm: Path, tmp_path: Path) -> None:
    from transformers import TrainerCallback

    class StopAfterSave(TrainerCallback):
        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 1:
                raise _Interrupt

    out = tmp_path / "run"
    with pytest.raises(_Interrupt):
        train_dpo(_config(tiny_causal_lm, out), callbacks=[StopAfterSave()])
    assert (out / "checkpoints" / "checkpoint-1").is_dir()
    with pytest.raises(SFTConfigError, match="beta"):
        train_dpo(_config(tiny_causal_lm, out, beta=0.5))
    result = train_dpo(_config(tiny_causal_lm, out))
    assert result.resumed_from == "checkpoint-1" and result.global_step == 2
    with pytest.raises(SFTConfigError, match="--overwrite"):
        train_dpo(_config(tiny_causal_lm, out))


@pytest.mark.parametrize(
    ("override", "key"),
    [("loss_type=nope", "loss_type"), ("beta=0", "beta"), ("steps=[vibes]", "steps"),
     ("data=core", "data"), ("max_steps=0", "max_steps")],
)  # fmt: skip
def test_config_errors_name_the_key(override: str, key: str) -> None:
    from moralsim.config import ConfigError
    from moralsim.train_dpo_cmd import load_dpo_config

    with pytest.raises(ConfigError, match=key):
        load_dpo_config(None, [override])


def test_cli_refuses_a_missing_sft_adapter(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    result = CliRunner().invoke(
        app, ["train", "dpo", "--preset", "moral-smollm2-dpo", "--set",
              f"sft_adapter={tmp_path / 'none'}", "--output-dir", str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 2 and "sft_adapter" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


def test_length_grouped_order_batches_similar_lengths_in_a_seeded_random_order() -> None:
    from training.dpo import length_grouped_order

    lengths = [5, 100, 6, 101, 7, 102, 8, 103]
    order = length_grouped_order(lengths, size=2, seed=0)
    assert sorted(order) == list(range(8))  # every pair once
    batches = [order[i : i + 2] for i in range(0, 8, 2)]
    # one window (8 <= 2 x 50): sorted by length, so each batch holds neighbours in length
    assert sorted(sorted(lengths[i] for i in b) for b in batches) == [
        [5, 6], [7, 8], [100, 101], [102, 103]
    ]  # fmt: skip
    assert length_grouped_order(lengths, 2, 0) == order  # seeded
    assert any(length_grouped_order(lengths, 2, s) != order for s in range(1, 6))
    # a short last batch stays last, so the full batches keep their boundaries
    odd_lengths = [*lengths, 50]
    odd = length_grouped_order(odd_lengths, size=2, seed=1)
    assert sorted(odd) == list(range(9)) and odd_lengths[odd[-1]] == 103  # the lone longest
