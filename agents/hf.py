"""Chatbots on local Hugging Face models: causal LMs and seq2seq, with optional LoRA adapters.

Batching is the point: one `generate` over the pending turns of many dialogues (left padding,
attention masks) is several times faster than one call per dialogue on a CPU. A history longer
than the context is cut from the left, whole turns first, so the latest turns always survive.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.base import AgentInfo, GenerationSettings, History, system_text
from agents.models import ModelError, check_adapter_folder, load_chat_model
from agents.placement import Placement, placement_record, resolve_placement
from scenarios.records import Turn
from scenarios.registry import AGENTS

ROLE_NAMES = {"user": "User", "bot": "Bot", "system": "System"}
CHAT_ROLES = {"user": "user", "bot": "assistant", "system": "system"}
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
_ROLE_PREFIX = re.compile(r"^\s*(?:bot|assistant|system|user)\s*[:\n]\s*", re.IGNORECASE)
_NEXT_TURN = re.compile(r"\n\s*(?:user|bot|assistant|system)\s*:|<\|im_start\|>", re.IGNORECASE)


def clean_reply(text: str) -> str:
    """The bot's turn only: no leading role tag, nothing past the start of another turn."""
    text = _ROLE_PREFIX.sub("", text, count=1)
    match = _NEXT_TURN.search(text)
    if match:
        text = text[: match.start()]
    return text.strip()


def plain_prompt(history: History, system: str | None, add_bot_tag: bool = True) -> str:
    """ "System:/User:/Bot:" lines for models without a chat template."""
    lines = [f"System: {system}"] if system else []
    lines += [f"{ROLE_NAMES[t.role]}: {t.text}" for t in history]
    if add_bot_tag:
        lines.append("Bot:")
    return "\n".join(lines)


