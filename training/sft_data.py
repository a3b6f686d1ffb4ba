"""Discussion rows -> token ids with a loss mask on the modelled answer only.

Each discussion row ends on the assistant turn its flow models (MA: A, ME: R, MR: A', RIL:
A_new, PT: the RoT statement). Earlier assistant turns are context, and in MR that context is
an answer that DISAGREES with the RoT, so training on every assistant turn would teach the very
answer the revision corrects. Rows therefore become TRL's conversational prompt-completion
pairs (prompt = all messages but the last, completion = the last) and only the completion is
learned.

The rows are tokenised here rather than by `SFTTrainer` for three reasons: a PT row has an
empty prompt, which TRL's conversational check (it reads `prompt[0]`) and transformers'
`apply_chat_template` (it refuses an empty conversation) both reject; a chat
template that ends every message with "<|im_end|>\\n" would put the newline into the loss; and
a row longer than `max_length` must lose its oldest context turns (as the bot does when it
generates), not its answer's end token. TRL still turns `completion_mask` into labels, pads and
trains, so the loss is TRL's completion-only loss.

The training template must also be the generation template, so it is saved with the adapter
(agents.hf loads it from there). `chatml` renders a prompt exactly as a stock ChatML template
does (including a default system line, when the model's own template injects one), so the
moral bot sees the same prompt layout as its base model; it differs only in not emitting a
newline after the final message.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.sft_config import SFTConfigError

END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
ROLES = ("system", "user", "assistant")
_PROBE = "moralsim-template-probe"


class SFTDataError(ValueError):
    """A discussion row that cannot be trained on; the message names split, row and field."""


# --------------------------------------------------------------------------- chat templates


def chatml_template(default_system: str | None) -> str:
    """ChatML with no newline after the final message (so it is not learned as part of it)."""
    preamble = ""
    if default_system:
        block = "<|im_start|>system\n" + default_system + "<|im_end|>\n"
        preamble = (
            "{%- if not messages or messages[0]['role'] != 'system' %}{{ "
            + _jinja_literal(block)
            + " }}{% endif -%}"
        )
    return (
        preamble + "{%- for message in messages -%}"
        "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' }}"
        "{%- if not loop.last or add_generation_prompt %}{{ '\n' }}{% endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif -%}"
    )


PLAIN_TEMPLATE = (
    "{%- set names = {'system': 'System', 'user': 'User', 'assistant': 'Bot'} -%}"
    "{%- for message in messages -%}"
    "{{ names[message['role']] + ': ' + message['content'] }}"
    "{%- if message['role'] == 'assistant' %}{{ eos_token }}{% endif -%}"
    "{%- if not loop.last or add_generation_prompt %}{{ '\n' }}{% endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}{{ 'Bot:' }}{% endif -%}"
)
"""For models without a chat template: the System:/User:/Bot: lines of agents.hf, with the
end-of-sequence token closing each bot turn so the model learns where a reply ends."""


def _jinja_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + escaped + "'"


def _is_chatml(tokenizer: Any) -> bool:
    vocab = tokenizer.get_vocab()
    return "<|im_start|>" in vocab and "<|im_end|>" in vocab


def _default_system_line(tokenizer: Any) -> str | None:
    """The system line the model's own template adds to a conversation without one.

    Found by rendering a one-message conversation; None when it adds nothing. A template that
    puts something else in front (not one ChatML system block) is refused, because copying it
    blindly could change what the base model was tuned to see.
    """
    if not tokenizer.chat_template:
        return None
    probe = [{"role": "user", "content": _PROBE}]
    rendered = tokenizer.apply_chat_template(probe, tokenize=False)
    start = rendered.find("<|im_start|>user\n" + _PROBE)
    if start < 0:
        raise SFTConfigError(
            "'chat_template': the model's own template is not ChatML; set chat_template to "
            "plain or to a .jinja file"
        )
    prefix = rendered[:start]
    if not prefix:
        return None
    match = re.fullmatch(r"<\|im_start\|>system\n(.*)<\|im_end\|>\n", prefix, flags=re.DOTALL)
    if not match:
        raise SFTConfigError(
            f"'chat_template': the model's template puts {prefix!r} before a conversation; "
            "give your own template as a .jinja file"
        )
    return match.group(1)


def training_chat_template(tokenizer: Any, choice: str) -> str:
    """The template to train with (and to save for generation) for a config choice."""
    if choice.endswith((".jinja", ".j2")):
        path = Path(choice).expanduser()
        if not path.is_file():
            raise SFTConfigError(f"'chat_template': {path} is not a file")
        return path.read_text(encoding="utf-8")
    if choice == "auto":
        choice = "chatml" if _is_chatml(tokenizer) else "plain"
    if choice == "chatml":
        if not _is_chatml(tokenizer):
            raise SFTConfigError(
                "'chat_template' is chatml, but the tokenizer has no <|im_start|>/<|im_end|> "
                "tokens; use plain"
            )
        return chatml_template(_default_system_line(tokenizer))
    if tokenizer.eos_token is None:
        raise SFTConfigError("'chat_template' plain needs a tokenizer with an eos token")
    return PLAIN_TEMPLATE


def end_of_turn_ids(tokenizer: Any) -> set[int]:
    vocab = tokenizer.get_vocab()
    ids = {vocab[t] for t in END_OF_TURN_TOKENS if t in vocab}
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


# --------------------------------------------------------------------------- rows


def to_prompt_completion(messages: Sequence[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """TRL's conversational prompt-completion pair: the completion is the last message."""
    return {"prompt": [dict(m) for m in messages[:-1]], "completion": [dict(messages[-1])]}


