"""Discussion construction: every flow rule on hand-counted corpora, PT forms, splits, stats."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from datasets import DatasetDict, load_from_disk
from typer.testing import CliRunner

from moralsim.cli import app
from scenarios.loaders import ScenarioLoadError, load_social_chem
from scenarios.pack import load_pack
from scenarios.phrases import BASE, BUT, SORRY, WHY
from scenarios.rot import RoT
from scenarios.types import MoralQuestion
from training.discussion_sources import load_general_dialogues, normalise
from training.discussions import (
    BuildReport,
    DiscussionConfig,
    DiscussionError,
    build_discussions,
    check_disjoint_splits,
    discussion_stats,
    save_discussions,
    to_dataset,
)
from training.pt_statements import pt_statement

SC101 = Path(__file__).resolve().parents[2] / "shared" / "data" / "social_chem_101"
LIE = "It's wrong to lie to your friends."


def question(qid: str, rot: str, consensus: int, split: str) -> MoralQuestion:
    return MoralQuestion(
        id=qid,
        question=f"Question {qid}?",
        paraphrases=(f"Paraphrase of {qid}?",),
        rot=RoT(rot, consensus=consensus, severity=3),
        agree_answer=f"Agreeing answer {qid}.",
        disagree_answer=f"Disagreeing answer {qid}.",
        explanation="Because.",
        related_question=f"Related to {qid}?",
        split=split,  # type: ignore[arg-type]
    )


QUESTIONS = [
    question("q1", LIE, 5, "train"),
    question("q2", "It's okay to eat meat.", 3, "train"),  # contested
    question("q3", "it's wrong to lie to your friends", 4, "train"),  # q1's RoT, other spelling
    question("q4", "You should return lost wallets.", 5, "test"),
    question("q5", "It's rude to interrupt people.", 4, "dev"),
    question("q6", "You should return lost wallets.", 5, "train"),  # shares q4's (test) RoT
]


def rows(dataset: DatasetDict, flow: str, split: str | None = None) -> list[dict]:
    out = []
    for name, part in dataset.items():
        if split in (None, name):
            out += [r for r in part if r["flow"] == flow]
    return out


def counts(dataset: DatasetDict) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for split, part in dataset.items():
        for flow, n in Counter(part["flow"]).items():
            table.setdefault(flow, {})[split] = n
    return table


def build(**kwargs) -> tuple[DatasetDict, BuildReport]:
    report = BuildReport()
    questions = kwargs.pop("questions", None)
    config = DiscussionConfig(pack=None, **kwargs)
    return build_discussions(config, questions=questions, report=report), report


# ------------------------------------------------------------------ core-pack questions


def test_core_questions_hand_counted() -> None:
    data, report = build(questions=QUESTIONS)
    # q6 is dropped (its RoT is q4's, which is in test); q2 is contested; q1 and q3 share an RoT.
    assert counts(data) == {
        "MA": {"train": 2, "dev": 1, "test": 1},  # q1 q3 | q5 | q4
        "ME": {"train": 3, "dev": 1, "test": 1},  # q1 q2 q3 | q5 | q4
        "MR": {"train": 2, "dev": 1, "test": 1},  # q1 q3 | q5 | q4
        "RIL": {"train": 2},  # q1 <-> q3
        "PT": {"train": 2, "dev": 1, "test": 1},  # lie, meat | interrupt | wallets
    }
    assert report.dropped == {
        "MA: answer disagrees with its RoT": 5,
        "MA: revised answer on an RoT without high consensus": 1,
        "MR: revision toward an RoT without high consensus": 1,
        "RIL: no other question with a reference answer shares the RoT": 3,
        "PT: RoT already stated": 1,
        "questions: train answer shares a question or RoT with test": 2,
        "questions: train RoT shares a question or RoT with test": 1,
    }
    assert report.pt_statements == {"questions: RoT text as written": 4}
    assert "q6" not in data["train"]["question_id"]


def test_core_flow_messages_follow_the_mapping() -> None:
    data, _ = build(questions=QUESTIONS)
    (ma,) = [r for r in rows(data, "MA", "test")]
    assert ma["messages"] == [
        {"role": "user", "content": "Question q4?"},
        {"role": "assistant", "content": "Agreeing answer q4."},
    ]
    assert {r["messages"][-1]["content"] for r in rows(data, "MA")} == {
        "Agreeing answer q1.",
        "Agreeing answer q3.",
        "Agreeing answer q4.",
        "Agreeing answer q5.",
    }
    (me,) = [r for r in rows(data, "ME", "test")]
    assert [m["role"] for m in me["messages"]] == ["user", "assistant", "user", "assistant"]
    assert me["messages"][1]["content"] == "Agreeing answer q4."
    assert me["messages"][2]["content"] in WHY
    assert me["messages"][3]["content"] == "You should return lost wallets."
    (mr,) = [r for r in rows(data, "MR", "test")]
    user, revision = mr["messages"][2]["content"], mr["messages"][3]["content"]
    assert mr["messages"][1]["content"] == "Disagreeing answer q4."
    assert any(user.startswith(p) for p in BUT) and "return lost wallets" in user
    sorry = next(p for p in SORRY if revision.startswith(p))
    assert revision == f"{sorry} Agreeing answer q4."
    for r in (ma, me, mr):
        assert (r["question_id"], r["source"], r["flow"] in ("MA", "ME", "MR")) == (
            "q4",
            "questions",
            True,
        )


def test_ril_needs_another_question_with_the_same_rot() -> None:
    data, _ = build(questions=QUESTIONS)
    ril = {r["question_id"]: r["messages"] for r in rows(data, "RIL")}
    assert set(ril) == {"q1", "q3"}  # q2, q4, q5 have no other question with their RoT
    for qid, other in (("q1", "q3"), ("q3", "q1")):
        messages = ril[qid]
        context, ask, answer = messages[:-2], messages[-2]["content"], messages[-1]["content"]
        assert len(context) == 4 and context[0]["content"] == f"Question {qid}?"
        assert any(ask == p + f"Question {other}?" for p in BASE)
        assert answer == f"Agreeing answer {other}."
    # Alone, q1 has no RIL row: its related_question has no reference answer.
    alone, report = build(questions=[QUESTIONS[0]])
    assert not rows(alone, "RIL")
    assert report.dropped["RIL: no other question with a reference answer shares the RoT"] == 1


def test_a_related_answer_gives_ril_rows_both_ways() -> None:
    import dataclasses

    q1 = dataclasses.replace(QUESTIONS[0], related_answer="No, tell him the truth.")
    data, _ = build(questions=[q1])
    ril = {r["question_id"]: r["messages"] for r in rows(data, "RIL")}
    assert set(ril) == {"q1", "q1:related"}
    assert ril["q1"][0]["content"] == "Question q1?"
    assert ril["q1"][-2]["content"].endswith("Related to q1?")
    assert ril["q1"][-1]["content"] == "No, tell him the truth."
    assert ril["q1:related"][0]["content"] == "Related to q1?"
    assert ril["q1:related"][-1]["content"] == "Agreeing answer q1."
    # the related answer also serves MA and ME (it follows a high-consensus RoT)
    assert {r["question_id"] for r in rows(data, "MA")} == {"q1", "q1:related"}


def test_same_seed_same_rows_other_seed_other_phrases() -> None:
    a, _ = build(questions=QUESTIONS, seed=1)
    b, _ = build(questions=QUESTIONS, seed=1)
    assert a["train"].to_list() == b["train"].to_list()
    phrases = {
        tuple(m["content"] for m in r["messages"])
        for seed in range(6)
        for r in rows(build(questions=QUESTIONS, seed=seed)[0], "MR")
    }
    assert len(phrases) > 4


def test_flows_filter_and_cap() -> None:
    data, report = build(questions=QUESTIONS, flows=("ME", "MR"), max_per_flow=2)
    assert counts(data) == {
        "ME": {"train": 2, "dev": 1, "test": 1},
        "MR": {"train": 2, "dev": 1, "test": 1},
    }
    assert report.capped == {"ME/train": 1}
    assert "MA: answer disagrees with its RoT" not in report.dropped


def test_config_errors_name_the_field() -> None:
    with pytest.raises(DiscussionError, match="flows: unknown XX"):
        DiscussionConfig(flows=("MA", "XX"))
    with pytest.raises(DiscussionError, match="pt_swap_prob: must be in"):
        DiscussionConfig(pt_swap_prob=1.5)
    with pytest.raises(DiscussionError, match="max_per_flow"):
        DiscussionConfig(max_per_flow=0)


# ------------------------------------------------------------------ MIC


SNOOP = "You shouldn't snoop on your partner"
MIC_CSV = f"""Q,A,rot,A_agrees,rot-agree,violation-severity,moral,split
Can I read my partner's texts?,"Sure, go ahead.",{SNOOP}.,0,5,3,care,train
Can I read my partner's texts?,"No, respect their privacy.",{SNOOP}.,2,5,3,care,train
Is it fine to ignore my mom's calls?,"Yes, you need space.",Call your parents.,0,2,2,loyalty,train
Is ghosting okay?,It depends.,It's rude to ghost people.,1,4,2,care,dev
May I look through my wife's phone?,"No, that's her private space.",{SNOOP},2,5,3,care,train
"""


def test_mic_uses_the_corpus_labels(tmp_path: Path) -> None:
    path = tmp_path / "mic.csv"
    path.write_text(MIC_CSV)
    data, report = build(mic_files=(str(path),))
    assert counts(data) == {
        "MA": {"train": 2, "dev": 1},  # agree x2 | neutral; both disagreeing answers dropped
        "ME": {"train": 2},  # the two agreeing answers
        "MR": {"train": 1},  # line 2 -> line 3; line 4's RoT is contested
        "RIL": {"train": 2},  # partner's texts <-> wife's phone (same RoT)
        "PT": {"train": 2, "dev": 1},  # snoop, stay in touch | ghost
    }
    assert report.dropped["MA: answer disagrees with its RoT"] == 2
    assert report.dropped["MR: revision toward an RoT without high consensus"] == 1
    assert report.dropped["PT: RoT already stated"] == 2
    (mr,) = rows(data, "MR")
    assert [m["content"] for m in mr["messages"][:2]] == [
        "Can I read my partner's texts?",
        "Sure, go ahead.",
    ]
    assert mr["messages"][3]["content"].endswith(" No, respect their privacy.")
    assert mr["question_id"] == "mic:2"
    ril = {r["question_id"]: r["messages"][-1]["content"] for r in rows(data, "RIL")}
    assert ril == {"mic:2": "No, that's her private space.", "mic:6": "No, respect their privacy."}


def test_bad_mic_row_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mic.csv"
    path.write_text(MIC_CSV.replace(",0,2,2,loyalty", ",7,2,2,loyalty"))
    with pytest.raises(ScenarioLoadError, match=r"line 4, field 'A_agrees'"):
        build(mic_files=(str(path),))


# ------------------------------------------------------------------ PT statements


SC_ROT = RoT(
    "It's good to help your friends.",
    judgment="It's good",
    action="helping your friends.",
    situation="My friend is sad",
)


def test_pt_statement_forms() -> None:
    rng = random.Random(0)
    swapped = pt_statement(SC_ROT, rng, include_situation_prob=1.0, swap_prob=1.0)
    assert swapped.from_fields
    assert swapped.text in {
        "When my friend is sad, it's good helping your friends.",
        "If my friend is sad, it's good helping your friends.",
    }
    plain = pt_statement(SC_ROT, rng, include_situation_prob=1.0, swap_prob=0.0).text
    assert plain in {
        "It's good helping your friends when my friend is sad.",
        "It's good helping your friends if my friend is sad.",
    }
    dropped = pt_statement(SC_ROT, rng, include_situation_prob=0.0, swap_prob=1.0).text
    assert dropped == "It's good helping your friends."
    bare = pt_statement(RoT("Be kind."), rng, include_situation_prob=1.0, swap_prob=1.0)
    assert (bare.text, bare.from_fields) == ("Be kind.", False)


def test_pt_seeded_mix_of_forms() -> None:
    def forms(seed: int) -> list[str]:
        rng = random.Random(seed)
        return [
            pt_statement(SC_ROT, rng, include_situation_prob=0.5, swap_prob=0.5).text
            for _ in range(40)
        ]

    assert forms(7) == forms(7) and forms(7) != forms(8)
    kinds = Counter(
        "dropped" if "sad" not in t else "swapped" if t.startswith(("When", "If")) else "plain"
        for t in forms(7)
    )
    assert set(kinds) == {"dropped", "swapped", "plain"}
    # A fixed seed gives a fixed statement: the first of seed 7, recomputed by hand from the
    # generator's three draws (keep?, connective, swap?).
    rng = random.Random(7)
    keep, connective, swap = rng.random(), rng.choice(("when", "if")), rng.random()
    expected = (
        "It's good helping your friends."
        if keep >= 0.5
        else f"{connective.capitalize()} my friend is sad, it's good helping your friends."
        if swap < 0.5
        else f"It's good helping your friends {connective} my friend is sad."
    )
    assert forms(7)[0] == expected


def test_social_chem_sample_gives_pt_only(tmp_path: Path) -> None:
    sample = Path(__file__).parent / "data" / "social_chem_sample.tsv"
    loaded, _ = load_social_chem(sample)
    data, report = build(social_chem_files=(str(sample),), pt_include_situation_prob=0.0)
    assert set(counts(data)) == {"PT"}
    assert sum(len(p) for p in data.values()) + sum(report.dropped.values()) == len(loaded)
    texts = [r["messages"] for r in rows(data, "PT")]
    assert all(len(m) == 1 and m[0]["role"] == "assistant" for m in texts)
    assert "It's good checking in on a friend who just lost a job." in [
        m[0]["content"] for m in texts
    ]


# ------------------------------------------------------------------ GD


def test_general_dialogues_mix_in_and_fail_clearly(tmp_path: Path) -> None:
    path = tmp_path / "gd.jsonl"
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    path.write_text(
        json.dumps({"messages": chat}) + "\n" + json.dumps({"messages": chat, "split": "dev"})
    )
    data, _ = build(questions=QUESTIONS[:1], gd_files=(str(path),), flows=("MA", "GD"))
    assert counts(data) == {"MA": {"train": 1}, "GD": {"train": 1, "dev": 1}}
    assert rows(data, "GD", "dev")[0]["messages"] == chat
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [*chat, {"role": "system", "content": "x"}]}) + "\n")
    with pytest.raises(ScenarioLoadError, match=r"line 1, field 'messages\[2\]\.role'"):
        load_general_dialogues(bad)
    bad.write_text(json.dumps({"messages": chat[:1]}) + "\n")
    with pytest.raises(ScenarioLoadError, match="must end with an assistant message"):
        load_general_dialogues(bad)


# ------------------------------------------------------------------ splits, stats, saving


def test_no_question_or_rot_shared_between_splits() -> None:
    data, _ = build(questions=QUESTIONS)
    check_disjoint_splits(data)
    for a, b in (("train", "test"), ("train", "dev"), ("dev", "test")):
        assert not set(data[a]["question_id"]) & set(data[b]["question_id"])
        assert not {normalise(r) for r in data[a]["rot"]} & {normalise(r) for r in data[b]["rot"]}
    row = {"messages": [{"role": "assistant", "content": "x"}], "flow": "PT", "source": "s"}
    leaky = DatasetDict(
        {
            "train": to_dataset([{**row, "question_id": "a", "rot": LIE}]),
            "test": to_dataset([{**row, "question_id": "b", "rot": LIE.lower()}]),
        }
    )
    with pytest.raises(DiscussionError, match=r"1 RoT.* shared between train and test"):
        check_disjoint_splits(leaky)


def test_stats_on_two_rows_by_hand() -> None:
    def m(role: str, text: str) -> dict[str, str]:
        return {"role": role, "content": text}

    base = {"source": "s", "rot": "r"}
    two = [
        {
            **base,
            "flow": "MA",
            "question_id": "1",
            "messages": [m("user", "a b c"), m("assistant", "d e")],
        },
        {
            **base,
            "flow": "ME",
            "question_id": "2",
            "messages": [
                m("user", "x"),
                m("assistant", "y y"),
                m("user", "why now"),
                m("assistant", "r r r r"),
            ],
        },
    ]  # fmt: skip
    data = DatasetDict(
        {
            "train": to_dataset(two),
            "test": to_dataset([]),
        }
    )
    stats = discussion_stats(data)
    assert stats["splits"] == {"train": 2, "test": 0}
    assert stats["flows"]["MA"]["train"] == {
        "dialogues": 1,
        "turns": 2,
        "turns_per_dialogue": 2.0,
        "mean_context_length": 3.0,
        "mean_response_length": 2.0,
    }
    assert stats["flows"]["ME"]["all"]["mean_context_length"] == 5.0  # 1 + 2 + 2 words
    assert stats["flows"]["ME"]["test"]["dialogues"] == 0
    assert stats["flows"]["ME"]["test"]["mean_context_length"] is None
    assert stats["total"] == {
        "dialogues": 2,
        "turns": 6,
        "turns_per_dialogue": 3.0,
        "mean_context_length": 4.0,  # (3 + 5) / 2
        "mean_response_length": 3.0,  # (2 + 4) / 2
    }


def test_save_and_reload(tmp_path: Path) -> None:
    config = DiscussionConfig(pack=None)
    report = BuildReport()
    data = build_discussions(config, questions=QUESTIONS, report=report)
    path = save_discussions(data, tmp_path / "disc", report=report, config=config)
    again = load_from_disk(str(tmp_path / "disc"))
    assert again["train"].to_list() == data["train"].to_list()
    saved = json.loads(path.read_text())
    assert saved["stats"]["flows"]["RIL"]["train"]["dialogues"] == 2
    assert saved["build"]["dropped"]["MA: answer disagrees with its RoT"] == 5
    assert saved["config"]["seed"] == 0


def test_cli_builds_prints_and_saves(tmp_path: Path) -> None:
    mic = tmp_path / "mic.csv"
    mic.write_text(MIC_CSV)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "discussions",
            "--pack",
            "none",
            "--mic",
            str(mic),
            "--out",
            str(out),
            "--flows",
            "MA,MR",
            "--seed",
            "3",
        ],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "MA" in result.output and "MR" in result.output
    assert json.loads((out / "stats.json").read_text())["stats"]["splits"] == {
        "train": 3,
        "dev": 1,
        "test": 0,
    }
    bad = CliRunner().invoke(app, ["train", "discussions", "--flows", "MA,XX", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown XX" in bad.output


def test_core_pack_builds() -> None:
    pack = load_pack("core").pack
    data = build_discussions(DiscussionConfig(seed=0))
    check_disjoint_splits(data)
    firm = sum(q.rot.consensus >= 4 for q in pack.questions)
    total = {flow: sum(n.values()) for flow, n in counts(data).items()}
    n = len(pack.questions)
    assert all(q.related_answer for q in pack.questions)
    assert total == {
        # agreeing answers only, on high-consensus RoTs: the question's and the related one's
        "MA": 2 * firm,
        "ME": 2 * n,
        "MR": firm,  # the related question has no disagreeing reference answer
        "RIL": 2 * n,  # question -> related question, and back
        "PT": len({normalise(q.rot.text) for q in pack.questions}),
    }


@pytest.mark.skipif(not SC101.is_dir(), reason="../shared/data/social_chem_101 is not present")
def test_real_social_chem_pt() -> None:
    path = SC101 / "obligatory_sc101.csv"
    loaded, _ = load_social_chem(path)
    kept = [r for r in loaded if not r.rot_bad]
    data, report = build(social_chem_files=(str(path),), flows=("PT",))
    unique = {normalise(r.rot.text) for r in kept}
    assert len(data["train"]) == len(unique) and len(data["dev"]) == len(data["test"]) == 0
    assert report.pt_statements["social_chem: judgment+action(+situation)"] > 0.9 * len(unique)
    situation = {r.rot_id: (r.rot.situation or "").lower() for r in kept}
    texts = zip(data["train"]["question_id"], data["train"]["messages"], strict=True)
    kept_situation = [
        situation[qid] and situation[qid][:30] in m[0]["content"].lower() for qid, m in texts
    ]
    assert 0.35 < sum(kept_situation) / len(kept_situation) < 0.65  # pt_include_situation_prob 0.5
