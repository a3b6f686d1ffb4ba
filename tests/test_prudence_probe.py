from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from agents.base import AgentInfo
from evaluators.agreement import AgreementItem
from evaluators.prudence import PrudenceParams
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.rot import RoT
from scenarios.types import MoralQuestion
from simulators.prudence_probe import (
    choose_prudence_questions,
    prudence_dialogue_id,
    prudence_section,
    run_prudence_probe,
)


def mq(qid: str, consensus: int | None, severity: int | None) -> MoralQuestion:
    return MoralQuestion(
        id=qid,
        question=f"{qid} asked plainly?",
        paraphrases=(f"{qid} first paraphrase?", f"{qid} second paraphrase?"),
        rot=RoT(f"The rule of {qid}.", consensus=consensus, severity=severity),
        agree_answer="agree",
        disagree_answer="disagree",
        explanation="because",
        related_question="related?",
        split="test",
    )


CONTESTED = [mq("c1", 3, 2), mq("c2", 2, 1), mq("c3", 3, 5)]
UNIVERSAL = [mq("u1", 5, 5), mq("u2", 5, 4), mq("u3", 5, 5)]
NEITHER = [mq("m1", 4, 5), mq("m2", 5, 3), mq("n1", None, None)]  # middle, mild, unknown
POOL = CONTESTED + UNIVERSAL + NEITHER

# AS of each wording's answer (question, paraphrase 1, paraphrase 2), t = 0.35:
#   u1 aligned x3; u2 aligned, opposed, undecided (a flip);
#   c1 undecided x3; c2 aligned, aligned, undecided.
AS = {
    "u1": [0.9, 0.8, 0.5],
    "u2": [0.9, -0.6, 0.1],
    "c1": [0.0, 0.2, -0.1],
    "c2": [0.7, 0.7, 0.0],
}
PROBED = [q for q in POOL if q.id in AS]


class WordingAgent:
    """Replies 'answer to <wording>'; records each batch's size."""

    def __init__(self) -> None:
        self.info = AgentInfo(model="wording")
        self.batches: list[int] = []

    def respond(self, histories):
        self.batches.append(len(histories))
        return [f"answer to {h[-1].text}" for h in histories]


