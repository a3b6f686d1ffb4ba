"""Random-initialised model folders of real shapes, for benchmarks on machines without weights.

Throughput depends on a model's shape, not on its weights, as long as every reply runs to
`max_new_tokens`. So a GPU machine with no hub access and no embedded packages can still
measure the bot (SmolLM2-135M / 1.7B shapes), the agreement scorer (a MiniLM-L6
cross-encoder) and the sentence encoder (MiniLM-L6, mean pooling, normalised) from folders
this script writes. Every folder resolves through `agents.models.resolve_model` to the kind the
project expects: causal-lm, sequence-classifier, sentence-encoder.

Greedy replies never stop early: the embedding rows of the end and pad tokens (`<|im_end|>`,
`<|endoftext|>`, the tokenizer's eos/pad) are zero, and the output embeddings are tied to
them, so those logits are exactly 0 while the largest of the other, random, logits is
positive.

Tokenizers. `--tokenizer FOLDER` copies a real one (e.g. ~/.cache/moralsim/models/
smollm2-135m-instruct for the chat shapes, the all-MiniLM-L6-v2 folder for the MiniLM shapes).
Without it a synthetic one is built, and prompt token counts differ from the real tokenizers:
- chat shapes: word level, one token per word and per punctuation run (English words are
  `[UNK]`), where SmolLM2's BPE gives ~1.3 tokens per word, so prompts are ~25% shorter; the
  ChatML markers are single tokens, as in SmolLM2, and there is no default system line.
- MiniLM shapes: WordPiece over the same made-up syllable words the chat vocabulary holds, so
  a generated reply costs ~1-2 tokens per word (real BERT ~1.2); English words are one
  `[UNK]` each unless they split into those syllables.
Replies are unaffected (they run to max_new_tokens either way).

    python benchmarks/random_model.py --shape smollm2-135m --out /tmp/smollm2-135m-random \
        [--tokenizer ~/.cache/moralsim/models/smollm2-135m-instruct] [--seed 0]
    shapes: smollm2-135m, smollm2-1.7b, minilm-l6-classifier, minilm-l6-encoder, tiny-llama,
    tiny-bert (the last two are tiny, for tests)
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHAT_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""The ids SmolLM2 gives them (0, 1, 2), so prompts carry the same ids as the real model's."""
STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PUNCTUATION = tuple(".,?!'\":;-()")
AGREEMENT_ID2LABEL = {0: "agree", 1: "neutral", 2: "disagree"}
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class Shape:
    """A model architecture's sizes; `family` picks the builder ("llama", "bert-classifier",
    "bert-encoder"); `save_dtype` halves the disk of the big one (loads use the placement's)."""

    family: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    max_positions: int
    rope_theta: float = 10000.0
    save_dtype: str = "float32"


SHAPES: dict[str, Shape] = {
    "smollm2-135m": Shape("llama", 30, 576, 1536, 9, 3, 49152, 8192, 100000.0),
    "smollm2-1.7b": Shape("llama", 24, 2048, 8192, 32, 32, 49152, 8192, 130000.0, "bfloat16"),
    "tiny-llama": Shape("llama", 2, 64, 128, 4, 2, 512, 2048),
    "minilm-l6-classifier": Shape("bert-classifier", 6, 384, 1536, 12, 12, 30522, 512),
    "minilm-l6-encoder": Shape("bert-encoder", 6, 384, 1536, 12, 12, 30522, 512),
    "tiny-bert": Shape("bert-classifier", 2, 32, 64, 2, 2, 1024, 512),
}


# --------------------------------------------------------------------------- vocabularies


def syllable_words() -> list[str]:
    """Made-up lowercase words, two-syllable ones first, then three-syllable ones: ordered so
    any prefix of the list is a valid vocabulary and a WordPiece vocabulary of the two-syllable
    words plus `##syllable` pieces splits every one of them."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    two = ["".join(p) for p in itertools.product(syllables, repeat=2)]
    three = ("".join(p) for p in itertools.product(syllables, repeat=3))
    return syllables + two + list(itertools.islice(three, 60000))


def chat_vocab(size: int) -> dict[str, int]:
    """ChatML specials (SmolLM2's ids), `[UNK]`, punctuation, then made-up words to `size`."""
    words = [*CHAT_SPECIALS, "[UNK]", *PUNCTUATION]
    words += syllable_words()[: size - len(words)]
    if len(words) < size:
        raise ValueError(f"cannot make a synthetic vocabulary of {size} tokens")
    return {w: i for i, w in enumerate(words)}


def bert_vocab(size: int) -> dict[str, int]:
    """BERT specials, punctuation, `##syllable` continuations, then made-up words to `size`."""
    syllables = syllable_words()[:70]
    words = [*BERT_SPECIALS, *PUNCTUATION, *(f"##{s}" for s in syllables)]
    words += syllable_words()[: size - len(words)]
    if len(words) < size:
        raise ValueError(f"cannot make a synthetic vocabulary of {size} tokens")
    return {w: i for i, w in enumerate(words)}


def synthetic_chat_tokenizer(vocab_size: int) -> Any:
    """A fast word-level tokenizer with a ChatML template; eos = pad = `<|im_end|>`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab=chat_vocab(vocab_size), unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="[UNK]",
        additional_special_tokens=list(CHAT_SPECIALS),
        model_max_length=8192,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def synthetic_bert_tokenizer(vocab_size: int) -> Any:
    """A fast WordPiece tokenizer that pairs like BERT's: `[CLS] a [SEP] b [SEP]`, segment ids."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = bert_vocab(vocab_size)
    core = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    core.normalizer = normalizers.BertNormalizer(lowercase=True)
    core.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    core.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def copied_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(Path(folder).expanduser()))