@dataclass(frozen=True)
class GeneratedReply:
    """A reply with what generating it cost, for callers that report usage (`moralsim serve`).

    prompt_tokens: the tokens fed to the model (template, system text, left truncation).
    completion_tokens: the tokens generated for this reply, its stop token included.
    cut: generation stopped at max_new_tokens, not at a stop token.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cut: bool


@AGENTS.register("transformers")
class TransformersAgent:
    """A local model as a ChatAgent.

    Args:
        model: local folder or embedded name (causal LM or seq2seq).
        adapter: optional PEFT LoRA adapter folder (adapter_config.json + safetensors).
        merge: fold the adapter into the base weights (faster generation, same outputs).
        system_prompt: instruction prepended to every dialogue.
        rots: rules of thumb the bot is told to follow (SaGE §5.5 RoT prompting).
        max_context_tokens: prompt plus reply budget; longer histories are cut from the left.
        generation: default decoding settings (a call may pass others).
        batch_size: most histories per `generate`.
    """

    def __init__(
        self,
        model: str = "smollm2-135m-instruct",
        *,
        adapter: str | None = None,
        merge: bool = False,
        system_prompt: str | None = None,
        rots: Sequence[str] = (),
        max_context_tokens: int = 1024,
        generation: GenerationSettings | None = None,
        batch_size: int = 16,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        import torch

        self._torch = torch
        self.placement = resolve_placement(device, dtype, prefix="bot.")
        self.model, self.tokenizer, kind = load_chat_model(model, placement=self.placement)
        self.seq2seq = kind == "seq2seq-lm"
        if adapter:
            self.model = _with_adapter(self.model, adapter, merge)
            self.model.to(self.placement.device).eval()  # LoRA weights: PEFT's own dtype
            self.tokenizer = _adapter_tokenizer(adapter, self.tokenizer)
        self._settle(
            self.placement.device, system_prompt, rots, max_context_tokens, generation, batch_size
        )
        self.info = AgentInfo(
            model=model,
            adapter=adapter,
            backend="transformers",
            extra=placement_record(self.placement),
        )

    @classmethod
    def from_loaded(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        label: str = "(in memory)",
        max_context_tokens: int = 1024,
        batch_size: int = 16,
    ) -> TransformersAgent:
        """The bot around a causal LM that is already in memory (e.g. one being trained), with
        the run-time template, prompt cutting, stop tokens and clean-up, and no system prompt."""
        import torch

        agent = cls.__new__(cls)
        agent._torch = torch
        agent.model, agent.tokenizer, agent.seq2seq = model, tokenizer, False
        if tokenizer.pad_token is None:  # as for an adapter's tokenizer
            tokenizer.pad_token = tokenizer.eos_token
        weights = next(model.parameters())
        agent.placement = Placement(str(weights.device), str(weights.dtype).removeprefix("torch."))
        agent._settle(agent.placement.device, None, (), max_context_tokens, None, batch_size)
        agent.info = AgentInfo(model=label, backend="transformers")
        return agent

    def _settle(
        self,
        device: str,
        system_prompt: str | None,
        rots: Sequence[str],
        max_context_tokens: int,
        generation: GenerationSettings | None,
        batch_size: int,
    ) -> None:
        self.device = device
        self.system = system_text(system_prompt, rots)
        self.max_context_tokens = max_context_tokens
        self.generation = generation or GenerationSettings()
        self.batch_size = batch_size
        self.use_chat_template = not self.seq2seq and bool(self.tokenizer.chat_template)
        self.stop_ids = self._stop_ids()

    def context_length(self) -> int:
        """Most tokens a prompt and its reply share: `max_context_tokens`, or the model's own
        position limit when that is smaller (positions past it were never trained)."""
        config = getattr(self.model, "config", None)
        positions = getattr(config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            return min(self.max_context_tokens, positions)
        return self.max_context_tokens

    # ------------------------------------------------------------------ prompts

    def _stop_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id}
        vocab = self.tokenizer.get_vocab()
        ids.update(vocab[t] for t in END_OF_TURN_TOKENS if t in vocab)
        return sorted(i for i in ids if i is not None)

    def _encode(self, history: History, extra_system: str | None = None) -> list[int]:
        system = "\n\n".join(p for p in (self.system, extra_system) if p) or None
        if self.use_chat_template:
            messages = [{"role": "system", "content": system}] if system else []
            messages += [{"role": CHAT_ROLES[t.role], "content": t.text} for t in history]
            encoded = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=True, return_dict=True
            )
            return list(encoded["input_ids"])
        text = plain_prompt(history, system, add_bot_tag=not self.seq2seq)
        return list(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def prompt_ids(self, history: History, max_new_tokens: int) -> list[int]:
        """Token ids of the prompt, cut from the left to leave room for the reply.

        Whole turns go first (oldest first, the system instruction is kept); only when the
        latest turn alone is too long are tokens cut from its left.
        """
        budget = max(1, self.max_context_tokens - (0 if self.seq2seq else max_new_tokens))
        # System turns in the history (e.g. from an API request) join the agent's own.
        extra = "\n\n".join(t.text for t in history if t.role == "system") or None
        turns = [t for t in history if t.role != "system"]
        ids = self._encode(turns, extra)
        while len(ids) > budget and len(turns) > 1:
            turns = turns[1:]
            ids = self._encode(turns, extra)
        return ids[-budget:]

    # ------------------------------------------------------------------ generation

    def respond(
        self,
        histories: Sequence[History],
        settings: GenerationSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> list[str]:
        """Replies in order; setting `cancel` stops generation early (the REPL's Ctrl-C)."""
        return [reply.text for reply in self.generate_replies(histories, settings, cancel)]

    def generate_replies(
        self,
        histories: Sequence[History],
        settings: GenerationSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> list[GeneratedReply]:
        """`respond` with the token counts of each reply: what `moralsim serve` reports."""
        s = settings or self.generation
        replies: list[GeneratedReply] = []
        for start in range(0, len(histories), self.batch_size):
            replies += self._generate(histories[start : start + self.batch_size], s, cancel)
        return replies

    def _generate(
        self,
        histories: Sequence[History],
        s: GenerationSettings,
        cancel: threading.Event | None = None,
    ) -> list[GeneratedReply]:
        torch = self._torch
        if not histories:
            return []
        prompts = [self.prompt_ids(h, s.max_new_tokens) for h in histories]
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        kwargs: dict[str, Any] = {
            "max_new_tokens": s.max_new_tokens,
            "num_beams": s.num_beams,
            "do_sample": s.do_sample,
            "eos_token_id": self.stop_ids,
            "pad_token_id": pad,
        }
        if s.do_sample:
            kwargs.update(temperature=s.temperature, top_p=s.top_p)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if cancel is not None:
            kwargs["stopping_criteria"] = _cancel_criteria(cancel)
        torch.manual_seed(s.seed)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                **kwargs,
            )
        new = out if self.seq2seq else out[:, width:]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        rows = (new[:, 1:] if self.seq2seq else new).tolist()  # seq2seq: drop decoder start
        return [
            self._counted(clean_reply(text), len(prompt), row, s.max_new_tokens)
            for text, prompt, row in zip(texts, prompts, rows, strict=True)
        ]

    def _counted(
        self, text: str, prompt_tokens: int, row: list[int], max_new_tokens: int
    ) -> GeneratedReply:
        """Count a generated row up to its first stop token (only padding follows it); a row
        without one ran until max_new_tokens (or `cancel`) ended generation."""
        stops = set(self.stop_ids)
        end = next((i for i, token in enumerate(row) if token in stops), None)
        if end is None:
            return GeneratedReply(text, prompt_tokens, len(row), len(row) >= max_new_tokens)
        return GeneratedReply(text, prompt_tokens, end + 1, cut=False)

    # ------------------------------------------------------------------ likelihood

    def next_token_logprobs(self, histories: Sequence[History], top_k: int) -> list[dict[str, Any]]:
        """The first reply token's log-probabilities, in the OpenAI `logprobs.content[0]` shape.

        For each history: the most likely next token (`token`, `logprob`) and the `top_k` most
        likely (`top_logprobs`), read from one forward pass over exactly the prompt `respond`
        would use. This is what an LLM judge behind `moralsim serve` reads.
        """
        torch = self._torch
        if self.seq2seq:
            raise NotImplementedError("next_token_logprobs needs a causal LM")
        out: list[dict[str, Any]] = []
        pad = self.tokenizer.pad_token_id
        for start in range(0, len(histories), self.batch_size):
            prompts = [self.prompt_ids(h, 1) for h in histories[start : start + self.batch_size]]
            width = max(len(p) for p in prompts)
            ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
            with torch.no_grad():
                logits = (
                    self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
                    .logits[:, -1]
                    .float()
                )
            logp = torch.log_softmax(logits, dim=-1)
            values, indices = logp.topk(max(1, top_k), dim=-1)
            for row_v, row_i in zip(values.tolist(), indices.tolist(), strict=True):
                top = [
                    {"token": self.tokenizer.decode([i]), "logprob": v}
                    for v, i in zip(row_v, row_i, strict=True)
                ]
                out.append({**top[0], "top_logprobs": top[:top_k]})
        return out

    def loglikelihood(self, requests: Sequence[tuple[History, str]]) -> list[float]:
        """log P(continuation | history) per request, summed over the continuation's tokens.

        The prompt is exactly what `respond` feeds the model for that history (template, system
        text, generation prompt, left truncation), so a reply picked by likelihood answers the
        same question a generated one would. Requests that share a prompt (the candidates of
        one pick) share one pass over it: the prompt runs once, unpadded, and its key/value
        cache is copied for each batch of continuations; continuations are right-padded, and
        a causal model never attends to tokens after its own, so neither the padding side nor
        what else is in the batch changes a value beyond float noise. With a plain
        "User:/Bot:" prompt the continuation follows "Bot:" after one space, as a generated
        reply does. An empty continuation has log-probability 0.
        """
        if self.seq2seq:
            raise NotImplementedError(
                f"loglikelihood needs a causal LM; {self.info.model} is a seq2seq model"
            )
        groups: dict[tuple[int, ...], list[tuple[int, list[int]]]] = {}
        for index, (hist, continuation) in enumerate(requests):
            cont = self._continuation_ids(continuation)
            prompt = self.prompt_ids(hist, max(self.generation.max_new_tokens, len(cont)))
            groups.setdefault(tuple(prompt), []).append((index, cont))
        out = [0.0] * len(requests)
        with self._torch.no_grad():
            for prompt, items in groups.items():
                for index, value in self._score_continuations(list(prompt), items):
                    out[index] = value
        return out

    def _continuation_ids(self, text: str) -> list[int]:
        if not self.use_chat_template and text and not text[0].isspace():
            text = " " + text
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _score_continuations(
        self, prompt: list[int], items: list[tuple[int, list[int]]]
    ) -> list[tuple[int, float]]:
        """(request index, summed log-prob) for continuations of one prompt."""
        import copy

        torch = self._torch
        first = self.model(
            input_ids=torch.tensor([prompt], device=self.device), use_cache=True, logits_to_keep=1
        )
        next_logp = torch.log_softmax(first.logits[0, -1].float(), dim=-1)
        results = [(index, 0.0) for index, cont in items if not cont]
        todo = [(index, cont) for index, cont in items if cont]
        pad = self.tokenizer.pad_token_id
        pad = pad if pad is not None else (self.tokenizer.eos_token_id or 0)
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            width = max(len(c) for _, c in chunk)
            firsts = torch.stack([next_logp[c[0]] for _, c in chunk])
            if width == 1:
                results += [(i, float(v)) for (i, _), v in zip(chunk, firsts, strict=True)]
                continue
            ids = torch.tensor([c + [pad] * (width - len(c)) for _, c in chunk], device=self.device)
            past = copy.deepcopy(first.cache)
            past.batch_repeat_interleave(len(chunk))
            positions = torch.arange(len(prompt), len(prompt) + width, device=self.device)
            logits = self.model(
                input_ids=ids,
                cache=past,
                attention_mask=torch.ones(len(chunk), len(prompt) + width, device=self.device),
                position_ids=positions.expand(len(chunk), -1),
                use_cache=True,
            ).logits.float()
            # Token j of a continuation is predicted at position j - 1; pads are masked out.
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(2, ids[:, 1:, None])[..., 0]
            lengths = torch.tensor([len(c) for _, c in chunk], device=self.device)
            real = torch.arange(1, width, device=self.device)[None, :] < lengths[:, None]
            totals = firsts + (logp * real).sum(dim=1)
            results += [(i, float(v)) for (i, _), v in zip(chunk, totals, strict=True)]
        return results


def _cancel_criteria(cancel: threading.Event) -> Any:
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            return torch.full((input_ids.shape[0],), cancel.is_set(), dtype=torch.bool)

    return StoppingCriteriaList([_Cancelled()])


def _with_adapter(model: Any, adapter: str, merge: bool) -> Any:

    from peft import PeftModel

    folder = check_adapter_folder(adapter)
    peft_model = PeftModel.from_pretrained(model, str(folder))
    return peft_model.merge_and_unload() if merge else peft_model


def _adapter_tokenizer(adapter: str, base_tokenizer: Any) -> Any:
    """The adapter folder's tokenizer when it has one: it carries the chat template the
    adapter was trained with (moralsim train sft saves it), and generation must use the same."""
    from pathlib import Path

    from transformers import AutoTokenizer

    folder = Path(adapter).expanduser()
    if not (folder / "tokenizer_config.json").is_file():
        return base_tokenizer
    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    if len(tokenizer) != len(base_tokenizer):
        raise ModelError(
            f"{folder}: its tokenizer has {len(tokenizer)} tokens but the base model's has "
            f"{len(base_tokenizer)}: the adapter was trained on another base model"
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def history(*pairs: tuple[str, str]) -> list[Turn]:
    """Build a history from (role, text) pairs: a convenience for scripts and tests."""
    return [Turn(role, text) for role, text in pairs]  # type: ignore[arg-type]
