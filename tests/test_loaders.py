from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scenarios.loaders import (
    ScenarioLoadError,
    load_agreement_examples,
    load_dilemmas,
    load_mcc,
    load_mic,
    load_questions,
    load_safety_rots,
    load_social_chem,
)

DATA = Path(__file__).parent / "data"


def copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copy(DATA / name, tmp_path / name))


def rewrite_jsonl(path: Path, line: int, mutate) -> None:
    lines = path.read_text().splitlines()
    data = json.loads(lines[line - 1])
    mutate(data)
    lines[line - 1] = json.dumps(data)
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------ the pack question format


def test_questions_load_with_all_fields() -> None:
    questions, issues = load_questions(DATA / "questions_sample.jsonl")
    assert not issues
    assert [q.split for q in questions] == ["train", "train", "dev", "test"]
    q = questions[1]
    assert q.rot.foundations == ("fairness", "liberty")
    assert q.rot.consensus == 3 and q.rot.contested and q.rot.severity == 2
    assert len(q.paraphrases) == 5
    assert q.agree_answer.startswith("No, ask first")
    assert q.related_question.startswith("Can I wear")


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda d: d["rot"].update(consensus=7), "rot.consensus", "7 is out of range 1-5"),
        (lambda d: d["rot"].update(consensus="high"), "rot.consensus", "must be an integer 1-5"),
        (lambda d: d["rot"].update(severity=0), "rot.severity", "0 is out of range 1-5"),
        (lambda d: d.update(question="   "), "question", "is empty"),
        (lambda d: d.pop("explanation"), "explanation", "missing"),
        (
            lambda d: d.update(paraphrases=d["paraphrases"][:3]),
            "paraphrases",
            "has 3 paraphrases, at least 5 required",
        ),
        (
            lambda d: d["paraphrases"].__setitem__(2, ""),
            "paraphrases[2]",
            "must be a non-empty string",
        ),
        (lambda d: d["answers"].pop("disagree"), "answers.disagree", "missing"),
        (
            lambda d: d["rot"].update(foundations=["honesty"]),
            "rot.foundations",
            "unknown foundation 'honesty'",
        ),
        (lambda d: d.update(split="validation"), "split", "must be one of train, dev, test"),
        (lambda d: d.update(colour="red"), "colour", "unknown key"),
    ],
)
def test_bad_question_names_file_line_and_field(
    tmp_path: Path, mutate, field: str, reason: str
) -> None:
    path = copy(tmp_path, "questions_sample.jsonl")
    rewrite_jsonl(path, 3, mutate)
    with pytest.raises(ScenarioLoadError) as info:
        load_questions(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 3 (id sample-003), field '{field}': ")
    assert reason in message
    assert info.value.field == field


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = copy(tmp_path, "questions_sample.jsonl")
    rewrite_jsonl(path, 4, lambda d: d.update(id="sample-001"))
    with pytest.raises(
        ScenarioLoadError,
        match=r"line 4, field 'id': duplicate id 'sample-001' \(first on line 1\)",
    ):
        load_questions(path)


def test_non_utf8_byte_is_located(tmp_path: Path) -> None:
    path = copy(tmp_path, "questions_sample.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"roommate", b"roomm\xe4te", 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(ScenarioLoadError, match=r"line 2: not valid UTF-8 \(byte \d+\)"):
        load_questions(path)


def test_invalid_json_is_located(tmp_path: Path) -> None:
    path = copy(tmp_path, "questions_sample.jsonl")
    with path.open("a") as fh:
        fh.write('{"id": "broken",\n')
    with pytest.raises(ScenarioLoadError, match=r"line 5: invalid JSON"):
        load_questions(path)


def test_skip_invalid_loads_the_rest_and_reports(tmp_path: Path) -> None:
    path = copy(tmp_path, "questions_sample.jsonl")
    rewrite_jsonl(path, 2, lambda d: d["rot"].update(consensus=9))
    rewrite_jsonl(path, 4, lambda d: d.update(id="sample-001"))
    questions, issues = load_questions(path, skip_invalid=True)
    assert [q.id for q in questions] == ["sample-001", "sample-003"]
    assert [(i.where, i.field) for i in issues] == [
        ("line 2 (id sample-002)", "rot.consensus"),
        ("line 4", "id"),
    ]
    assert "9 is out of range" in str(issues[0])


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioLoadError, match="file not found"):
        load_questions(tmp_path / "nope.jsonl")


# ------------------------------------------------------------------ MIC


def test_mic_rows_map_labels_and_scales() -> None:
    rows, issues = load_mic(DATA / "mic_sample.csv")
    assert not issues
    assert [r.label for r in rows] == ["agree", "disagree", "neutral"]
    assert rows[0].rot.foundations == ("loyalty", "care")
    assert (rows[1].rot.consensus, rows[1].rot.severity) == (5, 3)
    assert rows[2].rot.consensus is None and rows[2].rot.foundations == ()
    example = rows[1].to_example()
    assert (example.label, example.split, example.rot) == ("disagree", "dev", rows[1].rot.text)


def test_mic_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "mic.csv"
    text = (DATA / "mic_sample.csv").read_text().replace("A_agrees", "A_agreement", 1)
    path.write_text(text)
    with pytest.raises(
        ScenarioLoadError, match=r"line 1 \(header\), field 'A_agrees': missing column"
    ):
        load_mic(path)


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        (",2,4,2,", ",3,4,2,", "A_agrees", "3 is out of range 0-2"),
        (",2,4,2,", ",2,6,2,", "rot-agree", "6 is out of range 1-5"),
        ("Is it fine to skip my sister's graduation for a concert?", "", "Q", "is empty"),
    ],
)
def test_mic_bad_values(tmp_path: Path, old: str, new: str, field: str, reason: str) -> None:
    path = tmp_path / "mic.csv"
    text = (DATA / "mic_sample.csv").read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ScenarioLoadError) as info:
        load_mic(path)
    assert f"line 2, field '{field}'" in str(info.value) and reason in str(info.value)


