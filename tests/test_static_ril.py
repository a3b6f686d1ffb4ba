from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agents.base import AgentInfo
from evaluators.moraldial import MoralDialScorer
from evaluators.report_html import render_report
from evaluators.summary import build_summary
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.loaders import load_questions
from scenarios.phrases import BASE, WHY
from scenarios.records import Dialogue, Score
from simulators.static_ril import run_static_ril, static_ril_dialogue_id
from tests.test_moraldial import TableAgreement
from tests.test_report_html import Page

DATA = Path(__file__).parent / "data"
STEPS = ["question", "answer", "why", "explanation", "related", "new_answer"]


class RecordingAgent:
    """Answers every history with a fixed text and keeps what it was shown."""

    def __init__(self, reply: str = "no, ask first") -> None:
        self.info = AgentInfo(model="recording")
        self.reply = reply
        self.batches: list[list[list[str]]] = []

    def respond(self, histories):
        self.batches.append([[t.meta["step"] for t in h] for h in histories])
        return [self.reply for _ in histories]


def questions():
    return load_questions(DATA / "questions_sample.jsonl")[0]


def run(tmp_path: Path, table: dict, agent=None, done=frozenset(), seed: int = 2):
    qs = questions()
    agreement = TableAgreement(table)
    agent = agent or RecordingAgent()
    path = tmp_path / "dialogues.jsonl"
    with DialogueWriter(path) as writer:
        written = run_static_ril(
            qs, agent, MoralDialScorer(agreement), writer, seed=seed, done=set(done),
            meta={"bot": "recording"},
        )  # fmt: skip
    return written, read_dialogues(path), agent, agreement


def test_context_is_given_and_only_the_new_answer_is_scored(tmp_path: Path) -> None:
    qs = questions()
    # Hand-picked AS per (answer, RoT): the given answer and explanation would score 0.9 and
    # the bot's new answer 0.4 (first two) or -0.2 (the others).
    table = {(q.agree_answer, q.rot.text): 0.9 for q in qs}
    table.update({(q.explanation, q.rot.text): 0.9 for q in qs})
    table.update({("no, ask first", q.rot.text): 0.4 for q in qs[:2]})
    table.update({("no, ask first", q.rot.text): -0.2 for q in qs[2:]})
    written, dialogues, agent, agreement = run(tmp_path, table)
    assert written == 4 and len(dialogues) == 4
    # One batched bot call over all four, each shown the whole given context ending with Q_new.
    assert agent.batches == [[STEPS[:-1]] * 4]
    assert agreement.calls == [4]  # one AS per dialogue: A_new only, never the given turns
    by_q = {d.scenario_id: d for d in dialogues}
    for q in qs:
        d = by_q[q.id]
        assert d.id == static_ril_dialogue_id(q.id, 2) == f"{q.id}/static-ril/s2"
        assert d.flow == "static-ril" and d.hidden_rot == q.rot
        assert [t.meta["step"] for t in d.turns] == STEPS
        assert [t.role for t in d.turns] == ["user", "bot", "user", "bot", "user", "bot"]
        assert d.turns[0].text == q.question and d.turns[0].meta["question"] == q.question
        assert d.turns[1].text == q.agree_answer and d.turns[3].text == q.explanation
        assert d.turns[1].meta["given"] is True and d.turns[3].meta["given"] is True
        assert "given" not in d.turns[5].meta and d.turns[5].text == "no, ask first"
        assert d.turns[2].text in WHY
        base = d.turns[4].text.removesuffix(q.related_question)
        assert base in BASE and d.turns[4].meta["question"] == q.related_question
        assert d.meta["split"] == q.split and d.meta["bot"] == "recording"
        assert [(s.name, s.turn) for s in d.scores] == [("S_RIL", 5)]
    assert by_q[qs[0].id].scores[0].value == 0.4 and by_q[qs[3].id].scores[0].value == -0.2


