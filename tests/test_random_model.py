"""benchmarks/random_model.py: random folders of real shapes that the project loads as it would
the real models, and whose greedy replies run to max_new_tokens (what the benchmarks rely on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.models import resolve_model
from benchmarks.random_model import (
    AGREEMENT_ID2LABEL,
    SHAPES,
    synthetic_chat_tokenizer,
    write_random_model,
    zeroed_token_ids,
)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_random_model("tiny-llama", tmp_path_factory.mktemp("models") / "tiny-llama")


def test_tiny_llama_resolves_as_a_causal_lm(tiny_llama: Path) -> None:
    assert resolve_model(str(tiny_llama)).kind == "causal-lm"


def test_greedy_replies_run_to_max_new_tokens(tiny_llama: Path) -> None:
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from scenarios.records import Turn

    agent = TransformersAgent(
        str(tiny_llama), generation=GenerationSettings(max_new_tokens=12), device="cpu"
    )
    assert str(agent.placement) == "cpu float32"
    weights = agent.model.get_input_embeddings().weight.detach()
    assert agent.model.get_output_embeddings().weight.data_ptr() == weights.data_ptr()
    assert all(float(weights[i].abs().sum()) == 0 for i in zeroed_token_ids(agent.tokenizer))
    histories = [[Turn("user", "Is it okay to lie?")], [Turn("user", "Why not? Tell me.")]]
    replies = agent.generate_replies(histories)
    assert [(r.completion_tokens, r.cut) for r in replies] == [(12, True), (12, True)]
    assert all(r.text for r in replies)  # special tokens are never generated: no empty text


def test_same_seed_writes_the_same_weights(tiny_llama: Path, tmp_path: Path) -> None:
    again = write_random_model("tiny-llama", tmp_path / "again")
    assert (again / "model.safetensors").read_bytes() == (
        tiny_llama / "model.safetensors"
    ).read_bytes()


def test_synthetic_chat_tokenizer_fills_the_smollm2_vocabulary() -> None:
    tokenizer = synthetic_chat_tokenizer(SHAPES["smollm2-135m"].vocab)
    assert len(tokenizer) == 49152
    vocab = tokenizer.get_vocab()
    assert [vocab[t] for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")] == [0, 1, 2]
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.decode([49151]).strip()


def test_minilm_classifier_has_the_agreement_labels(tmp_path: Path) -> None:
    from evaluators.agreement import AgreementItem, AgreementScorer

    folder = write_random_model("minilm-l6-classifier", tmp_path / "classifier")
    assert resolve_model(str(folder)).kind == "sequence-classifier"
    scorer = AgreementScorer(str(folder), device="cpu")
    assert scorer._model.config.num_hidden_layers == 6
    assert scorer._model.config.hidden_size == 384
    assert {int(k): v for k, v in scorer._model.config.id2label.items()} == AGREEMENT_ID2LABEL
    probabilities = scorer.probabilities([AgreementItem("Is it ok?", "kalo mitu", "Be kind.")])
    assert probabilities.shape == (1, 3)


def test_minilm_encoder_is_a_normalising_sentence_encoder(tmp_path: Path) -> None:
    import numpy as np

    from agents.models import load_sentence_encoder

    folder = write_random_model("minilm-l6-encoder", tmp_path / "encoder")
    assert resolve_model(str(folder)).kind == "sentence-encoder"
    vectors = load_sentence_encoder(str(folder)).encode(["kalo mitu", "be kind"])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_unknown_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown shape"):
        write_random_model("gpt-5", tmp_path / "x")
