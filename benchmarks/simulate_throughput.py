"""Bot turns per second of a MoralDial simulation (live scoring on) vs raw batched `generate`.

Runs N dialogues in process with the embedded SmolLM2 and the default evaluators, recording
every batch of histories the bot was asked. The raw side then replays exactly those prompts
through `model.generate` with the same batch sizes and settings, so the ratio shows what the
simulation (users, scoring between rounds, records) costs on top of generation alone. Also
printed: the lag between a bot turn and its scores (p50 / p95 over bot turns).

    python benchmarks/simulate_throughput.py [--dialogues 16] [--max-new-tokens 40]
    python benchmarks/simulate_throughput.py --runtime ray [--threads 2]

With `--runtime ray` the dialogues run on the Ray runtime (a bot actor and an evaluator actor,
users as asyncio tasks); the raw side replays the run's prompts grouped by dialogue step into
batches of the same size, with the bot actor's number of torch threads.
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
from scenarios.jsonl import DialogueWriter, read_dialogues
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


def replay_raw(bot: TransformersAgent, batches: list[list[list]], max_new_tokens: int) -> float:
    """Seconds for plain `model.generate` over exactly these batches of histories."""
    tok, model = bot.tokenizer, bot.model
    start = time.perf_counter()
    for batch in batches:
        prompts = [bot.prompt_ids(h, max_new_tokens) for h in batch]
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        with torch.no_grad():
            model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                do_sample=False, eos_token_id=bot.stop_ids, pad_token_id=tok.pad_token_id,
            )  # fmt: skip
    return time.perf_counter() - start


def batches_from_records(path: Path, batch_size: int) -> list[list[list]]:
    """The bot's prompts of a finished run, grouped by dialogue step into batches: what a
    lockstep runner with this batch size would have asked."""
    by_step: dict[str, list[list]] = {}
    for dialogue in read_dialogues(path):
        for i, turn in enumerate(dialogue.turns):
            if turn.role == "bot":
                by_step.setdefault(turn.meta["step"], []).append(dialogue.turns[:i])
    batches = []
    for step in ("answer", "explanation", "revision", "new_answer"):
        histories = by_step.get(step, [])
        batches += [histories[i : i + batch_size] for i in range(0, len(histories), batch_size)]
    return batches


def run_in_process(args: argparse.Namespace, questions: list, settings: GenerationSettings):
    bot = TransformersAgent("smollm2-135m-instruct", generation=settings, batch_size=args.dialogues)
    params = MoralDialParams()
    stack = load_evaluators(params=params)
    agent, scorer = RecordingAgent(bot), TimedScorer(stack.moraldial)
    runner = InProcessRunner(agent, scorer, params, seed=0)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp, DialogueWriter(Path(tmp) / "d.jsonl") as writer:
        start = time.perf_counter()
        stats = runner.run(questions, writer)
        sim_seconds = time.perf_counter() - start
    return bot, stats.bot_turns, sim_seconds, agent.batches, scorer.lags


def run_on_ray(args: argparse.Namespace, questions: list, settings: GenerationSettings):
    from evaluators.moraldial import MoralDialParams as Params
    from simulators.backend import open_backend
    from simulators.live import LiveStats
    from simulators.ray_actors import AgentSpec, EvaluatorSpec
    from simulators.ray_runtime import RayOptions

    agent = AgentSpec(
        "transformers",
        "smollm2-135m-instruct",
        {"generation": settings, "batch_size": args.dialogues},
    )
    evaluators = EvaluatorSpec("agreement-minilm", "minilm-l6", None, Params())
    options = RayOptions(bot_threads=args.threads, evaluator_threads=1)
    live = LiveStats()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.jsonl"
        with (
            open_backend(
                agent, evaluators, seed=0, meta={}, batch_size=args.dialogues, ray=options
            ) as backend,
            DialogueWriter(path) as writer,
        ):
            start = time.perf_counter()
            stats = backend.runner.run(questions, writer, set(), live)
            sim_seconds = time.perf_counter() - start
        batches = batches_from_records(path, args.dialogues)
    torch.set_num_threads(args.threads)  # the raw side gets the bot actor's threads
    bot = TransformersAgent("smollm2-135m-instruct", generation=settings, batch_size=args.dialogues)
    return bot, stats.bot_turns, sim_seconds, batches, live.lags


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--runtime", choices=("inprocess", "ray"), default="inprocess")
    parser.add_argument(
        "--threads", type=int, default=2, help="torch threads of the Ray bot actor (and raw side)"
    )
    args = parser.parse_args()

    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    questions = load_pack("core").pack.questions_in("test")[: args.dialogues]
    run = run_on_ray if args.runtime == "ray" else run_in_process
    bot, bot_turns, sim_seconds, batches, lags = run(args, questions, settings)
    raw_seconds = replay_raw(bot, batches, args.max_new_tokens)

    sim_rate = bot_turns / sim_seconds
    raw_rate = bot_turns / raw_seconds
    print(f"runtime {args.runtime}: {bot_turns} bot turns; raw replay in {len(batches)} batches")
    print(f"simulation (live scoring) {sim_rate:6.2f} bot turns/s  ({sim_seconds:.1f} s)")
    print(f"raw batched generate      {raw_rate:6.2f} bot turns/s  ({raw_seconds:.1f} s)")
    print(f"simulation / raw          {sim_rate / raw_rate:6.2f}")
    p50, p95 = np.percentile(np.array(lags), [50, 95])
    print(f"turn -> scores lag        p50 {p50:.2f} s, p95 {p95:.2f} s")


if __name__ == "__main__":
    main()