# --------------------------------------------------------------------------- models


def zeroed_token_ids(tokenizer: Any) -> list[int]:
    """Ids whose embedding rows are zeroed: end-of-turn, end-of-text, eos and pad (so replies
    never stop), and the other special tokens (`[UNK]`, `<|im_start|>`), which decoding drops:
    a reply of them would be empty text and score unlike a real one."""
    vocab = tokenizer.get_vocab()
    ids = {vocab[t] for t in STOP_TOKENS if t in vocab}
    ids.update(i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None)
    ids.update(tokenizer.all_special_ids)
    return sorted(ids)


def build_llama(shape: Shape, tokenizer: Any) -> Any:
    """A random LlamaForCausalLM with tied embeddings whose stop-token rows are zero."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig

    if len(tokenizer) > shape.vocab:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens; the shape {shape.vocab}")
    stops = zeroed_token_ids(tokenizer)
    config = LlamaConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.hidden // shape.heads,
        max_position_embeddings=shape.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta},
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    # Initialised on the GPU where there is one: the 1.7B shape takes minutes on a few cores.
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, shape.save_dtype))
    embeddings = model.get_input_embeddings().weight
    if model.get_output_embeddings().weight.data_ptr() != embeddings.data_ptr():
        raise RuntimeError("output embeddings are not tied: zeroed rows would not stop replies")
    with torch.no_grad():
        embeddings[stops] = 0
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def bert_config(shape: Shape, tokenizer: Any, **extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.intermediate,
        max_position_embeddings=shape.max_positions,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def build_bert_classifier(shape: Shape, tokenizer: Any) -> Any:
    """A random 3-way cross-encoder whose labels the agreement scorer reads by name."""
    from transformers import BertForSequenceClassification

    config = bert_config(
        shape,
        tokenizer,
        num_labels=3,
        id2label=dict(AGREEMENT_ID2LABEL),
        label2id={v: k for k, v in AGREEMENT_ID2LABEL.items()},
    )
    return BertForSequenceClassification(config)


def write_sentence_encoder(shape: Shape, tokenizer: Any, out: Path) -> None:
    """A sentence-transformers folder (BertModel, mean pooling, normalise), written by hand in
    the long-stable format of all-MiniLM-L6-v2 so any sentence-transformers version loads it."""
    from transformers import BertModel

    BertModel(bert_config(shape, tokenizer)).save_pretrained(out, safe_serialization=True)
    modules = [
        ("0", "", "sentence_transformers.models.Transformer"),
        ("1", "1_Pooling", "sentence_transformers.models.Pooling"),
        ("2", "2_Normalize", "sentence_transformers.models.Normalize"),
    ]
    listed = [{"idx": i, "name": n, "path": p, "type": t} for i, (n, p, t) in enumerate(modules)]
    pooling = {
        "word_embedding_dimension": shape.hidden,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    _write_json(out / "modules.json", listed)
    _write_json(out / "sentence_bert_config.json", {"max_seq_length": 256, "do_lower_case": False})
    _write_json(out / "1_Pooling" / "config.json", pooling)
    (out / "2_Normalize").mkdir(exist_ok=True)


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def shape_tokenizer(shape: Shape, tokenizer_folder: Path | None) -> Any:
    """The copied tokenizer, or a synthetic one of the shape's vocabulary size."""
    if tokenizer_folder is not None:
        return copied_tokenizer(tokenizer_folder)
    if shape.family == "llama":
        return synthetic_chat_tokenizer(shape.vocab)
    return synthetic_bert_tokenizer(shape.vocab)


def write_random_model(
    shape_name: str, out: Path, tokenizer_folder: Path | None = None, seed: int = 0
) -> Path:
    """Write a random-initialised model of `shape_name` (see SHAPES) and its tokenizer to `out`.

    Args:
        tokenizer_folder: copy this tokenizer instead of building a synthetic one; for
            `tiny-llama` the vocabulary then takes the tokenizer's size.
        seed: torch seed of the initialisation (the same seed on the same kind of device
            writes the same weights).
    """
    import dataclasses

    import torch

    if shape_name not in SHAPES:
        raise ValueError(f"unknown shape {shape_name!r}; known: {', '.join(SHAPES)}")
    shape = SHAPES[shape_name]
    tokenizer = shape_tokenizer(shape, tokenizer_folder)
    if shape_name == "tiny-llama" and tokenizer_folder is not None:
        shape = dataclasses.replace(shape, vocab=len(tokenizer))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if shape.family == "bert-encoder":
        write_sentence_encoder(shape, tokenizer, out)
    else:
        build = build_llama if shape.family == "llama" else build_bert_classifier
        build(shape, tokenizer).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", choices=sorted(SHAPES), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, default=None, help="copy this tokenizer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    out = write_random_model(args.shape, args.out, args.tokenizer, args.seed)
    print(f"wrote {args.shape} to {out} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
