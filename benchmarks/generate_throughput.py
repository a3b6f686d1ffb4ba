"""Generation throughput of the embedded SmolLM2: our TransformersAgent vs raw `model.generate`.

Both sides get the same chat-formatted prompts (moral questions from the core pack), the same
greedy settings and the same batch sizes, in the same process, one after the other. Greedy
decoding makes both produce the same tokens (checked), so both rates divide the same token
count (up to each row's first end-of-turn token) by each side's wall time; agent/raw shows what
the agent's prompt building, padding and reply cleaning cost on top of the model itself.

    python benchmarks/generate_throughput.py [--batch-sizes 1 4 16 32] [--reps 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from agents.base import GenerationSettings
from agents.hf import TransformersAgent, clean_reply
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--reps", type=int, default=2, help="batches per batch size")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()

    questions = [q.question for q in load_pack("core").pack.questions]
    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    agent = TransformersAgent(args.model, generation=settings, batch_size=max(args.batch_sizes))
    tok, model = agent.tokenizer, agent.model
    print(
        f"model {args.model}, greedy, max_new_tokens {args.max_new_tokens}, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(f"{'batch':>5} {'agent tok/s':>12} {'raw tok/s':>10} {'agent/raw':>9}")
    offset = 0
    for size in args.batch_sizes:
        raw_tokens = 0
        agent_time = raw_time = 0.0
        for _ in range(args.reps):
            batch = questions[offset : offset + size]
            offset = (offset + size) % max(1, len(questions) - size)
            histories = [[Turn("user", q)] for q in batch]
            # raw: the same prompt ids, left-padded by hand, straight into generate
            prompts = [agent.prompt_ids(h, args.max_new_tokens) for h in histories]
            width = max(len(p) for p in prompts)
            ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
            start = time.perf_counter()
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids, attention_mask=mask, max_new_tokens=args.max_new_tokens,
                    do_sample=False, eos_token_id=agent.stop_ids, pad_token_id=tok.pad_token_id,
                )  # fmt: skip
            raw_time += time.perf_counter() - start
            raw_tokens += count_new_tokens(out, width, tok.pad_token_id, agent.stop_ids)

            start = time.perf_counter()
            replies = agent.respond(histories)
            agent_time += time.perf_counter() - start
            raw_texts = [
                clean_reply(t) for t in tok.batch_decode(out[:, width:], skip_special_tokens=True)
            ]
            if replies != raw_texts:
                raise SystemExit("agent and raw generate disagree: the comparison would be unfair")
        agent_rate = raw_tokens / agent_time
        raw_rate = raw_tokens / raw_time
        print(f"{size:>5} {agent_rate:>12.1f} {raw_rate:>10.1f} {agent_rate / raw_rate:>9.2f}")


if __name__ == "__main__":
    main()