def test_mic_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "mic.csv"
    raw = (DATA / "mic_sample.csv").read_bytes().replace(b"cashier", b"cash\xffier")
    path.write_bytes(raw)
    with pytest.raises(ScenarioLoadError, match=r"line 3: not valid UTF-8"):
        load_mic(path)
    rows, issues = load_mic(path, skip_invalid=True)
    assert len(rows) == 2 and issues[0].where == "line 3"


# ------------------------------------------------------------------ Social-Chem-101


def test_social_chem_rows() -> None:
    rows, issues = load_social_chem(DATA / "social_chem_sample.tsv")
    assert not issues and len(rows) == 3
    first = rows[0]
    assert first.rot.consensus == 5  # rot-agree 4 (>99%) on the 1-5 scale
    assert first.rot.foundations == ("care", "loyalty")
    assert first.rot.judgment == "It's good" and first.rot.action.startswith("checking in")
    assert first.action_pressure == 1 and first.action_legal == "legal"
    assert first.characters == ("narrator", "my friend")
    assert rows[1].rot.foundations == () and rows[1].action_moral_judgment == 0
    assert rows[2].rot.consensus is None and rows[2].rot_bad and rows[2].action_legal is None


def test_social_chem_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "sc.tsv"
    lines = (DATA / "social_chem_sample.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    idx = header.index("action-pressure")
    path.write_text(
        "\n".join(
            "\t".join(c for i, c in enumerate(line.split("\t")) if i != idx) for line in lines
        )
    )
    with pytest.raises(ScenarioLoadError, match="field 'action-pressure': missing column"):
        load_social_chem(path)


def test_social_chem_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "sc.tsv"
    path.write_text(
        (DATA / "social_chem_sample.tsv").read_text().replace("\ttrain\t4.0\t", "\ttrain\t7\t", 1)
    )
    with pytest.raises(
        ScenarioLoadError, match=r"line 2, field 'rot-agree': 7 is out of range 0-4"
    ):
        load_social_chem(path)


SC101 = Path(__file__).resolve().parents[2] / "shared" / "data" / "social_chem_101"


@pytest.mark.skipif(not SC101.is_dir(), reason="../shared/data/social_chem_101 is not present")
def test_real_social_chem_rows_load() -> None:
    obligatory, issues_a = load_social_chem(SC101 / "obligatory_sc101.csv")
    optional, issues_b = load_social_chem(SC101 / "optional_sc101.csv")
    assert (len(obligatory), len(optional)) == (8358, 3288)
    assert not issues_a and not issues_b
    rows = obligatory + optional
    assert all(r.split == "train" and r.rot.consensus == 5 for r in rows)
    assert all(r.rot.text and r.rot_id for r in rows)
    assert sum(bool(r.rot.foundations) for r in rows) > 0.9 * len(rows)
    assert {r.action_pressure for r in rows} <= {None, -2, -1, 0, 1, 2}


# ------------------------------------------------------------------ MCC, safety, agreement, DIT


def test_mcc_groups_paraphrases() -> None:
    sets, issues = load_mcc(DATA / "mcc_sample.csv")
    assert not issues
    assert [s.question_id for s in sets] == ["q1", "q2"]
    assert (
        len(sets[0].paraphrases) == 3
        and sets[0].answers
        and sets[0].rots
        and sets[0].model == "tiny"
    )


def test_mcc_too_few_paraphrases(tmp_path: Path) -> None:
    path = tmp_path / "mcc.csv"
    lines = (DATA / "mcc_sample.csv").read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(
        ScenarioLoadError, match=r"question_id q2\), field 'paraphrase': question has 1 paraphrase"
    ):
        load_mcc(path)
    sets, issues = load_mcc(path, skip_invalid=True)
    assert [s.question_id for s in sets] == ["q1"] and len(issues) == 1


def test_mcc_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "mcc.csv"
    path.write_text((DATA / "mcc_sample.csv").read_text().replace("paraphrase,", "text,", 1))
    with pytest.raises(ScenarioLoadError, match="field 'paraphrase': missing column"):
        load_mcc(path)


def test_safety_rots_must_be_universal_and_severe(tmp_path: Path) -> None:
    rots, _ = load_safety_rots(DATA / "safety_sample.jsonl")
    assert [r.category for r in rots] == ["driving", "animals"]
    path = copy(tmp_path, "safety_sample.jsonl")
    rewrite_jsonl(path, 2, lambda d: d.update(consensus=4))
    with pytest.raises(
        ScenarioLoadError,
        match=r"line 2 \(id s2\), field 'consensus': safety RoTs need consensus 5",
    ):
        load_safety_rots(path)


def test_agreement_examples_and_bad_label(tmp_path: Path) -> None:
    examples, _ = load_agreement_examples(DATA / "agreement_sample.jsonl")
    assert [(e.label, e.kind) for e in examples] == [
        ("agree", "hard:negation"),
        ("neutral", "hard:unspecified"),
    ]
    path = copy(tmp_path, "agreement_sample.jsonl")
    rewrite_jsonl(path, 1, lambda d: d.update(label="yes"))
    with pytest.raises(
        ScenarioLoadError,
        match=r"line 1 \(id h1\), field 'label': must be one of agree, neutral, disagree",
    ):
        load_agreement_examples(path)


def test_dilemma_yaml_and_json(tmp_path: Path) -> None:
    import yaml

    dilemmas, _ = load_dilemmas(DATA / "dilemmas_sample.yaml")
    d = dilemmas[0]
    assert len(d.statements) == 12 and d.options[1] == "Can't decide"
    assert d.items_at("5", "6") == [5, 6, 7, 10] and d.items_at("M") == [8]
    as_json = tmp_path / "d.json"
    as_json.write_text(
        json.dumps({"dilemmas": yaml.safe_load((DATA / "dilemmas_sample.yaml").read_text())})
    )
    assert load_dilemmas(as_json)[0] == dilemmas


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        ("stage: M}", "stage: 7}", "statements[8].stage", "must be one of 2, 3, 4, 5, 6, M"),
        (
            '["Should waive it", "Can\'t decide", "Should not waive it"]',
            '["Yes", "No"]',
            "options",
            "exactly 3",
        ),
        (
            '    - {text: "Whether the reader is a good neighbour.", stage: 3}\n',
            "",
            "statements",
            "exactly 12 statements, got 11",
        ),
        ("question: Should Ana waive the fine?", "question: ''", "question", "is empty"),
    ],
)
def test_bad_dilemma_names_line_and_field(
    tmp_path: Path, old: str, new: str, field: str, reason: str
) -> None:
    path = tmp_path / "d.yaml"
    text = (DATA / "dilemmas_sample.yaml").read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    with pytest.raises(ScenarioLoadError) as info:
        load_dilemmas(path)
    assert f"line 2 (id test-library-fine), field '{field}'" in str(info.value)
    assert reason in str(info.value)


def test_dilemma_duplicate_id_and_bad_byte(tmp_path: Path) -> None:
    text = (DATA / "dilemmas_sample.yaml").read_text()
    body = text.split("\n", 1)[1]  # drop the comment line, keep the list item
    path = tmp_path / "d.yaml"
    path.write_text(text + body)
    with pytest.raises(
        ScenarioLoadError, match=r"\(id test-library-fine\), field 'id': duplicate id"
    ):
        load_dilemmas(path)
    dilemmas, issues = load_dilemmas(path, skip_invalid=True)
    assert len(dilemmas) == 1 and issues[0].field == "id"
    path.write_bytes(text.encode().replace(b"village", b"vill\xe9ge", 1))
    with pytest.raises(ScenarioLoadError, match=r"line 6: not valid UTF-8"):
        load_dilemmas(path)
