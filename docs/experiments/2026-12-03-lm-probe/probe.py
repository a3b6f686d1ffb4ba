"""Does a frozen causal LM read norm/action agreement better than the fine-tuned MiniLM?

A linear probe: the hidden state of the prompt's last token at a few layers of a frozen
causal LM (the embedded SmolLM2-135M-Instruct unless --model names another folder), a
standardised logistic regression on top, trained on the core pack's written norm-action
pairs (train split, follows vs breaks). Its regularisation is chosen by 3-fold cross-validation
on those training pairs, never on a held-out set. It then reports the pairs' dev split and,
given --moral-stories, the Moral Stories pairwise accuracy that issue 11 sets its goal on
(validation only: those pairs are never trained on).

    python docs/experiments/2026-12-03-lm-probe/probe.py \
        --moral-stories ../shared/data/moral_stories/dev.jsonl [--train 6000] [--layers 15,20,25,30]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from agents.models import prepare_model
from scenarios.pack import load_pack

CORE_PACK = Path(__file__).resolve().parents[3] / "scenarios" / "packs" / "core"
C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.1)


def prompt(rot: str, act: str) -> str:
    """The probe reads the model's state where it would say whether the act follows the rule."""
    return (
        f"Rule of thumb: {rot}\nAction: {act}\n"
        "Does the action follow the rule of thumb or break it?\nAnswer: The action"
    )


@torch.no_grad()
def last_token_states(model, tokenizer, texts: list[str], layers: list[int]) -> np.ndarray:
    """(n, 576 x len(layers)) hidden states of each text's last token, batched by length."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    width = model.config.hidden_size
    out = np.zeros((len(texts), width * len(layers)), dtype=np.float32)
    for start in range(0, len(order), 32):
        batch = order[start : start + 32]
        enc = tokenizer([texts[i] for i in batch], return_tensors="pt", padding=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            states = model(**enc, output_hidden_states=True).hidden_states
        out[batch] = torch.cat([states[k][:, -1, :] for k in layers], dim=1).float().numpy()
    return out


def moral_stories_pairs(path: Path) -> list[tuple[str, str, str]]:
    """(norm, moral action, immoral action) for each story that has both actions."""
    stories: dict[str, dict] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        stories.setdefault(row["ID"][:-1], {}).update(row)
    return [
        (s["norm"], s["moral_action"], s["immoral_action"])
        for s in stories.values()
        if "moral_action" in s and "immoral_action" in s
    ]


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.preprocessing import StandardScaler

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--moral-stories", type=Path)
    parser.add_argument("--train", type=int, default=6000)
    parser.add_argument("--layers", default="15,20,25,30")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    layers = [int(k) for k in args.layers.split(",")]

    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = prepare_model(args.model).path if not Path(args.model).is_dir() else args.model
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()

    pack = load_pack(CORE_PACK).pack
    pairs = [e for e in pack.agreement_in("all") if e.source == "pairs" and e.label != "neutral"]
    train = [e for e in pairs if e.split == "train"]
    random.Random(args.seed).shuffle(train)
    train = train[: args.train]
    dev = [e for e in pairs if e.split == "dev"]

    def states(rows: list[tuple[str, str]]) -> np.ndarray:
        start = time.perf_counter()
        x = last_token_states(model, tokenizer, [prompt(r, a) for r, a in rows], layers)
        print(f"  {len(rows)} prompts: {time.perf_counter() - start:.0f} s", flush=True)
        return x

    x_train = states([(e.rot, e.answer) for e in train])
    y_train = np.array([e.label == "agree" for e in train])
    scaler = StandardScaler().fit(x_train)
    z_train = scaler.transform(x_train)
    cv = {
        c: cross_val_score(LogisticRegression(C=c, max_iter=5000), z_train, y_train, cv=3).mean()
        for c in C_GRID
    }
    chosen = max(cv, key=cv.get)
    print("3-fold CV accuracy by C: " + ", ".join(f"{c}: {a:.3f}" for c, a in cv.items()))
    head = LogisticRegression(C=chosen, max_iter=5000).fit(z_train, y_train)

    def score(rows: list[tuple[str, str]]) -> np.ndarray:
        return head.decision_function(scaler.transform(states(rows)))

    dev_score = score([(e.rot, e.answer) for e in dev])
    dev_gold = np.array([e.label == "agree" for e in dev])
    print(f"C={chosen} ({len(train)} train pairs, layers {layers})")
    print(f"pairs dev accuracy: {np.mean((dev_score > 0) == dev_gold):.3f} (n={len(dev)})")
    if args.moral_stories:
        stories = moral_stories_pairs(args.moral_stories)
        follows = score([(n, m) for n, m, _ in stories])
        breaks = score([(n, i) for n, _, i in stories])
        sign = (np.mean(follows > 0) + np.mean(breaks < 0)) / 2
        print(
            f"Moral Stories: pairwise {np.mean(follows > breaks):.3f}, sign {sign:.3f} "
            f"(n={len(stories)} pairs)"
        )


if __name__ == "__main__":
    main()
