"""Bot turns per second of a MoralDial simulation (live scoring on) vs raw batched `generate`.

Runs N dialogues in process with the embedded SmolLM2 and the default evaluators (or the
models named by --model, --scorer, --encoder), recording every batch of histories the bot was
asked. The raw side then replays exactly those prompts through `model.generate` with the same
batch sizes, settings and placement (device, dtype), so the ratio shows what the simulation
(users, scoring between rounds, records) costs on top of generation alone. Both sides run after
one untimed warm-up batch of each model; on CUDA the timers are read after
`torch.cuda.synchronize()`. Also printed: the lag between a bot turn and its scores (p50 / p95
over bot turns). Questions come from the core pack's test split (48), then its other splits
(322 in all), so up to 322 dialogues run at once and bot batches reach that size.

    python benchmarks/simulate_throughput.py [--dialogues 16] [--max-new-tokens 40]
    python benchmarks/simulate_throughput.py --runtime ray [--threads 2]
    python benchmarks/simulate_throughput.py --dialogues 64 --device cuda --dtype bfloat16 \
        --model /tmp/smollm2-135m-random --scorer /tmp/minilm-classifier-random \
        --encoder /tmp/minilm-encoder-random

The folders can be random-initialised ones of the real shapes (benchmarks/random_model.py);
the in-process runtime needs neither ray nor faiss (the safety index falls back to numpy).

With `--runtime ray` the dialogues run on the Ray runtime (a bot actor and an evaluator actor,
users as asyncio tasks, each given `--bot-num-gpus` / `--evaluator-num-gpus` of a GPU); the raw
side replays the run's prompts grouped by dialogue step into batches of the same size, with the
bot actor's number of torch threads.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from generate_throughput import raw_generate  # a sibling script: benchmarks/ is on sys.path

from agents.base import GenerationSettings
from agents.hf import TransformersAgent
from agents.placement import DEVICE_HELP, DTYPE_HELP
from evaluators.agreement import AgreementItem
from evaluators.moraldial import MoralDialParams
from evaluators.scorers import DEFAULT_SCORER
from evaluators.stack import load_evaluators
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.pack import load_pack
from scenarios.records import Turn
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
    """Seconds for plain `model.generate` over exactly these batches of histories, on the bot's
    device and dtype (prompt building is not timed), as generate_throughput times it."""
    return sum(raw_generate(bot, batch, max_new_tokens)[2] for batch in batches)


def warm_up(bot: TransformersAgent, questions: list, stack=None) -> None:
    """One untimed batch through each model: CUDA kernels, caches and lazy imports are ready
    before either side's clock starts."""
    bot.respond([[Turn("user", q.question)] for q in questions[:8]])
    if stack is not None:
        stack.embed([q.question for q in questions[:8]])
        items = [AgreementItem(q.question, "Yes.", "You should be honest.") for q in questions]
        stack.agreement.probabilities(items[:64])


def bot_kwargs(args: argparse.Namespace, settings: GenerationSettings) -> dict:
    return {
        "generation": settings,
        "batch_size": args.dialogues,
        "device": args.device,
        "dtype": args.dtype,
    }


def load_bot(args: argparse.Namespace, settings: GenerationSettings) -> TransformersAgent:
    return TransformersAgent(args.model, **bot_kwargs(args, settings))


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
    bot = load_bot(args, settings)
    params = MoralDialParams()
    stack = load_evaluators(
        args.scorer, args.encoder, params=params, device=args.device, dtype=args.dtype
    )
    print(f"bot on {bot.placement}; evaluators on {stack.placement}", flush=True)
    warm_up(bot, questions, stack)
    agent, scorer = RecordingAgent(bot), TimedScorer(stack.moraldial)
    runner = InProcessRunner(agent, scorer, params, seed=0)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp, DialogueWriter(Path(tmp) / "d.jsonl") as writer:
        start = time.perf_counter()
        stats = runner.run(questions, writer)
        sim_seconds = time.perf_counter() - start
    return bot, stats.bot_turns, sim_seconds, agent.batches, scorer.lags


