"""End-to-end checks on the real embedded models (marked slow; CI runs them)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from agents.models import load_causal_lm, load_sentence_encoder, prepare_model, resolve_model

pytestmark = pytest.mark.slow


def test_smollm2_answers_a_moral_question_greedily() -> None:
    import torch

    model, tokenizer = load_causal_lm("smollm2-135m-instruct")
    assert resolve_model("smollm2-135m-instruct").path.name == "smollm2-135m-instruct"
    messages = [{"role": "user", "content": "Is it okay to lie to my best friend?"}]
    inputs = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        first = model.generate(**inputs, max_new_tokens=24, do_sample=False)
        second = model.generate(**inputs, max_new_tokens=24, do_sample=False)
    answer = tokenizer.decode(first[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert torch.equal(first, second)  # greedy is deterministic
    words = answer.split()
    assert len(words) >= 5, answer
    # An instruction-tuned model answers in English about the question, not noise.
    assert any(
        w.lower().strip(".,!?'\"")
        in {"lie", "lying", "honest", "honesty", "friend", "truth", "trust"}
        for w in words
    ), answer


def test_minilm_embeds_384_dimensions() -> None:
    import numpy as np

    encoder = load_sentence_encoder("minilm-l6")
    vectors = encoder.encode(
        [
            "It's wrong to lie to your friends.",
            "You shouldn't deceive friends.",
            "Cats sleep a lot.",
        ],
        normalize_embeddings=True,
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > unrelated + 0.3


def test_prepare_is_a_no_op_then_rebuilds_after_deletion(isolated_cache: Path) -> None:
    first = prepare_model("smollm2-135m-instruct", progress=lambda m: None)
    assert first.built
    start = time.perf_counter()
    again = prepare_model("smollm2-135m-instruct", progress=lambda m: None)
    assert not again.built and time.perf_counter() - start < 2.0
    shutil.rmtree(isolated_cache)
    rebuilt = prepare_model("smollm2-135m-instruct", progress=lambda m: None)
    assert rebuilt.built and (rebuilt.path / "model.safetensors").is_file()