def check_messages(messages: Any, where: str) -> list[dict[str, str]]:
    """The row's messages, or an SFTDataError saying what is wrong and where."""
    if not isinstance(messages, list) or not messages:
        raise SFTDataError(f"{where}: 'messages' must be a non-empty list of messages")
    clean: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise SFTDataError(f"{where}: messages[{i}] is not a mapping")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise SFTDataError(f"{where}: messages[{i}].role is {role!r}; expected one of {ROLES}")
        if not isinstance(content, str) or not content.strip():
            raise SFTDataError(f"{where}: messages[{i}].content is empty or not text")
        clean.append({"role": role, "content": content})
    if clean[-1]["role"] != "assistant":
        raise SFTDataError(
            f"{where}: the last message is a {clean[-1]['role']} turn; every row must end on "
            "the assistant turn its flow models"
        )
    return clean


@dataclass
class TokenizedRow:
    input_ids: list[int]
    completion_mask: list[int]
    dropped_turns: int


def tokenize_row(
    tokenizer: Any,
    template: str,
    messages: list[dict[str, str]],
    max_length: int,
    stop_ids: set[int],
    where: str,
) -> TokenizedRow | None:
    """Ids and completion mask for one row; None when even the bare answer is too long.

    Oldest context turns go first until the row fits, as agents.hf does when it generates.
    """
    pair = to_prompt_completion(messages)
    prompt, completion = pair["prompt"], pair["completion"]
    dropped = 0
    while True:
        prompt_ids = _render(tokenizer, template, prompt, generation_prompt=True)
        full_ids = _render(tokenizer, template, prompt + completion, generation_prompt=False)
        if len(full_ids) <= max_length or not prompt:
            break
        prompt = prompt[1:]
        dropped += 1
    if len(full_ids) > max_length:
        return None
    if full_ids[: len(prompt_ids)] != prompt_ids:
        raise SFTDataError(
            f"{where}: the chat template renders the prompt differently on its own than in "
            "front of the answer, so the answer's tokens cannot be told apart; use a template "
            "whose prompt is a prefix of the whole conversation"
        )
    answer = full_ids[len(prompt_ids) :]
    ends = [i for i, token in enumerate(answer) if token in stop_ids]
    if not ends:
        raise SFTDataError(
            f"{where}: the chat template does not close the assistant answer with an "
            "end-of-turn token, so the model would never learn to stop"
        )
    answer = answer[: ends[0] + 1]  # nothing after the answer's end token is learned
    input_ids = prompt_ids + answer
    return TokenizedRow(input_ids, [0] * len(prompt_ids) + [1] * len(answer), dropped)


def _render(
    tokenizer: Any, template: str, messages: list[dict[str, str]], generation_prompt: bool
) -> list[int]:
    """What `apply_chat_template` does, minus its refusal of an empty conversation (a PT row's
    prompt is empty: the generation prompt, and any default system line, alone)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    if not messages and not generation_prompt:
        return []
    rendered, _ = render_jinja_template(
        conversations=[messages],
        chat_template=template,
        add_generation_prompt=generation_prompt,
        **tokenizer.special_tokens_map,
    )
    return list(tokenizer(rendered[0], add_special_tokens=False)["input_ids"])


# --------------------------------------------------------------------------- splits


@dataclass
class SplitStats:
    """What went into one split: rows per flow, rows cut or skipped for length."""

    rows_by_flow: dict[str, int] = field(default_factory=dict)
    truncated: int = 0
    skipped_too_long: int = 0
    tokens: int = 0
    answer_tokens: int = 0


def tokenize_split(
    rows: Any,
    split: str,
    tokenizer: Any,
    template: str,
    flows: Sequence[str],
    max_length: int,
    max_rows: int | None = None,
    seed: int = 0,
) -> tuple[dict[str, list[list[int]]], SplitStats]:
    """Columns `input_ids` and `completion_mask` for the rows of the chosen flows."""
    stop_ids = end_of_turn_ids(tokenizer)
    if not stop_ids:
        raise SFTConfigError("the tokenizer has neither an eos token nor an end-of-turn token")
    indices = [i for i, flow in enumerate(rows["flow"]) if flow in flows]
    if max_rows is not None and len(indices) > max_rows:
        indices = sorted(random.Random(seed).sample(indices, max_rows))
    stats = SplitStats()
    columns: dict[str, list[list[int]]] = {"input_ids": [], "completion_mask": []}
    flow_counts: Counter[str] = Counter()
    for i in indices:
        row = rows[i]
        where = f"{split} row {i} (question_id {row.get('question_id')!r}, flow {row['flow']})"
        messages = check_messages(row.get("messages"), where)
        tokenized = tokenize_row(tokenizer, template, messages, max_length, stop_ids, where)
        if tokenized is None:
            stats.skipped_too_long += 1
            continue
        stats.truncated += tokenized.dropped_turns > 0
        stats.tokens += len(tokenized.input_ids)
        stats.answer_tokens += sum(tokenized.completion_mask)
        flow_counts[row["flow"]] += 1
        columns["input_ids"].append(tokenized.input_ids)
        columns["completion_mask"].append(tokenized.completion_mask)
    stats.rows_by_flow = {flow: flow_counts[flow] for flow in flows}
    return columns, stats
