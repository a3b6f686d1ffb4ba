"""Does the probe read RoT directions better with written direction pairs? (2026-12-05)

The probe (evaluators.lm_probe) misread 45 of the 164 RoTs of signs-dev that speak for the
act, mostly rules that support the act by forbidding its opposite ("You shouldn't stay silent
when..." for telling) and broad principles. The `directions` source (the pack's
`direction_pairs`, training.direction_pair_items) was written for that. The head is a linear
layer on frozen SmolLM2 states, so every head here is fitted on the same states, read once
and cached by prompt text (`--cache`, an .npz), and only the examples differ:

- `base`: the probe recipe's train examples (the shipped head's);
- `pairs`: the same plus the pairs' train split; C = 0.01 for both, the recipe's.

It prints each head's direction dev macro-F1 on the pack's dev examples, its accuracy on the
pairs' dev split and on the RoT directions of signs-dev (its writers' directions), and writes
`<out>/probe_base` and `<out>/probe_pairs`: copies of a prepared `agreement-probe` folder that
differ only in the head, for sign_dev.py (../2026-12-05-sign-dev) and eval_dev.py. Then, as
second looks: the pairs weighted three times, C = 0.03, and the shipped head reading each
forbidding RoT in its recommending form ("You shouldn't stay silent" -> "You should stay
silent", scenarios.rot_direction) with its reading turned.

    python docs/experiments/2026-12-05-direction-pairs/direction_pairs.py \
        --cache /tmp/states.npz --out /tmp/dp
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evaluators.agreement import AGREEMENT_LABELS as LABELS
from evaluators.lm_probe import PromptStates, probe_prompt
from scenarios.pack import load_pack
from scenarios.rot_direction import rot_direction
from training.classification_metrics import classification_report
from training.factored_scorer import DEFAULT_FACTORED_RECIPE
from training.lm_probe import DEFAULT_PROBE_RECIPE, direction_split, fit_head, probe_examples

HERE = Path(__file__).resolve().parent
SIGN_DEV = HERE.parent / "2026-12-05-sign-dev" / "directions.jsonl"
PREPARED = Path.home() / ".cache/moralsim/models/agreement-probe"
AS_LABEL = {"for": "agree", "against": "disagree"}
Example = tuple[str, str, str]


class StateCache:
    """The probe's states by prompt text, in one .npz, read with the product's reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:
                self.rows = dict(zip(data["texts"].tolist(), data["x"], strict=True))
        self.reader: PromptStates | None = None

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = sorted({t for t in texts if t not in self.rows})
        if todo:
            print(f"reading {len(todo)} new texts", flush=True)
            if self.reader is None:
                recipe = DEFAULT_PROBE_RECIPE
                self.reader = PromptStates(recipe.model, recipe.layers)
            self.rows.update(zip(todo, self.reader(todo), strict=True))
            keys = list(self.rows)
            np.savez(self.path, texts=np.array(keys), x=np.stack([self.rows[t] for t in keys]))
        return np.stack([self.rows[t] for t in texts])


def figures(p: np.ndarray, examples: list[Example]) -> dict[str, float]:
    """3-way macro-F1 and accuracy, and for/against accuracy on the for/against examples."""
    predicted = [LABELS[k] for k in p.argmax(axis=1)]
    gold = np.array([e[2] for e in examples])
    r = classification_report(list(gold), predicted, LABELS)
    signed = gold != "neutral"
    side = np.where(p[:, 0] > p[:, 2], "agree", "disagree")
    return {
        "macro_f1": round(100 * r.macro_f1, 1),
        "accuracy": round(100 * r.accuracy, 1),
        "for/against accuracy": round(100 * float((side == gold)[signed].mean()), 1),
        "n": r.n,
    }


def sign_dev_directions(pack: Any) -> list[Example]:
    """signs-dev's (question, RoT) pairs with the writers' directions, once each."""
    written = {r["id"]: r["direction"] for r in map(json.loads, SIGN_DEV.read_text().splitlines())}
    out = {
        (e.question, e.rot): AS_LABEL[written[e.id]]
        for e in pack.agreement_in("dev")
        if e.source == "signs-dev"
    }
    return [(q, rot, label) for (q, rot), label in out.items()]


def recommending_form(cache: StateCache, head: Any, examples: list[Example]) -> np.ndarray:
    """The head's reading of each forbidding RoT's recommending form, for and against swapped."""
    texts, turned = [], []
    for act, rot, _ in examples:
        form = rot_direction(rot)
        texts.append(probe_prompt(form.recommending, act))
        turned.append(form.forbids)
    p = head.probabilities(cache(texts))
    p[np.array(turned)] = p[np.array(turned)][:, ::-1]
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    c = DEFAULT_PROBE_RECIPE.c
    pack = load_pack("core").pack
    base = probe_examples(pack, DEFAULT_PROBE_RECIPE)
    named = replace(
        DEFAULT_FACTORED_RECIPE, sources=(*DEFAULT_FACTORED_RECIPE.sources, "directions")
    )
    train, dev = direction_split(pack, named)
    pairs = train[len(base) :]  # the pairs come after the recipe's own examples
    pack_dev = direction_split(pack)[1]
    sets = {"pack dev": pack_dev, "pairs dev": dev[len(pack_dev) :]}
    sets["signs-dev"] = sign_dev_directions(pack)
    cache = StateCache(args.cache)

    def states(examples: list[Example]) -> np.ndarray:
        return cache([probe_prompt(rot, act) for act, rot, _ in examples])

    x_base, x_pairs = states(base), states(pairs)
    x_both, y_both = np.vstack([x_base, x_pairs]), [e[2] for e in base + pairs]
    three = np.r_[np.ones(len(base)), np.full(len(pairs), 3.0)]
    heads = {
        "base": fit_head(x_base, [e[2] for e in base], c),
        "pairs": fit_head(x_both, y_both, c),
        "pairs weighted x3": fit_head(x_both, y_both, c, three),
        "pairs, C = 0.03": fit_head(x_both, y_both, 0.03),
    }
    out: dict[str, Any] = {"train": {"base": len(base), "pairs": len(pairs)}}
    for name, head in heads.items():
        out[name] = {s: figures(head.probabilities(states(ex)), ex) for s, ex in sets.items()}
        print(name, json.dumps(out[name]), flush=True)
    name = "base, recommending form"
    out[name] = {
        s: figures(recommending_form(cache, heads["base"], ex), ex) for s, ex in sets.items()
    }
    print(name, json.dumps(out[name]), flush=True)
    for name in ("base", "pairs"):
        folder = args.out / f"probe_{name}"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(PREPARED, folder, ignore=shutil.ignore_patterns("scorer_card.json"))
        heads[name].save(folder / "probe" / "head.npz")
    (args.out / "heads.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
