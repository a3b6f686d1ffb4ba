"""Can a frozen SmolLM2 probe be the reader of the pairs a pack does not state?

The default scorer (`agreement-stated`) reads a pair whose RoT direction the pack states as
the answer's stance times that direction, and hands every other pair whole to
`agreement-minilm`, which reads real text at about chance (Moral Stories 63.1, sign test 67.7).
The factored scorer instead reads the unstated direction with a MiniLM direction half, at
three times the first-use budget. Here the direction half is a linear probe on a frozen
SmolLM2-135M (the 2026-12-03 probe, now three-way: for / unrelated / against), trained on the
factored recipe's own direction examples (train split), with C chosen by 3-fold CV on them.

The scorer it makes: stance (the built `agreement-stated`'s stance half) x direction, where
the direction is the pack's stated one when there is one and the probe's reading otherwise;
a pair with no question (a narrated action) is the probe's reading as it is
(evaluators.factored.combine). Every figure is `evaluate_scorer`'s, as in `moralsim scorer
eval`. Moral Stories is read for the final figure only.

    python docs/experiments/2026-12-04-probe-direction/probe_direction.py \
        --moral-stories ../shared/data/moral_stories/dev.jsonl --train 9000 --cache /tmp/pd
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from agents.models import prepare_model
from evaluators.agreement import AgreementItem
from evaluators.agreement_validity import confusion_matrix, macro_f1, predicted_labels
from evaluators.factored import FactoredScorer
from evaluators.scorer_eval import PairSet, evaluate_scorer, pack_sets
from scenarios.loaders.moral_stories import load_moral_stories
from scenarios.pack import load_pack
from training.factored_data import with_explanation_directions
from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits

CORE_PACK = Path(__file__).resolve().parents[3] / "scenarios" / "packs" / "core"
C_GRID = (0.001, 0.003, 0.01, 0.03)
LABELS = ("agree", "neutral", "disagree")  # for / unrelated / against


def prompt(rot: str, act: str) -> str:
    """The state where the model would say which way the rule points on the act."""
    return (
        f"Rule of thumb: {rot}\nAct: {act}\n"
        "Is the rule of thumb for this act, against it, or unrelated to it?\n"
        "Answer: The rule of thumb is"
    )


class ProbeFeatures:
    """Last-token hidden states of a frozen causal LM, cached on disk by text."""

    def __init__(self, model_spec: str, layers: list[int], cache: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = prepare_model(model_spec).path if not Path(model_spec).is_dir() else model_spec
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.layers = layers
        self.cache = cache
        cache.mkdir(parents=True, exist_ok=True)
        self.seconds = 0.0

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.layers}|{text}".encode()).hexdigest()

    @torch.no_grad()
    def __call__(self, texts: list[str]) -> np.ndarray:
        width = self.model.config.hidden_size * len(self.layers)
        out = np.zeros((len(texts), width), dtype=np.float32)
        todo = []
        for i, t in enumerate(texts):
            f = self.cache / f"{self._key(t)}.npy"
            if f.is_file():
                out[i] = np.load(f)
            else:
                todo.append(i)
        todo.sort(key=lambda i: len(texts[i]))
        start = time.perf_counter()
        for s in range(0, len(todo), 32):
            batch = todo[s : s + 32]
            enc = self.tokenizer([texts[i] for i in batch], return_tensors="pt", padding=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                states = self.model(**enc, output_hidden_states=True).hidden_states
            x = torch.cat([states[k][:, -1, :] for k in self.layers], dim=1).float().numpy()
            for j, i in enumerate(batch):
                out[i] = x[j]
                np.save(self.cache / f"{self._key(texts[i])}.npy", x[j])
        self.seconds += time.perf_counter() - start
        if todo:
            print(f"  {len(todo)} new prompts: {time.perf_counter() - start:.0f} s", flush=True)
        return out


class ProbeDirection:
    """P(for, unrelated, against) of (act, RoT) items given as AgreementItem("", act, rot)."""

    def __init__(self, features: ProbeFeatures, scaler, head) -> None:
        self.features, self.scaler, self.head = features, scaler, head

    def probabilities(self, items: list[AgreementItem]) -> np.ndarray:
        if not items:
            return np.zeros((0, 3))
        x = self.features([prompt(i.rot, i.answer) for i in items])
        p = self.head.predict_proba(self.scaler.transform(x))
        order = [list(self.head.classes_).index(lab) for lab in LABELS]
        return p[:, order]


def probe_scorer(
    model: str = "smollm2-135m-instruct",
    stated: str = "agreement-stated",
    train_size: int = 9000,
    layers: tuple[int, ...] = (15, 20, 25, 30),
    seed: int = 0,
    cache: Path = Path("/tmp/probe-direction"),
    c_grid: tuple[float, ...] = C_GRID,
) -> tuple[FactoredScorer, dict]:
    """The stated scorer's stance half with the probe reading every unstated direction, and
    the probe's own figures (C, its direction dev macro-F1)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.preprocessing import StandardScaler

    torch.manual_seed(seed)
    pack = load_pack(CORE_PACK).pack
    labelled = with_explanation_directions(pack.questions, pack.direction_map())
    train, dev = factored_splits(pack, DEFAULT_FACTORED_RECIPE, labelled)["direction"]
    random.Random(seed).shuffle(train)
    train = train[:train_size]
    features = ProbeFeatures(model, list(layers), cache)

    x_train = features([prompt(e.rot, e.answer) for e in train])
    y_train = np.array([e.label for e in train])
    scaler = StandardScaler().fit(x_train)
    z_train = scaler.transform(x_train)
    cv: dict[float, float] = {}
    for c in c_grid if len(c_grid) > 1 else ():
        fit = LogisticRegression(C=c, max_iter=3000)
        cv[c] = cross_val_score(fit, z_train, y_train, cv=3, scoring="f1_macro").mean()
        print(f"  C={c}: 3-fold CV macro-F1 {cv[c]:.3f}", flush=True)
    chosen = max(cv, key=cv.get) if cv else c_grid[0]
    head = LogisticRegression(C=chosen, max_iter=3000).fit(z_train, y_train)
    direction = ProbeDirection(features, scaler, head)

    dev_pred = direction.probabilities([AgreementItem("", e.answer, e.rot) for e in dev])
    dev_f1 = macro_f1(confusion_matrix([e.label for e in dev], predicted_labels(dev_pred)))
    print(f"direction probe: C={chosen}, {len(train)} train, dev macro-F1 {dev_f1:.3f}")
    scorer = FactoredScorer(stated)
    scorer.agreement, scorer.direction = None, direction  # unstated pairs: stance x probe
    return scorer, {"macro_f1": dev_f1, "C": chosen, "train": len(train), "cv": cv}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--stated", default="agreement-stated", help="whose stance half")
    parser.add_argument("--moral-stories", type=Path)
    parser.add_argument("--train", type=int, default=9000)
    parser.add_argument("--layers", default="15,20,25,30")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/probe-direction"))
    parser.add_argument("--out", type=Path, help="write every figure here as JSON")
    args = parser.parse_args()
    layers = tuple(int(k) for k in args.layers.split(","))
    scorer, probe = probe_scorer(args.model, args.stated, args.train, layers, args.seed, args.cache)
    pack = load_pack(CORE_PACK).pack
    sets = pack_sets(pack)
    ms = args.moral_stories
    pairs = [PairSet("moral-stories", load_moral_stories(ms)[0])] if ms else []
    figures: dict = {"direction-dev": probe}
    for stated in (False, True):
        scorer.use_directions(pack.direction_map() if stated else {})
        got = evaluate_scorer(scorer, sets, [] if stated else pairs)
        for name, fig in got.items():
            figures[name + ("+stated" if stated else "")] = fig
    for name, fig in figures.items():
        shown = {k: fig[k] for k in ("macro_f1", "sign_accuracy", "pairwise_accuracy") if k in fig}
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in shown.items()), flush=True)
    print(f"feature seconds: {scorer.direction.features.seconds:.0f}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1, default=float) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