def test_scored_on_the_related_question(tmp_path: Path) -> None:
    seen = []

    class Spy(TableAgreement):
        def __call__(self, items):
            seen.extend(items)
            return super().__call__(items)

    qs = questions()
    path = tmp_path / "d.jsonl"
    with DialogueWriter(path) as writer:
        run_static_ril(qs[:1], RecordingAgent(), MoralDialScorer(Spy({})), writer, seed=0)
    # Q_new is the bare related question, not the base phrase in front of it.
    assert [(i.question, i.answer, i.rot) for i in seen] == [
        (qs[0].related_question, "no, ask first", qs[0].rot.text)
    ]


def test_seeded_phrases_and_resume(tmp_path: Path) -> None:
    _, first, _, _ = run(tmp_path / "a", {})
    _, again, _, _ = run(tmp_path / "b", {})
    assert [d.to_dict() for d in first] == [d.to_dict() for d in again]
    qs = questions()
    done = {static_ril_dialogue_id(qs[1].id, 2)}
    written, rest, agent, _ = run(tmp_path / "c", {}, done=done)
    assert written == 3 and qs[1].id not in {d.scenario_id for d in rest}
    assert len(agent.batches[0]) == 3
    written, _, agent, _ = run(tmp_path / "d", {}, done={d.id for d in first})
    assert written == 0 and agent.batches == []  # nothing pending: the bot is not called


def test_missing_reference_text_is_a_clear_error(tmp_path: Path) -> None:
    q = dataclasses.replace(questions()[0], explanation=" ")
    with DialogueWriter(tmp_path / "d.jsonl") as writer, pytest.raises(ValueError) as err:
        run_static_ril([q], RecordingAgent(), MoralDialScorer(TableAgreement({})), writer)
    assert q.id in str(err.value) and "explanation" in str(err.value)


def test_summary_keeps_static_and_interactive_s_ril_apart(tmp_path: Path) -> None:
    qs = questions()
    table = {
        ("no, ask first", q.rot.text): v for q, v in zip(qs, [0.4, 0.2, -0.2, 0.0], strict=True)
    }
    _, static, _, _ = run(tmp_path, table)
    interactive = Dialogue("x/moraldial/s2", "x", "moraldial", scores=[Score("S_RIL", 0.9, turn=7)])
    summary = build_summary([*static, interactive])
    assert summary["metrics"]["S_RIL"]["mean"] == 0.9 and summary["metrics"]["S_RIL"]["n"] == 1
    section = summary["static_ril"]["S_RIL"]
    # (0.4 + 0.2 - 0.2 + 0.0) / 4 = 0.1; consensus 4, 3, 4, 4 -> (0.4 - 0.2 + 0.0) / 3 and 0.2
    assert section["mean"] == pytest.approx(0.1) and section["n"] == 4
    assert [q.rot.consensus for q in qs] == [4, 3, 4, 4]
    assert section["by"]["consensus"]["4"]["mean"] == pytest.approx(0.2 / 3)
    assert section["by"]["consensus"]["contested (<=3)"]["mean"] == pytest.approx(0.2)
    assert section["label"] == "inference, context given"
    assert "static_ril" not in build_summary([interactive])
    page = Page(render_report(summary))
    row = page.row("metric", "S_RIL (static)", "Static RIL")
    assert (row["mean ×100"], row["n"]) == ("10.0", "4")
    assert page.row("metric", "S_RIL")["mean ×100"] == "90.0"  # the interactive table
    assert "Static RIL" not in "".join(Page(render_report(build_summary([interactive]))).text)


def test_runs_with_a_tiny_model(tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path):
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from evaluators.agreement import AgreementScorer

    agent = TransformersAgent(str(tiny_causal_lm), generation=GenerationSettings(max_new_tokens=4))
    scorer = MoralDialScorer(AgreementScorer(str(tiny_classifier)).score)
    with DialogueWriter(tmp_path / "d.jsonl") as writer:
        written = run_static_ril(questions()[:2], agent, scorer, writer, seed=1)
    dialogues = read_dialogues(tmp_path / "d.jsonl")
    assert written == 2 and [len(d.turns) for d in dialogues] == [6, 6]
    for d in dialogues:
        (score,) = d.scores
        assert score.name == "S_RIL" and score.turn == 5 and -1.0 <= score.value <= 1.0
