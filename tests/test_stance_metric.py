"""Stance accuracy (training/stance_metric.py): the arithmetic, the curve a tiny SFT run logs,
and the config errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from moralsim.config import ConfigError
from moralsim.train_sft_cmd import load_sft_config
from training.sft import train_sft
from training.sft_config import SFTConfigError, SFTRunConfig
from training.stance_metric import (
    first_answers,
    score_stances,
    stance_card_line,
    stance_metrics,
)

DATA = Path(__file__).parent / "data"


class FixedScorer:
    """A judge that returns given (agree, neutral, disagree) rows, whatever it reads."""

    def __init__(self, rows: list[list[float]]) -> None:
        self.rows = np.array(rows)
        self.seen: list[Any] = []

    def probabilities(self, items: list[Any]) -> np.ndarray:
        self.seen += items
        return self.rows[: len(items)]


def test_accuracy_counts_agreeing_answers_and_never_neutral_ones() -> None:
    scorer = FixedScorer([[0.7, 0.1, 0.2], [0.3, 0.5, 0.2], [0.1, 0.4, 0.5]])  # AS .5 .1 -.4
    pairs = [("q1", "r1"), ("q2", "r2"), ("q3", "r3")]
    result = score_stances(scorer, pairs, ["a1", "a2", "a3"], judge="fixed")
    assert result.n == 3 and result.judge == "fixed"
    # the second answer has AS > 0, but its likeliest class is neutral: not an agreeing answer
    assert result.accuracy == pytest.approx(1 / 3)
    assert (result.agree, result.neutral, result.disagree) == pytest.approx((1 / 3,) * 3)
    assert result.mean_as == pytest.approx(0.2 / 3)
    first = scorer.seen[0]
    assert (first.question, first.answer, first.rot) == ("q1", "a1", "r1")
    assert score_stances(scorer, pairs, ["a"] * 3, "fixed", threshold=0.6).accuracy == 0.0
    assert result.line("step 4") == (
        "step 4: stance accuracy 0.33 (agree 0.33 / neutral 0.33 / disagree 0.33, n=3, judge fixed)"
    )
    with pytest.raises(ValueError, match="one answer per question"):
        score_stances(scorer, pairs, ["a1"], "fixed")

    metrics = stance_metrics(
        [{"loss": 1.0, "step": 1}, {"stance_accuracy": 0.5, "stance_agree": 0.5,
          "stance_neutral": 0.25, "stance_disagree": 0.25, "step": 2}],
        result, step=2,
    )  # fmt: skip
    assert metrics["stance_curve"] == [
        {"step": 2, "accuracy": 0.5, "agree": 0.5, "neutral": 0.25, "disagree": 0.25}
    ]
    assert metrics["stance_final"]["step"] == 2 and metrics["stance_final"]["judge"] == "fixed"
    line = stance_card_line(metrics)
    assert line is not None and "`fixed`" in line and "only as valid as" in line
    assert stance_card_line(stance_metrics([], None, None)) is None


def test_generation_leaves_training_mode_and_rng_alone(tiny_causal_lm: Path) -> None:
    import torch

    from agents.models import load_causal_lm

    model, tokenizer = load_causal_lm(str(tiny_causal_lm))
    model.train()
    state = torch.get_rng_state()
    answers = first_answers(model, tokenizer, ["is it okay to lie ?"] * 3, 4, batch_size=2)
    assert len(answers) == 3 and len(set(answers)) == 1  # greedy, batch-independent
    assert model.training and torch.equal(state, torch.get_rng_state())


def _pack(folder: Path) -> Path:
    """Five questions of the sample pack: 2 train, 2 dev, 1 test."""
    folder.mkdir()
    template = (DATA / "questions_sample.jsonl").read_text(encoding="utf-8").splitlines()[0]
    rows = []
    for i, split in enumerate(("train", "train", "dev", "dev", "test"), start=1):
        row = json.loads(template.replace("1", str(i)))
        answers = {k: f"{v} ({i})" for k, v in row["answers"].items()}
        row.update(split=split, answers=answers, explanation=f"{row['explanation']} ({i})")
        rows.append(json.dumps(row))
    (folder / "questions.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "pack.yaml").write_text("name: tiny\nquestions: questions.jsonl\n")
    return folder


def test_sft_run_logs_a_stance_curve(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path
) -> None:
    out = tmp_path / "adapter"
    lines: list[str] = []
    config = SFTRunConfig(
        base_model=str(tiny_causal_lm), data=f"pack:{_pack(tmp_path / 'pack')}",
        output_dir=str(out), max_steps=2, batch_size=4, eval_steps=1, logging_steps=1,
        lora_r=2, lora_alpha=4, max_length=96, stance_eval_questions=2,
        stance_judge=str(tiny_classifier), stance_max_new_tokens=4,
    )  # fmt: skip
    result = train_sft(config, say=lines.append)
    metrics = json.loads((out / "metrics.json").read_text())
    curve = metrics["stance_curve"]
    assert [entry["step"] for entry in curve] == [1, 2]
    for entry in curve:
        assert 0 <= entry["accuracy"] <= entry["agree"] + 1e-9
        assert entry["agree"] + entry["neutral"] + entry["disagree"] == pytest.approx(1)
    final = metrics["stance_final"]
    assert final["n"] == 2 and final["judge"] == str(tiny_classifier)
    assert final["step"] == metrics["best_step"]  # the saved weights, read from their eval
    assert final["accuracy"] == next(e for e in curve if e["step"] == final["step"])["accuracy"]
    assert result.stance is not None and result.stance.accuracy == final["accuracy"]
    said = [line for line in lines if "stance accuracy" in line]
    assert said[0].startswith("step 1: stance accuracy") and "n=2, judge" in said[0]
    assert said[-1].startswith(f"final (step {final['step']})")
    card = (out / "README.md").read_text()
    assert "Stance accuracy" in card and f"`{tiny_classifier}`" in card
    assert "only as valid as that judge's scorer card" in card


def test_dpo_run_without_evaluations_measures_the_end(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path
) -> None:
    from training.dpo import train_dpo
    from training.dpo_config import DPORunConfig

    out = tmp_path / "dpo"
    config = DPORunConfig(
        base_model=str(tiny_causal_lm), data=f"pack:{_pack(tmp_path / 'pack')}",
        output_dir=str(out), max_steps=1, batch_size=2, eval_steps=0, max_length=96,
        steps=["answer"], lora_r=2, lora_alpha=4, stance_eval_questions=1,
        stance_judge=str(tiny_classifier), stance_max_new_tokens=3,
    )  # fmt: skip
    result = train_dpo(config)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stance_curve"] == []  # no evaluations, so no curve: only the end
    assert metrics["stance_final"]["step"] == 1 and metrics["stance_final"]["n"] == 1
    assert (
        result.stance is not None and "Stance accuracy (step 1)" in (out / "README.md").read_text()
    )


def test_config_errors(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app
    from moralsim.train_dpo_cmd import load_dpo_config

    with pytest.raises(ConfigError, match="'stance_eval_questions' must be >= 0"):
        load_sft_config(None, ["stance_eval_questions=-1"])
    with pytest.raises(ConfigError, match="'stance_eval_questions' must be >= 0"):
        load_dpo_config(None, ["stance_eval_questions=-3"])
    with pytest.raises(ConfigError, match="'stance_max_new_tokens'"):
        load_sft_config(None, ["stance_max_new_tokens=0"])

    # an unknown judge fails like an unknown evaluators.agreement_model, before any model loads
    out = tmp_path / "out"
    config = SFTRunConfig(output_dir=str(out), stance_eval_questions=2, stance_judge="no-judge")
    with pytest.raises(SFTConfigError, match="'stance_judge': model 'no-judge' not found"):
        train_sft(config)
    assert not out.exists()
    result = CliRunner().invoke(
        app, ["train", "sft", "--set", "stance_eval_questions=2", "--set",
              "stance_judge=no-judge", "--output-dir", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2 and "'stance_judge': model 'no-judge' not found" in result.output


def test_the_tracker_hands_the_packs_stated_directions_to_a_judge_that_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import training.stance_metric as stance_metric

    class DirectionJudge(FixedScorer):
        def use_directions(self, directions: dict[tuple[str, str], str]) -> None:
            self.directions = dict(directions)

    judge = DirectionJudge([[1.0, 0.0, 0.0]])
    monkeypatch.setattr(stance_metric, "open_judge", lambda spec: judge)
    monkeypatch.setattr(stance_metric, "check_stance_judge", lambda spec: None)
    config = SFTRunConfig(data="pack:core", stance_eval_questions=2, stance_judge="my-judge")
    tracker = stance_metric.StanceTracker.from_config(config, None, lambda line: None)
    assert tracker is not None and tracker.scorer is None  # nothing loaded before open()
    tracker.open()
    (question, rot), *_ = tracker.pairs
    assert judge.directions[(question, rot)] in ("for", "against", "open", "unrelated")
    assert len(judge.directions) > 1000  # the core pack states every (question, RoT) pair
