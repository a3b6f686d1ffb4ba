from __future__ import annotations

from pathlib import Path

from evaluators.moraldial import MoralDialParams, MoralDialScorer
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.loaders import load_questions
from simulators.inprocess import InProcessRunner, dialogue_id
from tests.test_moraldial import TableAgreement
from tests.test_repl import EchoAgent

DATA = Path(__file__).parent / "data"


class StepAgent:
    """Answers by step: 'yes' to the question (disagreeing with the RoT), 'no' after push-back."""

    def __init__(self) -> None:
        from agents.base import AgentInfo

        self.info = AgentInfo(model="step")
        self.batches: list[int] = []

    def respond(self, histories):
        self.batches.append(len(histories))
        out = []
        for h in histories:
            step = h[-1].meta["step"]
            out.append(
                {"question": "yes", "why": "because it is fine", "pushback": "no", "related": "no"}[
                    step
                ]
            )
        return out


def run(tmp_path: Path, agreement: dict, agent=None, done=frozenset()):
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    scorer = MoralDialScorer(TableAgreement(agreement))
    runner = InProcessRunner(
        agent or StepAgent(), scorer, MoralDialParams(), seed=3, meta={"bot": "step"}
    )
    path = tmp_path / "dialogues.jsonl"
    with DialogueWriter(path) as writer:
        stats = runner.run(questions, writer, set(done))
    return questions, stats, read_dialogues(path)


def test_pushback_happens_only_when_the_bot_disagrees(tmp_path: Path) -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    table = {("yes", q.rot.text): -0.6 for q in questions[:2]}  # first two disagree, others 0.0
    table.update({("no", q.rot.text): 0.8 for q in questions})
    _, stats, dialogues = run(tmp_path, table)
    assert stats.dialogues == 4
    by_id = {d.scenario_id: d for d in dialogues}
    pushed = by_id[questions[0].id]
    steps = [t.meta["step"] for t in pushed.turns]
    assert steps == [
        "question",
        "answer",
        "why",
        "explanation",
        "pushback",
        "revision",
        "related",
        "new_answer",
    ]
    assert pushed.turns[4].meta["firm"] and pushed.turns[4].text.endswith(questions[0].rot.text[1:])
    scores = {s.name: s.value for s in pushed.scores}
    assert scores["S_MR1"] == -0.6 and scores["S_MR2"] == 0.8 and scores["S_MR"] == 1.0
    assert abs(scores["dS_MR"] - 1.4) < 1e-9 and scores["S_RIL"] == 0.8
    # S_MR1 = 0.0 is below 0.35, so these are pushed back too, but gently; a high S_MR1 is not.
    mild = by_id[questions[2].id]
    assert mild.turns[4].meta == {"step": "pushback", "firm": False}
    assert pushed.hidden_rot == questions[0].rot and pushed.meta["split"] == "train"
    assert pushed.id == dialogue_id(questions[0].id, "moraldial", 3)
    assert pushed.turns[6].meta["question"] == questions[0].related_question


def test_no_pushback_when_the_bot_agrees(tmp_path: Path) -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    table = {("yes", q.rot.text): 0.9 for q in questions}
    agent = StepAgent()
    _, _, dialogues = run(tmp_path, table, agent)
    for d in dialogues:
        assert [t.meta["step"] for t in d.turns if t.role == "user"] == [
            "question",
            "why",
            "related",
        ]
        assert {s.name for s in d.scores} >= {"S_MR1", "S_ME", "S_RIL", "S_MR"}
        assert "S_MR2" not in {s.name for s in d.scores}
    assert agent.batches == [4, 4, 4]  # every round is one batch over all dialogues


def test_resume_skips_finished_dialogues(tmp_path: Path) -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    done = {dialogue_id(questions[0].id, "moraldial", 3)}
    _, stats, dialogues = run(tmp_path, {}, EchoAgent(), done)
    assert stats.skipped == 1 and len(dialogues) == 3
