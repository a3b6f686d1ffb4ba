"""Can a linear probe on the frozen SmolLM2-135M read an answer's stance better than the
MiniLM stance classifier of `agreement-stated` / `agreement-probe`? (2026-12-04, issue 11)

The stance half reads (question, answer): does the answer endorse the act the question asks
about, reject it, or neither? Its errors bound every stated reading (S_MR1, S_MR2, S_RIL):
on the pack's written dev answers with a known RoT direction, stance x the *true* direction
gets the sign right only 75% of the time. This reads the factored recipe's stance examples
with SmolLM2, fits a three-way logistic head, and compares it (and its mean with MiniLM) with
MiniLM on the stance dev split, on the blind-read sheets of real bot answers (stance x the
pack's stated direction, against the readers' labels), and on the card's held-out sets.

    python docs/experiments/2026-12-04-stance-probe/stance_probe.py --train 8000 --cache DIR
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.agreement_validity import confusion_matrix, macro_f1, predicted_labels, sign_hits
from evaluators.factored import STATED_ROWS, FactoredScorer, combine, direction_items
from evaluators.lm_probe import PromptStates
from scenarios.pack import load_pack
from training.factored_data import with_explanation_directions
from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits
from training.hand_read import read_labels
from training.lm_probe import fit_head

ROOT = Path(__file__).resolve().parents[3]
CORE_PACK = ROOT / "scenarios" / "packs" / "core"
SHEETS = sorted(
    p.parent for p in (ROOT / "docs" / "experiments").glob("*/blind.jsonl")
    if (p.parent / "labels_a.jsonl").is_file()
)  # fmt: skip
LAYERS = (15, 20, 25, 30)


def stance_prompt(question: str, answer: str) -> str:
    """Where the model would go on to say which way the answer goes on the asked-about act."""
    return (
        f"Question: {question}\nReply: {answer}\n"
        "Does the reply approve of doing what the question asks about, disapprove of it, "
        "or neither?\nVerdict: The reply"
    )


def stance_f1(gold: list[str], probs: np.ndarray) -> float:
    """Macro-F1 of stance rows (endorse / neither / reject, in the agreement labels' order)."""
    return macro_f1(confusion_matrix(gold, predicted_labels(probs)))


def sign_accuracy(gold: list[str], probs: np.ndarray) -> float:
    hits, total = sign_hits(gold, probs[:, 0] - probs[:, 2])
    return hits / total


def cached(states: PromptStates, cache: Path, name: str, texts: list[str]) -> np.ndarray:
    path = cache / f"{name}.npy"
    if path.is_file():
        return np.load(path)
    start = time.perf_counter()
    x = states(texts)
    np.save(path, x)
    print(f"read {name}: {len(texts)} texts in {time.perf_counter() - start:.0f} s", flush=True)
    return x


def sheet_rows() -> list[dict]:
    """Every blind-read row with both readers' labels and its sheet's name."""
    rows = []
    for sheet in SHEETS:
        labels = [read_labels(sheet / f"labels_{r}.jsonl") for r in ("a", "b")]
        for line in (sheet / "blind.jsonl").read_text().splitlines():
            row = json.loads(line)
            row.update(sheet=sheet.name, a=labels[0][row["item"]], b=labels[1][row["item"]])
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=8000)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("figures.json"))
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)

    pack = load_pack(CORE_PACK).pack
    labelled = with_explanation_directions(pack.questions, pack.direction_map())
    train, dev = factored_splits(pack, DEFAULT_FACTORED_RECIPE, labelled)["stance"]
    random.Random(0).shuffle(train)
    train = train[: args.train]
    states = PromptStates("smollm2-135m-instruct", LAYERS)
    x_dev = cached(states, args.cache, "dev", [stance_prompt(e.question, e.answer) for e in dev])
    x_train = cached(
        states, args.cache, f"train{args.train}",
        [stance_prompt(e.question, e.answer) for e in train],
    )  # fmt: skip
    y_train, y_dev = [e.label for e in train], [e.label for e in dev]

    scorer = FactoredScorer("agreement-probe")
    minilm_dev = scorer.stance.probabilities([AgreementItem(e.question, e.answer, "") for e in dev])
    figures: dict = {"train": len(train), "dev": len(dev), "layers": list(LAYERS)}
    figures["stance dev macro-F1"] = {"MiniLM stance": stance_f1(y_dev, minilm_dev)}
    heads = {}
    for c in (0.003, 0.01, 0.03):
        heads[c] = fit_head(x_train, y_train, c)
        p = heads[c].probabilities(x_dev)
        figures["stance dev macro-F1"][f"probe C={c}"] = stance_f1(y_dev, p)
        figures["stance dev macro-F1"][f"mean, C={c}"] = stance_f1(y_dev, (p + minilm_dev) / 2)
    chosen = max(heads, key=lambda c: figures["stance dev macro-F1"][f"probe C={c}"])
    head = heads[chosen]
    figures["chosen C (probe dev macro-F1)"] = chosen
    print(json.dumps(figures, indent=1), flush=True)

    def stances(name: str, items: list[AgreementItem]) -> dict[str, np.ndarray]:
        m = scorer.stance.probabilities(items)
        x = cached(states, args.cache, name, [stance_prompt(i.question, i.answer) for i in items])
        p = head.probabilities(x)
        return {"MiniLM stance": m, "probe stance": p, "mean stance": (m + p) / 2}

    # real bot answers: stance x the pack's stated direction, against two blind readers
    directions = pack.direction_map()
    rows = [r for r in sheet_rows() if directions.get((r["question"], r["rot"])) in STATED_ROWS]
    items = [AgreementItem(r["question"], r["answer"], r["rot"]) for r in rows]
    rows_dir = np.array([STATED_ROWS[directions[(r["question"], r["rot"])]] for r in rows])
    sheet_fig: dict = {"rows with a stated direction": len(rows)}
    for name, s in stances("sheets", items).items():
        a = combine(s, rows_dir, np.ones(len(rows), dtype=bool))
        for reader in ("a", "b"):
            gold = [r[reader] for r in rows]
            sheet_fig[f"{name}, reader {reader.upper()} sign match"] = sign_accuracy(gold, a)
            sheet_fig[f"n stanced, reader {reader.upper()}"] = sign_hits(gold, a[:, 0])[1]
    figures["blind-read sheets"] = sheet_fig

    # held-out card sets with no stated direction: the probe scorer's unstated reading,
    # mean(whole, stance x probe direction), with each stance reader
    held: dict = {}
    for split, source in (("test", "signs"), ("test", "hard"), ("test", "bot"), ("dev", "written")):
        ex = [e for e in pack.agreement_in(split) if e.kind.startswith(source + ":")]
        items = [AgreementItem(e.question, e.answer, e.rot) for e in ex]
        whole = scorer.agreement.probabilities(items)
        direction = scorer.probe.probabilities(direction_items(items))
        asked = np.array([bool(i.question.strip()) for i in items])
        gold = [e.label for e in ex]
        for name, s in stances(f"{source}-{split}", items).items():
            a = (whole + combine(s, direction, asked)) / 2
            held[f"{source}-{split}, {name}: sign accuracy"] = sign_accuracy(gold, a)
    figures["held-out sets (unstated reading)"] = held
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
