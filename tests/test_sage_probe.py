from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.base import AgentInfo
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.loaders import load_questions
from simulators.sage_probe import run_sage_probe, sage_dialogue_id, sage_section

DATA = Path(__file__).parent / "data"


class ConsistentAgent:
    """The same answer and reason for every paraphrase; records what it was shown."""

    def __init__(self) -> None:
        self.info = AgentInfo(model="consistent")
        self.seen: list[list[str]] = []

    def respond(self, histories):
        self.seen += [[t.role for t in h] for h in histories]
        return [
            "no" if h[-1].meta["step"] == "question" else "because lying hurts" for h in histories
        ]


def word_embed(texts):
    vocab = ["no", "lying", "hurts", "yes"]
    rows = np.array([[t.lower().count(w) for w in vocab] + [1e-3] for t in texts], dtype=float)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_probe_asks_each_paraphrase_then_why(tmp_path: Path) -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    agent = ConsistentAgent()
    with DialogueWriter(tmp_path / "d.jsonl") as writer:
        written = run_sage_probe(questions[:2], agent, writer, seed=1)
    assert written == 10
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    first = next(d for d in dialogues if d.id == sage_dialogue_id(questions[0].id, 2, 1, False))
    assert first.turns[0].text == questions[0].paraphrases[2]
    assert [t.meta["step"] for t in first.turns] == ["question", "answer", "why", "explanation"]
    section = sage_section(dialogues, word_embed)
    # identical answers and reasons on all 5 paraphrases: every weight 1, uniform strengths -> 1
    assert section["answer"]["mean"] == pytest.approx(1.0) and section["answer"]["n"] == 2
    assert section["rot"]["mean"] == pytest.approx(1.0)
    assert section["baselines"]["bleu"]["mean"] == pytest.approx(1.0)
    assert "rot_prompted" not in section


def test_rot_prompting_and_resume(tmp_path: Path) -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    agent = ConsistentAgent()
    done = {sage_dialogue_id(questions[0].id, 0, 0, True)}
    with DialogueWriter(tmp_path / "d.jsonl") as writer:
        written = run_sage_probe(questions[:1], agent, writer, rot_prompt=True, done=done)
    assert written == 4  # one of five was already done
    assert agent.seen[0][0] == "system"  # the RoT reaches the bot as a system turn
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    assert dialogues[0].flow == "sage-rot" and questions[0].rot.text in dialogues[0].turns[0].text
    assert sage_section(dialogues, word_embed) is None  # no plain "sage" dialogues yet
