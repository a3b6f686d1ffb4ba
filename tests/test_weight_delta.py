"""Weight deltas (training.weight_delta) and the shipped default scorer built from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from training.weight_delta import (
    FULL,
    QUANTISED,
    SCALE,
    DeltaError,
    decode,
    encode,
    export_delta,
    restore,
    tensors_digest,
)


def test_a_hand_computed_delta() -> None:
    base = {"w": torch.tensor([[1.0, 2.0], [0.0, 0.0]]), "b": torch.zeros(2), "same": torch.ones(3)}
    tuned = {
        "m.w": torch.tensor([[1.5, 2.0], [0.0, -1.27]]),  # row deltas [0.5, 0] and [0, -1.27]
        "m.b": torch.tensor([0.1, 0.0]),  # 1-D: stored whole
        "m.same": torch.ones(3),  # unchanged: not stored
        "head": torch.tensor([[3.0]]),  # not in the base: stored whole
    }
    stored = encode(base, tuned)
    assert set(stored) == {"m.w" + QUANTISED, "m.w" + SCALE, "m.b" + FULL, "head" + FULL}
    assert stored["m.w" + QUANTISED].tolist() == [[127, 0], [0, -127]]
    assert stored["m.w" + SCALE].flatten().tolist() == pytest.approx([0.5 / 127, 1.27 / 127])
    out = decode(base, stored, list(tuned))
    assert out["m.w"].tolist() == [pytest.approx([1.5, 2.0]), pytest.approx([0.0, -1.27])]
    assert out["m.b"].tolist() == pytest.approx([0.1, 0.0])
    assert out["m.same"].tolist() == [1.0, 1.0, 1.0] and out["head"].tolist() == [[3.0]]


def test_the_rounding_error_is_at_most_half_a_rows_scale() -> None:
    torch.manual_seed(0)
    base = {"w": torch.randn(8, 40)}
    tuned = {"w": base["w"] + 0.05 * torch.randn(8, 40)}
    stored = encode(base, tuned)
    error = (decode(base, stored, ["w"])["w"] - tuned["w"]).abs()
    assert (error <= stored["w" + SCALE] / 2 + 1e-6).all()
    assert error.max() > 0  # a real rounding, not a copy


def test_a_name_neither_stored_nor_in_the_base_is_refused() -> None:
    with pytest.raises(DeltaError, match="'x'"):
        decode({}, {}, ["x"])


def test_restore_checks_the_base_and_the_result(tmp_path: Path) -> None:
    torch.manual_seed(0)
    base = {"w": torch.randn(4, 6), "b": torch.randn(6)}
    tuned = {"w": base["w"] + 0.1, "b": base["b"], "h": torch.randn(3, 6)}
    save_file(base, str(tmp_path / "base.safetensors"))
    save_file(tuned, str(tmp_path / "tuned.safetensors"))
    delta = tmp_path / "delta.safetensors"
    meta = export_delta(tmp_path / "tuned.safetensors", tmp_path / "base.safetensors", delta)
    assert meta["base_sha256"] == tensors_digest(base)
    restore(delta, tmp_path / "base.safetensors", tmp_path / "out.safetensors")
    out = load_file(str(tmp_path / "out.safetensors"))
    assert set(out) == set(tuned) and torch.allclose(out["w"], tuned["w"], atol=1e-3)
    assert torch.equal(out["b"], base["b"]) and torch.equal(out["h"], tuned["h"])

    save_file({"w": base["w"] * 2, "b": base["b"]}, str(tmp_path / "other.safetensors"))
    with pytest.raises(DeltaError, match="other base weights"):
        restore(delta, tmp_path / "other.safetensors", tmp_path / "x.safetensors")
    stored = load_file(str(delta))
    stored["w" + QUANTISED][0, 0] += 1  # a damaged delta restores other weights
    from safetensors import safe_open

    with safe_open(str(delta), framework="pt") as handle:
        save_file(stored, str(tmp_path / "bad.safetensors"), metadata=handle.metadata())
    with pytest.raises(DeltaError, match="differ from the ones measured"):
        restore(tmp_path / "bad.safetensors", tmp_path / "base.safetensors", tmp_path / "y")


def _trained_factored(folder: Path, encoder: Path, with_digests: bool = True) -> Path:
    """A factored folder as training leaves it, on a tiny encoder: each half the encoder with
    its top layer changed a little and a new head."""
    from transformers import BertForSequenceClassification

    torch.manual_seed(1)
    for half in ("stance", "direction"):
        model = BertForSequenceClassification.from_pretrained(str(encoder), num_labels=3)
        with torch.no_grad():  # what fine-tuning does: change the top layer a little
            model.bert.encoder.layer[0].output.dense.weight.add_(0.01 * torch.randn(16, 32))
        model.config.id2label = {0: "agree", 1: "neutral", 2: "disagree"}
        model.config.label2id = {"agree": 0, "neutral": 1, "disagree": 2}
        model.save_pretrained(folder / half)
        (folder / half / "metrics.json").write_text('{"dev": {}}')
    info = {"task": "t", "seconds": {"stance": 1.0}, "device": "cpu float32"}
    if with_digests:
        info["data_sha256"] = {"stance": "s", "direction": "d"}
    (folder / "factored.json").write_text(json.dumps(info))
    return folder


def test_a_trained_factored_folder_round_trips_through_its_shipped_form(
    tmp_path: Path, tiny_encoder: Path
) -> None:
    from evaluators.agreement import AgreementItem
    from evaluators.scorers import open_agreement_scorer
    from training.shipped_scorer import export_factored, restore_factored

    trained = _trained_factored(tmp_path / "trained", tiny_encoder)
    shipped = tmp_path / "shipped"
    export_factored(trained, shipped, base_dir=tiny_encoder)
    restore_factored(tmp_path / "restored", shipped, base_dir=tiny_encoder)
    info = json.loads((tmp_path / "restored" / "factored.json").read_text())
    assert info["task"] == "t" and "restored_from" in info
    item = [AgreementItem("a ?", "b", "c")]
    original = open_agreement_scorer(str(trained)).probabilities(item)
    restored = open_agreement_scorer(str(tmp_path / "restored")).probabilities(item)
    assert restored == pytest.approx(original, abs=0.01)


def test_publishing_measures_the_restored_scorer_and_refuses_an_unrecorded_one(
    tmp_path: Path, tiny_encoder: Path
) -> None:
    from training.shipped_scorer import publish, reference_figures

    stories = tmp_path / "ms.jsonl"
    rows = [
        {"ID": "A1", "norm": "Be kind.", "moral_action": "She helps.", "label": "1"},
        {"ID": "A0", "norm": "Be kind.", "immoral_action": "She mocks.", "label": "0"},
    ]
    stories.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trained = _trained_factored(tmp_path / "trained", tiny_encoder)
    shipped = tmp_path / "shipped"
    reference = publish(trained, stories, shipped, base_dir=tiny_encoder)
    assert reference["figures"]["moral-stories"]["n_pairs"] == 1
    assert 0 <= reference["pack_figures"]["signs-test_sign_accuracy"] <= 1
    carried = reference_figures(shipped)["moral-stories"]
    assert carried["pairwise_accuracy"] in (0.0, 1.0) and "developers" in carried["measured_by"]
    bare = _trained_factored(tmp_path / "bare", tiny_encoder, with_digests=False)
    with pytest.raises(ValueError, match="no data_sha256"):
        publish(bare, stories, tmp_path / "other", base_dir=tiny_encoder)
