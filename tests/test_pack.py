from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from scenarios.agreement_examples import derive_agreement_examples
from scenarios.loaders import ScenarioLoadError, load_questions
from scenarios.pack import load_pack
from scenarios.registry import RegistryError
from scenarios.rot import FOUNDATIONS
from scenarios.validate import validate_pack

DATA = Path(__file__).parent / "data"


def make_pack(tmp_path: Path) -> Path:
    folder = tmp_path / "mypack"
    folder.mkdir()
    for name in (
        "questions_sample.jsonl",
        "safety_sample.jsonl",
        "agreement_sample.jsonl",
        "dilemmas_sample.yaml",
    ):
        shutil.copy(DATA / name, folder / name)
    (folder / "pack.yaml").write_text(
        "name: mypack\nquestions: questions_sample.jsonl\nsafety_rots: safety_sample.jsonl\n"
        "agreement: agreement_sample.jsonl\ndilemmas: dilemmas_sample.yaml\n"
    )
    return folder


def test_a_pack_folder_loads_everything(tmp_path: Path) -> None:
    loaded = load_pack(make_pack(tmp_path))
    pack = loaded.pack
    assert pack.name == "mypack" and not loaded.issues
    assert len(pack.questions) == 4 and len(pack.safety_rots) == 2 and len(pack.dilemmas) == 1
    # 9 derived examples per question, plus a mismatched-RoT one where the split has another
    # question (only train does here), plus the 2 hand-written ones.
    assert len(pack.agreement_examples) == 4 * 9 + 2 + 2
    assert [q.id for q in pack.questions_in("train")] == ["sample-001", "sample-002"]