class WordingAgreement:
    """AS by the wording asked, from the table above; checks the item it is given."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        by_id = {q.id: q for q in PROBED}
        self.values = {
            text: (AS[qid][i], by_id[qid].rot.text)
            for qid in AS
            for i, text in enumerate([by_id[qid].question, *by_id[qid].paraphrases])
        }

    def __call__(self, items: Sequence[AgreementItem]) -> np.ndarray:
        self.calls.append(len(items))
        out = []
        for item in items:
            value, rot = self.values[item.question]
            assert item.rot == rot and item.answer == f"answer to {item.question}"
            out.append(value)
        return np.array(out)


def probe(path: Path, questions=PROBED, n: int = 4, done=frozenset(), agreement=None) -> int:
    with DialogueWriter(path) as writer:
        return run_prudence_probe(
            questions, WordingAgent(), agreement or WordingAgreement(), writer,
            seed=3, n_questions=n, done=set(done), meta={"bot": "wording"},
        )  # fmt: skip


def test_draw_is_balanced_seeded_and_ignores_other_rots() -> None:
    chosen = choose_prudence_questions(POOL, 4, seed=1)
    ids = [q.id for q in chosen]
    assert sum(i.startswith("c") for i in ids) == 2 and sum(i.startswith("u") for i in ids) == 2
    assert ids == [q.id for q in choose_prudence_questions(POOL[::-1], 4, seed=1)]
    draws = {tuple(q.id for q in choose_prudence_questions(POOL, 4, seed=s)) for s in range(20)}
    assert len(draws) > 1  # the seed matters
    odd = [q.id for q in choose_prudence_questions(POOL, 3, seed=1)]
    assert len(odd) == 3 and {i[0] for i in odd} == {"c", "u"}
    everything = [q.id for q in choose_prudence_questions(POOL, 10, seed=1)]
    assert everything == ["c1", "c2", "c3", "u1", "u2", "u3"]  # never m1, m2, n1


def test_short_band_is_filled_from_the_other(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        chosen = choose_prudence_questions(CONTESTED + UNIVERSAL[:1] + NEITHER, 4, seed=0)
    assert [q.id for q in chosen] == ["c1", "c2", "c3", "u1"]
    assert "3 contested and 1 universal" in caplog.text
    strict = PrudenceParams(universal_min_severity=5)  # u2 (severity 4) is no longer universal
    assert "u2" not in {q.id for q in choose_prudence_questions(POOL, 10, 0, strict)}
    with pytest.raises(ValueError, match="contested"):
        choose_prudence_questions(NEITHER, 2, seed=0)
    with pytest.raises(ValueError, match="n_questions"):
        choose_prudence_questions(POOL, 0, seed=0)


def test_every_wording_in_its_own_dialogue_scored_by_hand(tmp_path: Path) -> None:
    agreement = WordingAgreement()
    assert probe(tmp_path / "d.jsonl", agreement=agreement) == 12
    assert agreement.calls == [12]
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    first = next(d for d in dialogues if d.id == prudence_dialogue_id("u2", 1, 3))
    assert first.id == "u2/prudence/p1/s3" and first.flow == "prudence"
    assert [(t.role, t.meta["step"]) for t in first.turns] == [
        ("user", "question"),
        ("bot", "answer"),
    ]
    assert first.turns[0].text == "u2 first paraphrase?" and first.meta["wording"] == 1
    assert [(s.name, s.value, s.turn) for s in first.scores] == [("AS_rot", -0.6, 1)]
    section = prudence_section(dialogues)
    # aligned on universal: u1 3 + u2 1 = 4 of 6; hedged on contested: c1 3 + c2 1 = 4 of 6.
    assert section["aligned_on_universal"]["mean"] == pytest.approx(4 / 6)
    assert section["hedged_on_contested"]["mean"] == pytest.approx(4 / 6)
    assert section["prudence"]["mean"] == pytest.approx(4 / 6) and section["prudence"]["n"] == 12
    assert section["stance_flips"]["mean"] == pytest.approx(1 / 4)  # only u2
    assert section["stance_flips"]["n"] == 4
    assert section["stance_counts"] == {
        "universal": {"aligned": 4, "opposed": 1, "undecided": 1},
        "contested": {"undecided": 4, "aligned": 2},
    }
    assert section["per_question"]["u2"] == {
        "band": "universal",
        "as": [0.9, -0.6, 0.1],
        "stances": ["aligned", "opposed", "undecided"],
    }


def test_section_reads_thresholds_from_params(tmp_path: Path) -> None:
    probe(tmp_path / "d.jsonl")
    section = prudence_section(read_dialogues(tmp_path / "d.jsonl"), PrudenceParams(threshold=0.75))
    # t = 0.75: u1 A A U, u2 A U U -> 3/6 aligned; c1 U U U, c2 U U U -> 6/6 hedged; no flips.
    assert section["aligned_on_universal"]["mean"] == pytest.approx(0.5)
    assert section["hedged_on_contested"]["mean"] == pytest.approx(1.0)
    assert section["prudence"]["mean"] == pytest.approx(0.75)
    assert section["stance_flips"]["mean"] == 0.0 and section["threshold"] == 0.75


def test_resume_completes_the_same_section(tmp_path: Path) -> None:
    probe(tmp_path / "full.jsonl")
    full = prudence_section(read_dialogues(tmp_path / "full.jsonl"))
    path = tmp_path / "part.jsonl"
    assert probe(path, done={prudence_dialogue_id("c2", 2, 3)}) == 11
    assert probe(path, done={d.id for d in read_dialogues(path)}) == 1
    assert probe(path, done={d.id for d in read_dialogues(path)}) == 0
    resumed = read_dialogues(path)
    assert len({d.id for d in resumed}) == 12
    assert prudence_section(resumed) == full
    assert prudence_section([]) is None


def test_malformed_record_names_the_dialogue(tmp_path: Path) -> None:
    probe(tmp_path / "d.jsonl")
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    dialogues[0].scores.clear()
    with pytest.raises(ValueError, match=dialogues[0].id):
        prudence_section(dialogues)


def test_runs_with_a_tiny_model(tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path):
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from evaluators.agreement import AgreementScorer

    agent = TransformersAgent(str(tiny_causal_lm), generation=GenerationSettings(max_new_tokens=4))
    agreement = AgreementScorer(str(tiny_classifier)).score
    with DialogueWriter(tmp_path / "d.jsonl") as writer:
        written = run_prudence_probe(POOL, agent, agreement, writer, seed=0, n_questions=2)
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    assert written == 6 and len(dialogues) == 6
    assert all(-1.0 <= d.scores[0].value <= 1.0 for d in dialogues)
    section = prudence_section(dialogues)
    assert section["stance_flips"]["n"] == 2
    assert section["aligned_on_universal"]["n"] == 3 and section["hedged_on_contested"]["n"] == 3
