"""On-policy preference pairs (training.onpolicy_pairs): ranking by hand, sampling with a
tiny bot and a scripted judge, and the DPO `extra_pairs` key that reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from training.onpolicy_pairs import (
    STEP,
    ScoredAnswer,
    pair_row,
    ranked_pair,
    read_pairs,
    sample_pairs,
)


def test_the_best_read_answer_is_chosen_over_the_worst_when_the_judge_tells_them_apart() -> None:
    answers = [ScoredAnswer("No, leave it.", 0.8), ScoredAnswer("Maybe.", 0.1),
               ScoredAnswer("Sure, go ahead.", -0.6)]  # fmt: skip
    chosen, rejected = ranked_pair(answers, min_gap=0.5)  # type: ignore[misc]
    assert (chosen.text, rejected.text) == ("No, leave it.", "Sure, go ahead.")
    assert ranked_pair(answers, min_gap=1.5) is None  # 0.8 - (-0.6) = 1.4 < 1.5
    # the chosen answer must agree and the rejected one must not
    assert ranked_pair([ScoredAnswer("a", 0.9), ScoredAnswer("b", 0.2)], 0.5) is None
    assert ranked_pair([ScoredAnswer("a", -0.1), ScoredAnswer("b", -0.9)], 0.5) is None
    # the same text sampled twice is one answer, and blank answers are not answers
    assert ranked_pair([ScoredAnswer("a", 0.9), ScoredAnswer("a ", -0.9)], 0.5) is None
    assert ranked_pair([ScoredAnswer("a", 0.9), ScoredAnswer(" ", -0.9)], 0.5) is None


def test_rows_are_trl_preference_rows_that_read_back(tmp_path: Path) -> None:
    row = pair_row("q7", "Can I?", ScoredAnswer("No.", 0.7), ScoredAnswer("Yes.", -0.7))
    assert row["prompt"] == [{"role": "user", "content": "Can I?"}]
    assert row["chosen"] == [{"role": "assistant", "content": "No."}] and row["step"] == STEP
    assert (row["chosen_as"], row["rejected_as"]) == (0.7, -0.7)
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(row) + "\n\n")
    (pair,) = read_pairs(path)
    assert (pair.chosen, pair.rejected, pair.question_id) == ("No.", "Yes.", "q7")
    path.write_text(json.dumps(row) + "\n" + json.dumps({"prompt": []}) + "\n")
    with pytest.raises(ValueError, match=r"pairs.jsonl: line 2: bad preference row \(chosen\)"):
        read_pairs(path)


class WordJudge:
    """Reads an answer as agreeing when it holds 'no', disagreeing when it holds 'yes'."""

    def score(self, items: list[Any]) -> np.ndarray:
        words = [set(item.answer.lower().replace(",", " ").split()) for item in items]
        return np.array([0.9 if "no" in w else -0.9 if "yes" in w else 0.0 for w in words])


class ScriptedBot:
    """Answers by sampling seed: seed 0 says no, seed 1 says yes, later seeds hedge."""

    def respond(self, histories: list[Any], settings: Any) -> list[str]:
        assert settings.do_sample
        text = {0: "No, don't.", 1: "Yes, go ahead."}.get(settings.seed, "Hard to say.")
        return [text for _ in histories]


def test_sampling_asks_each_question_n_times_and_keeps_pairs_the_judge_separates() -> None:
    from agents.base import GenerationSettings
    from scenarios.pack import load_pack

    questions = load_pack("core").pack.questions_in("train")[:3]
    rows, asked = sample_pairs(ScriptedBot(), WordJudge(), questions, 3, GenerationSettings(), 0.5)
    assert asked == 3 and len(rows) == 3
    assert all(r["chosen"][0]["content"] == "No, don't." for r in rows)
    assert all(r["rejected"][0]["content"] == "Yes, go ahead." for r in rows)
    assert [r["question_id"] for r in rows] == [q.id for q in questions]
    rows, _ = sample_pairs(ScriptedBot(), WordJudge(), questions, 1, GenerationSettings(), 0.5)
    assert rows == []  # one sample per question: nothing to rank


def test_dpo_takes_extra_pairs_and_refuses_bad_or_leaking_files(tmp_path: Path) -> None:
    from scenarios.pack import load_pack
    from training.dpo import load_pairs
    from training.dpo_config import DPORunConfig
    from training.sft_config import SFTConfigError

    pack = load_pack("core").pack
    train_q, test_q = pack.questions_in("train")[0], pack.questions_in("test")[0]
    path = tmp_path / "pairs.jsonl"
    good = pair_row(
        train_q.id, train_q.question, ScoredAnswer("No.", 0.8), ScoredAnswer("Yes.", -0.8)
    )
    path.write_text(json.dumps(good) + "\n")
    base, _ = load_pairs(DPORunConfig())
    train, _ = load_pairs(DPORunConfig(extra_pairs=str(path)))
    assert len(train) == len(base) + 1 and train[-1].step == STEP
    only, dev = load_pairs(DPORunConfig(extra_pairs=str(path), steps=[]))  # the file's pairs alone
    assert [p.step for p in only] == [STEP] and dev == []
    with pytest.raises(SFTConfigError, match="or be \\[\\] with extra_pairs"):
        DPORunConfig(steps=[]).validate()
    leaking = pair_row(
        test_q.id, test_q.question, ScoredAnswer("No.", 0.8), ScoredAnswer("Yes.", -0.8)
    )
    path.write_text(json.dumps(leaking) + "\n")
    with pytest.raises(ValueError, match="held-out text"):
        load_pairs(DPORunConfig(extra_pairs=str(path)))
    with pytest.raises(SFTConfigError, match=r"'extra_pairs': .* is not a file"):
        load_pairs(DPORunConfig(extra_pairs=str(tmp_path / "none.jsonl")))
    path.write_text("{not json\n")
    with pytest.raises(SFTConfigError, match=r"'extra_pairs': .*line 1"):
        load_pairs(DPORunConfig(extra_pairs=str(path)))
