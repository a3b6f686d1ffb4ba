from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.agreement import AgreementItem, AgreementScorer
from scenarios.types import AgreementExample
from training.classification_metrics import classification_report
from training.scorer import ScorerTrainingConfig, train_agreement_classifier


def test_classification_report_by_hand() -> None:
    gold = ["agree", "agree", "neutral", "disagree", "disagree", "disagree"]
    pred = ["agree", "neutral", "neutral", "disagree", "agree", "disagree"]
    # agree: tp1 fp1 fn1 -> F1 2/4 = 0.5; neutral: tp1 fp1 fn0 -> 2/3; disagree: tp2 fp0 fn1 -> 4/5
    report = classification_report(gold, pred, ["agree", "neutral", "disagree"])
    assert report.accuracy == pytest.approx(4 / 6)
    assert report.f1_per_label == pytest.approx({"agree": 0.5, "neutral": 2 / 3, "disagree": 0.8})
    assert report.macro_f1 == pytest.approx((0.5 + 2 / 3 + 0.8) / 3)
    with pytest.raises(ValueError, match="2 gold labels but 1 predictions"):
        classification_report(["a", "b"], ["a"], ["a", "b"])


def example(i: int, label: str, split: str) -> AgreementExample:
    answers = {"agree": "no you should not", "disagree": "yes", "neutral": ""}
    return AgreementExample(
        f"e{i}", "is it okay to lie ?", answers[label], "it is wrong to lie .", label, split, "test"
    )  # type: ignore[arg-type]


def test_training_runs_and_saves_a_folder_the_scorer_loads(
    tiny_encoder: Path, tmp_path: Path
) -> None:
    labels = ["agree", "neutral", "disagree"]
    train = [example(i, labels[i % 3], "train") for i in range(8)]
    dev = [example(100 + i, labels[i % 3], "dev") for i in range(3)]
    cfg = ScorerTrainingConfig(base_model=str(tiny_encoder), epochs=1, batch_size=4, seed=3)
    out = tmp_path / "scorer"
    result = train_agreement_classifier(train, dev, dev, out, cfg, show_bar=False)
    assert result.best_epoch == 1 and result.train_examples == 8
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dev"]["n"] == 3 and 0.0 <= metrics["test"]["macro_f1"] <= 1.0
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "agree", "1": "neutral", "2": "disagree"}
    scorer = AgreementScorer(str(out))
    values = scorer.score([AgreementItem("is it okay to lie ?", "yes", "it is wrong to lie .")])
    assert -1.0 <= float(values[0]) <= 1.0
    # seeded: the same run gives the same weights
    again = train_agreement_classifier(train, dev, dev, tmp_path / "again", cfg, show_bar=False)
    assert (again.output_dir / "model.safetensors").read_bytes() == (
        out / "model.safetensors"
    ).read_bytes()


