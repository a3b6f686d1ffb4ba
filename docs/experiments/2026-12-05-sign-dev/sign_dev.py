"""Where the default scorer loses the signs of flat, negated and hedged answers (2026-12-05).

Reads the core pack's development sign set (`signs-dev`, 309 items written for this by three
new writers) and, as a contrast, the pack's other dev sets that ask a question, with the parts of
a prepared `agreement-probe` folder:

- W: `agreement-minilm` reading the whole (question, answer, RoT);
- S: the stance classifier's reading of (question, answer): for / neither / against the act;
- D: the frozen-SmolLM2 probe's reading of the RoT's direction on the question's act;
- R: the stance classifier reading the RoT as if it were the answer (a second direction
  reader tried here, no training needed).

It prints and writes (`figures.json`) the sign accuracy of W, S x D, the default's mean
(W + S x D) / 2, S x the writer's true direction (`directions.jsonl`), and the same with R
and with the mean of D and R as the direction; plus stance and direction accuracy where the
true direction is known. Sign accuracy counts an item right when AS = P(agree) - P(disagree)
has the label's sign (neutral items are left out).

    python docs/experiments/2026-12-05-sign-dev/sign_dev.py ~/.cache/moralsim/models/agreement-probe

A second argument names another output file (another experiment's reading of its own folder).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.factored import FactoredScorer, combine, direction_items, stance_items
from scenarios.pack import load_pack

HERE = Path(__file__).resolve().parent
CORE_PACK = HERE.parents[2] / "scenarios" / "packs" / "core"
ONE_HOT = {"for": [1.0, 0.0, 0.0], "against": [0.0, 0.0, 1.0]}
DEV_SOURCES = ("signs-dev", "written", "hard", "factorial", "derived")


def source_of(kind: str) -> str:
    return kind.split(":", 1)[0] if ":" in kind else "derived"


def sign_accuracy(p: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> float:
    signed = mask & (labels != "neutral")
    right = ((p[:, 0] - p[:, 2]) > 0) == (labels == "agree")
    return round(100 * float(right[signed].mean()), 1)


def direction_accuracy(d: np.ndarray, true: np.ndarray, mask: np.ndarray) -> float:
    known = mask & (true.sum(1) > 0)
    read = np.where(d[:, 0] > d[:, 2], 0, 2)
    return round(100 * float((read == true.argmax(1))[known].mean()), 1)


def figures_for(
    scorer: FactoredScorer, examples: list, true: np.ndarray, phenomena: list[str]
) -> dict:
    items = [AgreementItem(e.question, e.answer, e.rot) for e in examples]
    w = scorer.agreement.probabilities(items)
    s = scorer.stance.probabilities(stance_items(items))
    d = scorer.probe.probabilities(direction_items(items))
    rot_as_answer = [AgreementItem(e.question, e.rot, e.rot) for e in examples]
    r = scorer.stance.probabilities(stance_items(rot_as_answer))
    labels = np.array([e.label for e in examples])
    ones = np.ones(len(items), dtype=bool)
    readers = {
        "W": w,
        "S x D": combine(s, d, ones),
        "default (W + S x D) / 2": (w + combine(s, d, ones)) / 2,
        "S x true direction": combine(s, true, ones),
        "S x R": combine(s, r, ones),
        "(W + S x mean(D, R)) / 2": (w + combine(s, (d + r) / 2, ones)) / 2,
    }
    out: dict = {"n": len(items)}
    groups = {"all": ones} | {k: np.array([p == k for p in phenomena]) for k in set(phenomena)}
    for group, mask in sorted(groups.items()):
        row = {name: sign_accuracy(p, labels, mask) for name, p in readers.items()}
        gold_stance = np.where((labels == "agree") == (true[:, 0] == 1), 0, 2)
        known = mask & (true.sum(1) > 0) & (labels != "neutral")
        row["stance accuracy"] = round(100 * float((s.argmax(1) == gold_stance)[known].mean()), 1)
        row["direction accuracy, D"] = direction_accuracy(d, true, mask)
        row["direction accuracy, R"] = direction_accuracy(r, true, mask)
        row["n"] = int(mask.sum())
        out[group] = row
    out["direction_confusion, D"] = direction_confusion(d, true)
    out["direction accuracy, D with its log-odds shifted toward for"] = {
        str(shift): direction_accuracy(shifted(d, shift), true, ones) for shift in (0.5, 1.0, 2.0)
    }
    return out


def direction_confusion(d: np.ndarray, true: np.ndarray) -> dict[str, int]:
    """How the probe reads RoTs that are for and against the act (for / against only)."""
    read = np.where(d[:, 0] > d[:, 2], "for", "against")
    gold = np.where(true[:, 0] == 1, "for", np.where(true[:, 2] == 1, "against", "-"))
    return {
        f"{g} read {r}": int(((gold == g) & (read == r)).sum())
        for g in ("for", "against")
        for r in ("for", "against")
    }


def shifted(d: np.ndarray, shift: float) -> np.ndarray:
    """The probe's reading with `shift` added to log P(for) - log P(against): a prior
    correction, to see whether its misses are a bias toward one side or confident errors."""
    out = d.copy()
    scale = np.exp(shift / 2)
    out[:, 0] *= scale
    out[:, 2] /= scale
    return out / out.sum(1, keepdims=True)


def main(folder: str, out: Path = HERE / "figures.json") -> None:
    pack = load_pack(CORE_PACK).pack
    stated = pack.direction_map()
    written_directions = {
        row["id"]: row["direction"]
        for row in map(json.loads, (HERE / "directions.jsonl").read_text().splitlines())
    }
    scorer = FactoredScorer(folder)
    figures = {}
    for source in DEV_SOURCES:
        examples = [
            e for e in pack.agreement_in("dev") if source_of(e.kind) == source and e.question
        ]
        if source == "signs-dev":
            true = [ONE_HOT[written_directions[e.id]] for e in examples]
        else:
            true = [ONE_HOT.get(str(stated.get((e.question, e.rot))), [0.0] * 3) for e in examples]
        phenomena = [e.kind.split(":", 1)[1] if ":" in e.kind else e.kind for e in examples]
        if source != "signs-dev":
            phenomena = ["-"] * len(examples)
        figures[source] = figures_for(scorer, examples, np.array(true), phenomena)
        print(source, json.dumps(figures[source]["all"]), flush=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], *(Path(arg) for arg in sys.argv[2:3]))
