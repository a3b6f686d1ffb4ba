"""The chatbot contract every dialogue, probe, server and REPL talks to.

`respond` is always batched: the simulator gathers the pending turns of many dialogues into one
call, and the REPL is simply a batch of one. Given the same histories, generation settings and
seed, an agent returns the same replies, whatever else shares the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from scenarios.records import Turn

History = Sequence[Turn]


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding parameters (the MoralDial setting is num_beams=10, max_new_tokens=60)."""

    max_new_tokens: int = 60
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    num_beams: int = 1
    seed: int = 0

    def key(self) -> str:
        """Stable text form, part of the response-cache key."""
        return (
            f"max_new_tokens={self.max_new_tokens};do_sample={self.do_sample};"
            f"temperature={self.temperature};top_p={self.top_p};num_beams={self.num_beams};"
            f"seed={self.seed}"
        )


@dataclass(frozen=True)
class AgentInfo:
    """What a record needs to say which bot produced a turn."""

    model: str
    adapter: str | None = None
    backend: str = ""
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class ChatAgent(Protocol):
    """A bot: histories in (user/bot/system turns), one reply per history out."""

    info: AgentInfo

    def respond(self, histories: Sequence[History]) -> list[str]: ...


def system_text(system_prompt: str | None, rots: Sequence[str] = ()) -> str | None:
    """The instruction prepended to a dialogue: a system prompt and/or RoTs to follow.

    Prompting with the RoT to follow is the SaGE §5.5 experiment, so the wording is fixed here
    (not per backend) and recorded with the run.
    """
    parts = [system_prompt.strip()] if system_prompt and system_prompt.strip() else []
    if rots:
        listed = "\n".join(f"- {r.strip()}" for r in rots)
        parts.append(f"Follow these rules of thumb in your answers:\n{listed}")
    return "\n\n".join(parts) or None


@runtime_checkable
class LikelihoodAgent(ChatAgent, Protocol):
    """A bot that can also score given replies, for probes that pick answers by likelihood.

    Small models often cannot follow an answer format; scoring each allowed answer lets them
    be probed anyway (the DIT probe's likelihood mode). Served bots usually cannot do this.
    """

    def loglikelihood(self, requests: Sequence[tuple[History, str]]) -> list[float]:
        """Summed log P(continuation | the prompt `respond` would use for history)."""
        ...
