"""Generation throughput of a chat model: our TransformersAgent vs raw `model.generate`.

Both sides get the same chat-formatted prompts (moral questions from the core pack, repeated
to fill batches larger than the pack), the same greedy settings, the same batch sizes and the
same placement (device and dtype), in the same process, alternating batch by batch after one
untimed warm-up batch. Greedy decoding makes both produce the same tokens (the `same` column
is the share of identical replies; on a GPU, kernels need not be bitwise deterministic across
calls, so a value below 1 there is reported rather than fatal), and both rates divide the raw
side's token count (up to each row's first end-of-turn token) by each side's wall time;
agent/raw shows what the agent's prompt building, padding and reply cleaning cost on top of the
model itself. On CUDA the timers are read after `torch.cuda.synchronize()`.

    python benchmarks/generate_throughput.py [--batch-sizes 1 4 16 32] [--reps 2]
    python benchmarks/generate_throughput.py --model /tmp/smollm2-135m-random \
        --device cuda --dtype bfloat16 --batch-sizes 1 8 64 256 --max-new-tokens 60

`--model` takes an embedded name or a local folder, e.g. a random-initialised one of a real
shape from benchmarks/random_model.py (its replies run to max_new_tokens).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import torch

from agents.base import GenerationSettings
from agents.hf import TransformersAgent, clean_reply
from agents.placement import DEVICE_HELP, DTYPE_HELP
from scenarios.pack import load_pack
from scenarios.records import Turn


def count_new_tokens(sequences: torch.Tensor, width: int, pad_id: int, stop_ids: list[int]) -> int:
    """Tokens generated up to and including the first stop token, per row."""
    total = 0
    for row in sequences[:, width:].tolist():
        for token in row:
            total += 1
            if token in stop_ids or token == pad_id:
                break
    return total


def cycled(items: Sequence[str], offset: int, size: int) -> list[str]:
    """`size` items from `offset` on, wrapping around: batches larger than the pack."""
    return [items[(offset + i) % len(items)] for i in range(size)]


def raw_generate(agent: TransformersAgent, histories: list, max_new_tokens: int):
    """(output ids, prompt width, seconds) of plain `generate` on the agent's own prompt ids,
    left-padded by hand, on the agent's device."""
    tok = agent.tokenizer
    prompts = [agent.prompt_ids(h, max_new_tokens) for h in histories]
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    ids, mask = ids.to(agent.device), mask.to(agent.device)
    agent.placement.synchronize()
    start = time.perf_counter()
    with torch.no_grad():
        out = agent.model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
            do_sample=False, temperature=None, top_p=None, top_k=None,
            eos_token_id=agent.stop_ids, pad_token_id=tok.pad_token_id,
        )  # fmt: skip
    agent.placement.synchronize()
    return out, width, time.perf_counter() - start


def timed_respond(agent: TransformersAgent, histories: list) -> tuple[list[str], float]:
    agent.placement.synchronize()
    start = time.perf_counter()
    replies = agent.respond(histories)
    agent.placement.synchronize()
    return replies, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m-instruct", help="name or folder")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--dtype", default="auto", help=DTYPE_HELP)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--reps", type=int, default=2, help="batches per batch size and side")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()

    questions = [q.question for q in load_pack("core").pack.questions]
    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    agent = TransformersAgent(
        args.model,
        generation=settings,
        batch_size=max(args.batch_sizes),
        device=args.device,
        dtype=args.dtype,
    )
    tok = agent.tokenizer
    print(
        f"model {args.model} on {agent.placement}, greedy, max_new_tokens "
        f"{args.max_new_tokens}, torch {torch.__version__}, threads {torch.get_num_threads()}"
        + (f", {torch.cuda.get_device_name(agent.device)}" if agent.placement.on_cuda else "")
    )
    warm = [[Turn("user", q)] for q in cycled(questions, 0, args.batch_sizes[0])]
    raw_generate(agent, warm, args.max_new_tokens)
    agent.respond(warm)
    print(f"{'batch':>5} {'agent tok/s':>12} {'raw tok/s':>10} {'agent/raw':>9} {'same':>5}")
    offset = 0
    for size in args.batch_sizes:
        raw_tokens = same = 0
        agent_time = raw_time = 0.0
        for rep in range(args.reps):
            histories = [[Turn("user", q)] for q in cycled(questions, offset, size)]
            offset = (offset + size) % len(questions)
            if rep % 2:  # alternate which side goes first
                replies, agent_seconds = timed_respond(agent, histories)
            out, width, seconds = raw_generate(agent, histories, args.max_new_tokens)
            if not rep % 2:
                replies, agent_seconds = timed_respond(agent, histories)
            raw_time += seconds
            agent_time += agent_seconds
            raw_tokens += count_new_tokens(out, width, tok.pad_token_id, agent.stop_ids)
            raw_texts = [
                clean_reply(t) for t in tok.batch_decode(out[:, width:], skip_special_tokens=True)
            ]
            same += sum(a == b for a, b in zip(replies, raw_texts, strict=True))
        agent_rate = raw_tokens / agent_time
        raw_rate = raw_tokens / raw_time
        share = same / (size * args.reps)
        print(
            f"{size:>5} {agent_rate:>12.1f} {raw_rate:>10.1f} {agent_rate / raw_rate:>9.2f} "
            f"{share:>5.2f}"
        )


if __name__ == "__main__":
    main()