def run_on_ray(args: argparse.Namespace, questions: list, settings: GenerationSettings):
    from evaluators.moraldial import MoralDialParams as Params
    from moralsim.backend_specs import actor_device  # a run's rule: auto needs reserved GPUs
    from simulators.backend import open_backend
    from simulators.live import LiveStats
    from simulators.ray_actors import AgentSpec, EvaluatorSpec
    from simulators.ray_runtime import RayOptions

    kwargs = {
        **bot_kwargs(args, settings),
        "device": actor_device(args.device, True, args.bot_num_gpus),
    }
    agent = AgentSpec("transformers", args.model, kwargs)
    scorer_device = actor_device(args.device, True, args.evaluator_num_gpus)
    evaluators = EvaluatorSpec(
        args.scorer, args.encoder, None, Params(), device=scorer_device, dtype=args.dtype
    )
    options = RayOptions(
        bot_threads=args.threads,
        evaluator_threads=1,
        bot_num_gpus=args.bot_num_gpus,
        evaluator_num_gpus=args.evaluator_num_gpus,
    )
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
    bot = load_bot(args, settings)
    warm_up(bot, questions)
    return bot, stats.bot_turns, sim_seconds, batches, live.lags


def pick_questions(count: int) -> list:
    """The core pack's test questions first, then its other splits, `count` in all."""
    pack = load_pack("core").pack
    test = pack.questions_in("test")
    test_ids = {q.id for q in test}
    ordered = test + [q for q in pack.questions if q.id not in test_ids]
    if count > len(ordered):
        raise SystemExit(f"--dialogues {count}: the core pack has {len(ordered)} questions")
    return ordered[:count]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=16)
    parser.add_argument("--model", default="smollm2-135m-instruct", help="bot: name or folder")
    parser.add_argument("--scorer", default=DEFAULT_SCORER, help="agreement scorer spec")
    parser.add_argument("--encoder", default="minilm-l6", help="sentence encoder spec")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--dtype", default="auto", help=DTYPE_HELP)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--runtime", choices=("inprocess", "ray"), default="inprocess")
    parser.add_argument(
        "--threads", type=int, default=2, help="torch threads of the Ray bot actor (and raw side)"
    )
    parser.add_argument("--bot-num-gpus", type=float, default=0.0, help="Ray: GPUs per bot actor")
    parser.add_argument(
        "--evaluator-num-gpus", type=float, default=0.0, help="Ray: GPUs per evaluator actor"
    )
    args = parser.parse_args()

    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    questions = pick_questions(args.dialogues)
    run = run_on_ray if args.runtime == "ray" else run_in_process
    bot, bot_turns, sim_seconds, batches, lags = run(args, questions, settings)
    raw_seconds = replay_raw(bot, batches, args.max_new_tokens)

    sim_rate = bot_turns / sim_seconds
    raw_rate = bot_turns / raw_seconds
    sizes = [len(b) for b in batches]
    print(
        f"runtime {args.runtime}, bot {args.model} on {bot.placement}: {bot_turns} bot turns; "
        f"raw replay in {len(batches)} batches (sizes {min(sizes)}-{max(sizes)})"
    )
    print(f"simulation (live scoring) {sim_rate:6.2f} bot turns/s  ({sim_seconds:.1f} s)")
    print(f"raw batched generate      {raw_rate:6.2f} bot turns/s  ({raw_seconds:.1f} s)")
    print(f"simulation / raw          {sim_rate / raw_rate:6.2f}")
    p50, p95 = np.percentile(np.array(lags), [50, 95])
    print(f"turn -> scores lag        p50 {p50:.2f} s, p95 {p95:.2f} s")


if __name__ == "__main__":
    main()
