"""Shared fixtures: tiny models built from configs (no downloads) and an isolated model cache."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh MORALSIM_CACHE so a test never sees (or damages) the user's prepared models."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MORALSIM_CACHE", str(cache))
    return cache


TINY_VOCAB = [
    "<pad>",
    "<s>",
    "</s>",
    "<unk>",
    "user",
    "bot",
    ":",
    "is",
    "it",
    "okay",
    "to",
    "lie",
    "yes",
    "no",
    "you",
    "should",
    "not",
    "why",
    "because",
    "wrong",
    "the",
    "a",
    "?",
    ".",
]


def build_tiny_tokenizer(folder: Path) -> None:
    """A word-level tokenizer over TINY_VOCAB, saved in Hugging Face format."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(TINY_VOCAB)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    tok.save_pretrained(folder)


@pytest.fixture
def tiny_causal_lm(tmp_path: Path) -> Path:
    """A 2-layer random Llama saved as a local Hugging Face folder."""
    return make_tiny_causal_lm(tmp_path / "tiny-llama")


def make_tiny_causal_lm(folder: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(TINY_VOCAB),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    build_tiny_tokenizer(folder)
    return folder


def tiny_bert_config(**extra: object) -> object:
    """A 1-layer, 16-wide BERT over TINY_VOCAB-sized ids."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        **extra,
    )


@pytest.fixture
def tiny_classifier(tmp_path: Path) -> Path:
    """A random 3-label BERT whose label order is NOT agree/neutral/disagree."""
    return make_tiny_classifier(tmp_path / "tiny-agreement")


def make_tiny_classifier(folder: Path) -> Path:
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    config = tiny_bert_config(
        num_labels=3,
        id2label={0: "disagree", 1: "AGREE", 2: "neutral"},
        label2id={"disagree": 0, "AGREE": 1, "neutral": 2},
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    build_tiny_tokenizer(folder)
    return folder


@pytest.fixture
def tiny_encoder(tmp_path: Path) -> Path:
    """A random BERT encoder folder (no task head), as a base for scorer training."""
    import torch
    from transformers import BertModel

    folder = tmp_path / "tiny-encoder"
    torch.manual_seed(0)
    BertModel(tiny_bert_config()).save_pretrained(folder)
    build_tiny_tokenizer(folder)
    return folder


@pytest.fixture
def tiny_seq2seq(tmp_path: Path) -> Path:
    """A 1-layer random T5 saved as a local Hugging Face folder."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    folder = tmp_path / "tiny-t5"
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=len(TINY_VOCAB), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=2,
    )  # fmt: skip
    T5ForConditionalGeneration(config).save_pretrained(folder)
    build_tiny_tokenizer(folder)
    return folder
