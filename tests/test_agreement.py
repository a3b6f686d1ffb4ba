from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluators.agreement import AgreementItem, AgreementScorer, agreement_score, label_columns
from evaluators.agreement_format import format_qa


def test_as_is_agree_minus_disagree() -> None:
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.0, 1.0, 0.0]])
    assert agreement_score(p).tolist() == pytest.approx([0.6, -0.7, 0.0])


@given(st.lists(st.floats(0, 1), min_size=3, max_size=3).filter(lambda v: sum(v) > 0))
def test_as_stays_in_range(raw) -> None:
    p = np.array(raw) / sum(raw)
    assert -1.0 <= float(agreement_score(p)) <= 1.0


def test_labels_are_found_by_name() -> None:
    assert label_columns({0: "disagree", 1: "AGREE", 2: "neutral"}, "m") == [1, 2, 0]
    with pytest.raises(ValueError, match="needs exactly the labels agree, neutral, disagree"):
        label_columns({0: "entailment", 1: "neutral", 2: "contradiction"}, "m")


def test_format() -> None:
    assert format_qa(" Is it ok? ", " No. ") == "Q: Is it ok? A: No."
    assert format_qa("Is it ok?", "") == "Q: Is it ok? A:"
    assert format_qa("  ", "She kept the change.") == "A: She kept the change."


def test_scorer_maps_columns_and_ignores_batch_size(tiny_classifier: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    items = [
        AgreementItem("is it okay to lie ?", "no you should not", "it is wrong to lie ."),
        AgreementItem("is it okay to lie ?", "yes", "it is wrong to lie ."),
        AgreementItem("why ?", "", "you should not lie ."),
    ]
    one = AgreementScorer(str(tiny_classifier), batch_size=1)
    many = AgreementScorer(str(tiny_classifier), batch_size=64)
    p1, p3 = one.probabilities(items), many.probabilities(items)
    assert np.allclose(p1, p3, atol=1e-6)
    assert np.allclose(p1.sum(axis=1), 1.0)
    # Compare with the raw model: column 1 is "AGREE", column 0 "disagree".
    tok = AutoTokenizer.from_pretrained(tiny_classifier)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_classifier).eval()
    enc = tok(format_qa(items[0].question, items[0].answer), items[0].rot, return_tensors="pt")
    with torch.no_grad():
        raw = torch.softmax(model(**enc).logits.double(), -1)[0].numpy()
    assert p1[0] == pytest.approx([raw[1], raw[2], raw[0]], abs=1e-6)
    assert one.score(items)[0] == pytest.approx(raw[1] - raw[0], abs=1e-6)


def test_scorer_refuses_a_non_classifier(tiny_causal_lm: Path) -> None:
    from agents.models import ModelError

    with pytest.raises(ModelError, match="not a sequence-classification folder"):
        AgreementScorer(str(tiny_causal_lm))


def test_scorer_refuses_wrong_labels(tiny_classifier: Path) -> None:
    config = json.loads((tiny_classifier / "config.json").read_text())
    config["id2label"] = {"0": "yes", "1": "no", "2": "maybe"}
    (tiny_classifier / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="found \\['maybe', 'no', 'yes'\\]"):
        AgreementScorer(str(tiny_classifier))