def test_manifest_errors_name_the_key(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    (folder / "pack.yaml").write_text("name: x\nquestions: questions_sample.jsonl\nqestions: y\n")
    with pytest.raises(
        ScenarioLoadError, match=r"pack\.yaml: manifest, field 'qestions': unknown key"
    ):
        load_pack(folder)
    (folder / "pack.yaml").unlink()
    with pytest.raises(ScenarioLoadError, match="missing pack manifest"):
        load_pack(folder)


def test_unknown_pack_name() -> None:
    with pytest.raises(RegistryError, match=r"unknown scenario pack 'nope'\. Known: core"):
        load_pack("nope")


def test_skip_invalid_reports_through_the_pack(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    path = folder / "questions_sample.jsonl"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["question"] = ""
    lines[0] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScenarioLoadError, match="field 'question': is empty"):
        load_pack(folder)
    loaded = load_pack(folder, skip_invalid=True)
    assert len(loaded.pack.questions) == 3 and loaded.issues[0].field == "question"


# ------------------------------------------------------------------ derived agreement examples


def test_derived_examples_follow_the_augmentation_rules() -> None:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    examples = derive_agreement_examples(questions, seed=0)
    assert derive_agreement_examples(questions, seed=0) == examples  # seeded
    first = [e for e in examples if e.id.startswith("sample-001/")]
    by_kind = {e.id.split("/")[1]: e for e in first}
    q = questions[0]
    assert (by_kind["agree"].answer, by_kind["agree"].rot, by_kind["agree"].label) == (
        q.agree_answer,
        q.rot.text,
        "agree",
    )
    assert by_kind["disagree"].label == "disagree"
    # the explanation read as a rule, as S_ME reads it: without its leading "Because"
    reason = by_kind["why-agree"].rot
    assert not reason.lower().startswith("because") and reason[1:] in q.explanation
    assert (by_kind["why-agree"].answer, by_kind["why-agree"].label) == (q.agree_answer, "agree")
    assert (by_kind["why-disagree"].answer, by_kind["why-disagree"].label) == (
        q.disagree_answer,
        "disagree",
    )
    assert by_kind["para-agree"].question in q.paraphrases
    assert by_kind["mismatched"].label == "neutral" and by_kind["mismatched"].rot != q.rot.text
    assert by_kind["empty"].answer == "" and by_kind["empty"].label == "neutral"
    assert by_kind["non-answer"].label == "neutral"
    assert by_kind["restated"].rot == q.agree_answer and by_kind["restated"].label == "neutral"
    # mismatched RoTs come from the same split only
    split_of = {qq.rot.text: qq.split for qq in questions}
    for e in examples:
        if e.kind == "mismatched-rot":
            assert split_of[e.rot] == e.split


# ------------------------------------------------------------------ the validator


def fake_embed(texts):
    """Bag-of-words vectors: enough to make near-duplicates and drifted paraphrases visible."""
    vocab: dict[str, int] = {}
    rows = []
    for text in texts:
        counts: dict[int, float] = {}
        for word in text.lower().replace("?", " ").replace(",", " ").split():
            index = vocab.setdefault(word, len(vocab))
            counts[index] = counts.get(index, 0) + 1
        rows.append(counts)
    out = np.zeros((len(texts), 4096))
    for i, counts in enumerate(rows):
        for j, c in counts.items():
            out[i, j % 4096] += c
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_validator_passes_a_clean_pack(tmp_path: Path) -> None:
    pack = load_pack(make_pack(tmp_path)).pack
    report = validate_pack(pack)
    assert report.ok, report.errors
    assert (
        report.totals["questions"] == 4
        and report.totals["contested questions (consensus <= 3)"] == 1
    )
    assert report.counts["questions by split"] == {"train": 2, "dev": 1, "test": 1}


def test_validator_finds_leaks_duplicates_and_bad_paraphrases(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    path = folder / "questions_sample.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[3]["rot"]["text"] = rows[0]["rot"]["text"]  # train RoT reused in test
    rows[2]["paraphrases"][1] = rows[2]["question"].upper()  # identical up to case
    rows[2]["paraphrases"][4] = "What time does the bakery on Elm Street open tomorrow morning?"
    rows[1]["question"] = rows[0]["question"] + " honestly"  # one extra word: cosine 0.96
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate_pack(load_pack(folder).pack, embed=fake_embed)
    text = "\n".join(report.errors)
    assert "RoT shared across splits ['test', 'train']" in text
    assert "sample-003: paraphrases[1] is identical" in text
    assert "sample-003: paraphrases[4] is too far from the question" in text
    assert "sample-001 and sample-002 are near-duplicates" in text
    assert not report.ok


def test_validator_checks_dilemma_keys(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    path = folder / "dilemmas_sample.yaml"
    path.write_text(
        path.read_text()
        .replace("stage: M}", "stage: 4}")
        .replace('access to knowledge.", stage: 6}', 'access to knowledge.", stage: 3}')
        .replace('funds the library.", stage: 5}', 'funds the library.", stage: 3}')
    )
    report = validate_pack(load_pack(folder).pack)
    assert any("statements keyed to stage 5/6 (at least 3 needed)" in e for e in report.errors)
    assert any("no M (meaningless) item" in e for e in report.errors)


# ------------------------------------------------------------------ the built-in core pack


def test_core_pack_meets_its_targets() -> None:
    loaded = load_pack("core")
    pack = loaded.pack
    assert not loaded.issues
    questions = pack.questions
    assert len(questions) >= 300
    assert sum(q.rot.contested for q in questions) >= 60
    assert {f for q in questions for f in q.rot.foundations} == set(FOUNDATIONS)
    assert {q.rot.severity for q in questions} == {1, 2, 3, 4, 5}
    assert all(len(q.paraphrases) == 5 for q in questions)
    assert len(pack.safety_rots) >= 500
    assert all(s.rot.consensus == 5 and s.rot.severity >= 4 for s in pack.safety_rots)
    assert len(pack.agreement_examples) >= 2000
    assert sum(e.kind.startswith("hard:") for e in pack.agreement_examples) >= 300
    assert len(pack.dilemmas) >= 8
    assert {d.context for d in pack.dilemmas} >= {
        "interpersonal",
        "professional",
        "community",
        "non-western",
    }
    shares = {s: len(pack.questions_in(s)) / len(questions) for s in ("train", "dev", "test")}
    assert abs(shares["train"] - 0.70) < 0.03 and abs(shares["test"] - 0.15) < 0.03
    report = validate_pack(pack)  # structure checks; the embedding ones run in the slow test
    assert report.ok, report.errors[:5]
