"""Bot turns per second of a MoralDial simulation (live scoring on) vs raw batched `generate`.

Runs N dialogues in process with the embedded SmolLM2 and the default evaluators, recording
every batch of histories the bot was asked. The raw side then replays exactly those prompts
through `model.generate` with the same batch sizes and settings, so the ratio shows what the
simulation (users, scoring between rounds, records) costs on top of generation alone. Also
printed: the lag between a bot turn and its scores (p50 / p95 over bot turns).

    python benchmarks/simulate_throughput.py [--dialogues 16] [--max-new-tokens 40]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from agents.base import GenerationSettings
from agents.hf import TransformersAgent
from evaluators.moraldial import MoralDialParams
from evaluators.stack import load_evaluators
from scenarios.jsonl import DialogueWriter
from scenarios.pack import load_pack
from simulators.inprocess import InProcessRunner


class RecordingAgent:
    """Passes calls through and keeps each batch of histories, for the raw replay."""

    def __init__(self, agent: TransformersAgent) -> None:
        self.agent = agent
        self.info = agent.info
        self.batches: list[list[list]] = []

    def respond(self, histories):
        self.batches.append([list(h) for h in histories])
        return self.agent.respond(histories)


class TimedScorer:
    """Times each scoring call: every bot turn of a round waits that long for its scores."""

    def __init__(self, scorer) -> None:
        self.scorer = scorer
        self.lags: list[float] = []

    def score_turns(self, requests):
        start = time.perf_counter()
        out = self.scorer.score_turns(requests)
        self.lags += [time.perf_counter() - start] * len(requests)
        return out

    def finish(self, dialogue):
        return self.scorer.finish(dialogue)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    args = parser.parse_args()

    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    bot = TransformersAgent("smollm2-135m-instruct", generation=settings, batch_size=args.dialogues)
    params = MoralDialParams()
    stack = load_evaluators(params=params)
    questions = load_pack("core").pack.questions_in("test")[: args.dialogues]
    agent, scorer = RecordingAgent(bot), TimedScorer(stack.moraldial)
    runner = InProcessRunner(agent, scorer, params, seed=0)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp, DialogueWriter(Path(tmp) / "d.jsonl") as writer:
        start = time.perf_counter()
        stats = runner.run(questions, writer)
        sim_seconds = time.perf_counter() - start

    tok, model = bot.tokenizer, bot.model
    start = time.perf_counter()
    for batch in agent.batches:
        prompts = [bot.prompt_ids(h, args.max_new_tokens) for h in batch]
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        with torch.no_grad():
            model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=args.max_new_tokens,
                do_sample=False, eos_token_id=bot.stop_ids, pad_token_id=tok.pad_token_id,
            )  # fmt: skip
    raw_seconds = time.perf_counter() - start

    sim_rate = stats.bot_turns / sim_seconds
    raw_rate = stats.bot_turns / raw_seconds
    lags = np.array(scorer.lags)
    print(
        f"{stats.dialogues} dialogues, {stats.bot_turns} bot turns in {len(agent.batches)} batches"
    )
    print(f"simulation (live scoring) {sim_rate:6.2f} bot turns/s  ({sim_seconds:.1f} s)")
    print(f"raw batched generate      {raw_rate:6.2f} bot turns/s  ({raw_seconds:.1f} s)")
    print(f"simulation / raw          {sim_rate / raw_rate:6.2f}")
    p50, p95 = np.percentile(lags, [50, 95])
    print(f"turn -> scores lag        p50 {p50:.2f} s, p95 {p95:.2f} s")


if __name__ == "__main__":
    main()
