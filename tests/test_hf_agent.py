from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.base import GenerationSettings, system_text
from agents.hf import TransformersAgent, clean_reply, history, plain_prompt
from agents.models import ModelError
from scenarios.records import Turn

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

HISTORIES = [
    history(("user", "is it okay to lie ?")),
    history(("user", "is it okay to lie ?"), ("bot", "no you should not"), ("user", "why ?")),
    history(("user", "you should not lie .")),
]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Bot: No, you shouldn't.", "No, you shouldn't."),
        ("assistant\nNo.", "No."),
        ("No, be honest.\nUser: why?", "No, be honest."),
        ("Sure.<|im_start|>user", "Sure."),
        ("  plain  ", "plain"),
    ],
)
def test_clean_reply(raw: str, clean: str) -> None:
    assert clean_reply(raw) == clean


def test_plain_prompt_and_system_text() -> None:
    sys_text = system_text("Be kind.", ["It's wrong to lie."])
    assert (
        sys_text == "Be kind.\n\nFollow these rules of thumb in your answers:\n- It's wrong to lie."
    )
    text = plain_prompt([Turn("user", "hi"), Turn("bot", "hello")], sys_text)
    assert text.startswith("System: Be kind.") and text.endswith("User: hi\nBot: hello\nBot:")


def test_batched_greedy_equals_one_by_one(tiny_causal_lm: Path) -> None:
    settings = GenerationSettings(max_new_tokens=6)
    agent = TransformersAgent(str(tiny_causal_lm), generation=settings, batch_size=8)
    batched = agent.respond(HISTORIES)
    single = [agent.respond([h])[0] for h in HISTORIES]
    assert batched == single
    assert agent.respond(HISTORIES) == batched  # deterministic


def test_left_truncation_keeps_the_latest_turns(tiny_causal_lm: Path) -> None:
    agent = TransformersAgent(
        str(tiny_causal_lm), max_context_tokens=40, system_prompt="you should not lie ."
    )
    long = history(*[("user", "is it okay to lie ?"), ("bot", "yes")] * 6, ("user", "why ?"))
    full = agent.prompt_ids(long, max_new_tokens=0)
    ids = agent.prompt_ids(long, max_new_tokens=4)
    assert len(full) > 36 >= len(ids)  # the whole history does not fit in 40 - 4
    text = agent.tokenizer.decode(ids)
    assert text.startswith(agent.tokenizer.decode(agent.prompt_ids([], 4)[:8]))  # system kept
    assert "you should not lie" in text
    assert "why ?" in text  # the latest turn survives
    assert 0 < text.count("is it okay to lie ?") < 6  # oldest turns were dropped, whole
    tiny = TransformersAgent(str(tiny_causal_lm), max_context_tokens=7)
    assert tiny.prompt_ids(long[-1:], max_new_tokens=4) == tiny._encode(long[-1:])[-3:]


def test_beam_search_and_sampling_are_seeded(tiny_causal_lm: Path) -> None:
    agent = TransformersAgent(str(tiny_causal_lm))
    beams = GenerationSettings(max_new_tokens=5, num_beams=3)
    assert agent.respond(HISTORIES, beams) == agent.respond(HISTORIES, beams)
    sample = GenerationSettings(max_new_tokens=8, do_sample=True, temperature=1.5, seed=7)
    first = agent.respond(HISTORIES, sample)
    assert agent.respond(HISTORIES, sample) == first
    others = {
        tuple(
            agent.respond(
                HISTORIES,
                GenerationSettings(max_new_tokens=8, do_sample=True, temperature=1.5, seed=s),
            )
        )
        for s in range(5)
    }
    assert len(others) > 1  # different seeds explore different continuations


def test_chat_template_is_used_when_present(tiny_causal_lm: Path) -> None:
    config = json.loads((tiny_causal_lm / "tokenizer_config.json").read_text())
    config["chat_template"] = CHATML
    (tiny_causal_lm / "tokenizer_config.json").write_text(json.dumps(config))
    agent = TransformersAgent(str(tiny_causal_lm))
    assert agent.use_chat_template
    assert len(agent.respond(HISTORIES[:1], GenerationSettings(max_new_tokens=3))) == 1


@pytest.fixture
def lora_adapter(tiny_causal_lm: Path, tmp_path: Path) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_causal_lm)
    config = LoraConfig(
        r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    peft_model = get_peft_model(base, config)
    folder = tmp_path / "adapter"
    peft_model.save_pretrained(folder)
    return folder


def test_adapter_changes_outputs_and_merge_keeps_them(
    tiny_causal_lm: Path, lora_adapter: Path
) -> None:
    settings = GenerationSettings(max_new_tokens=8)
    base = TransformersAgent(str(tiny_causal_lm), generation=settings)
    tuned = TransformersAgent(str(tiny_causal_lm), adapter=str(lora_adapter), generation=settings)
    merged = TransformersAgent(
        str(tiny_causal_lm), adapter=str(lora_adapter), merge=True, generation=settings
    )
    assert (lora_adapter / "adapter_config.json").is_file()
    assert tuned.respond(HISTORIES) != base.respond(HISTORIES)
    assert merged.respond(HISTORIES) == tuned.respond(HISTORIES)
    assert tuned.info.adapter == str(lora_adapter)


def test_bad_adapter_and_non_chat_model(tiny_causal_lm: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a PEFT adapter folder"):
        TransformersAgent(str(tiny_causal_lm), adapter=str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(ModelError, match="not a chat model"):
        TransformersAgent(str(tmp_path))


def test_system_turns_in_the_history_reach_the_prompt(tiny_causal_lm: Path) -> None:
    agent = TransformersAgent(str(tiny_causal_lm), system_prompt="you should not lie .")
    with_system = [Turn("system", "it is wrong to lie ."), Turn("user", "why ?")]
    text = agent.tokenizer.decode(agent.prompt_ids(with_system, 4))
    assert "you should not lie ." in text and "it is wrong to lie ." in text


def test_seq2seq_bot_batches_like_one_by_one(tiny_seq2seq: Path) -> None:
    agent = TransformersAgent(str(tiny_seq2seq), generation=GenerationSettings(max_new_tokens=5))
    assert agent.seq2seq and not agent.use_chat_template
    batched = agent.respond(HISTORIES)
    assert batched == [agent.respond([h])[0] for h in HISTORIES]
    assert all(isinstance(r, str) for r in batched)