def test_training_needs_data(tiny_encoder: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty train and dev"):
        train_agreement_classifier(
            [], [], None, tmp_path, ScorerTrainingConfig(base_model=str(tiny_encoder))
        )


def test_mixing_sources_and_freezing_layers(tiny_encoder: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from training.scorer import mix_sources

    labels = ["agree", "neutral", "disagree"]
    derived = [example(i, labels[i % 3], "train") for i in range(4)]
    written = [replace(example(50 + i, "agree", "train"), kind="written:x") for i in range(6)]
    mixed = mix_sources(derived + written, {"derived": 3}, {"written": 2}, seed=0)
    assert len(mixed) == 3 * 4 + 2
    assert [e.id for e in mixed[:12]] == [e.id for e in derived] * 3
    assert mix_sources(derived + written, {}, {}, 0) == derived + written
    # a kind named on its own: kept whole (cap >= its size) and not repeated with its source,
    # while the rest of its source is capped and repeated as before
    flat = [replace(example(70 + i, "agree", "train"), kind="written:flat") for i in range(3)]
    trivial = [replace(example(80 + i, "neutral", "train"), kind="non-answer") for i in range(2)]
    mixed = mix_sources(
        derived + trivial + written + flat,
        {"derived": 2, "non-answer": 1},
        {"written": 1, "written:flat": 3},
        seed=0,
    )
    ids = [e.id for e in mixed]
    assert ids[:10] == [e.id for e in derived + trivial] + [e.id for e in derived]
    assert sum(i in {e.id for e in written} for i in ids) == 1
    assert ids[-3:] == [e.id for e in flat]
    dev = [example(100 + i, labels[i % 3], "dev") for i in range(3)]
    cfg = ScorerTrainingConfig(base_model=str(tiny_encoder), epochs=1, batch_size=4)
    # the tiny encoder has one layer: freezing it leaves only the classifier head to train
    result = train_agreement_classifier(
        derived, dev, None, tmp_path / "frozen", replace(cfg, frozen_layers=1), show_bar=False
    )
    assert result.train_examples == 4
    with pytest.raises(ValueError, match="frozen_layers"):
        train_agreement_classifier(
            derived, dev, None, tmp_path / "bad", replace(cfg, frozen_layers=2), show_bar=False
        )


def test_train_scorer_runs_the_default_recipe_and_writes_a_card(
    tiny_encoder: Path, tmp_path: Path
) -> None:
    """`train scorer --independent` on the core pack: the default's recipe without the
    reference answers, then the scorer card with every in-pack figure."""
    from typer.testing import CliRunner

    from moralsim.cli import app
    from training.scorer import REFERENCE_ANSWER_KINDS

    out = tmp_path / "judge"
    result = CliRunner().invoke(
        app,
        ["train", "scorer", "--output", str(out), "--base-model", str(tiny_encoder),
         "--frozen-layers", "1", "--independent"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "epochs=1, frozen_layers=1" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert tuple(metrics["config"]["exclude_kinds"]) == REFERENCE_ANSWER_KINDS
    assert metrics["data"]["train"]["written"] == 6000
    card = json.loads((out / "scorer_card.json").read_text())
    assert {"pack-test", "signs-test", "bot-test"} <= set(card["figures"])


def test_recommending_form_swaps_labels_only_where_the_rot_forbids() -> None:
    from training.scorer import recommending_form

    forbidding = AgreementExample("a", "q", "yes", "It's wrong to lie.", "agree", "train", "t")  # type: ignore[arg-type]
    permitting = AgreementExample("b", "q", "yes", "It's okay to lie.", "agree", "train", "t")  # type: ignore[arg-type]
    unrelated = AgreementExample("c", "q", "hm", "You shouldn't lie.", "neutral", "train", "t")  # type: ignore[arg-type]
    out = recommending_form([forbidding, permitting, unrelated])
    assert [(e.rot, e.label) for e in out] == [
        ("It's good to lie.", "disagree"),
        ("It's okay to lie.", "agree"),
        ("You should lie.", "neutral"),
    ]


def test_a_rot_direction_scorer_reads_forbidding_rots_by_their_recommending_form(
    tiny_encoder: Path, tmp_path: Path
) -> None:
    """The flag is saved with the model, and scoring (RoT, answer) equals scoring the
    recommending form with agree and disagree swapped."""
    labels = ["agree", "neutral", "disagree"]
    train = [example(i, labels[i % 3], "train") for i in range(8)]
    dev = [example(100 + i, labels[i % 3], "dev") for i in range(3)]
    cfg = ScorerTrainingConfig(
        base_model=str(tiny_encoder), epochs=1, batch_size=4, seed=3, rot_direction=True
    )
    out = tmp_path / "scorer"
    train_agreement_classifier(train, dev, None, out, cfg, show_bar=False)
    assert json.loads((out / "config.json").read_text())["moralsim_rot_direction"] is True
    scorer = AgreementScorer(str(out))
    assert scorer.rot_direction and scorer.describe()["input"] == "recommending-rot"
    forbidding = AgreementItem("is it okay to lie ?", "yes", "it is wrong to lie .")
    recommending = AgreementItem("is it okay to lie ?", "yes", "It's good to lie .")
    p_forbidding, p_recommending = scorer.probabilities([forbidding, recommending])
    assert p_forbidding == pytest.approx(p_recommending[::-1])
    assert scorer.score([forbidding])[0] == pytest.approx(-scorer.score([recommending])[0])
    # a scorer trained the usual way keeps reading the RoT as written
    plain = ScorerTrainingConfig(base_model=str(tiny_encoder), epochs=1, batch_size=4)
    train_agreement_classifier(train, dev, None, tmp_path / "plain", plain, show_bar=False)
    assert not AgreementScorer(str(tmp_path / "plain")).rot_direction
