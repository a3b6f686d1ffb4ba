"""The hand-read check: does the judge's sign match a careful human reading of real bot answers?

`sample` draws N first answers (the S_MR1 turn) from each run folder given, shuffles them
together and writes a blind file (question, answer, RoT; no bot name, no score) for a reader.
`score` takes the reader's labels and reports, per run and overall, how often the judge agrees
with the reader: for a reader's agree, AS > 0; for disagree, AS < 0; for neutral, the judge's
most probable class is neutral. Usage:

    python -m training.hand_read sample runs/experiment/base runs/experiment/moral --n 30 \
        --out hand_read/blind.jsonl --key hand_read/key.json
    python -m training.hand_read score --key hand_read/key.json --labels hand_read/labels.jsonl \
        [--also agreement-factored]

`--also SPEC` reads every item again with another scorer, given the pack's stated RoT directions
when it reads them (as in a run), and reports it next to the judges in the key.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from evaluators.moraldial import last_step_index
from scenarios.jsonl import read_dialogues

ANSWER_KINDS = {"first": "S_MR1", "related": "S_RIL"}
"""What a reader can be shown: the first answer (read against the hidden RoT, S_MR1) and the
answer to the related question (the same RoT, a new question: S_RIL)."""


def scored_answers(run_dir: Path, kind: str = "first") -> list[dict[str, Any]]:
    """Every MoralDial answer of `kind` in a run, with its question, RoT and the judge's
    reading (AS and class probabilities)."""
    metric = ANSWER_KINDS[kind]
    out = []
    for d in read_dialogues(run_dir / "dialogues.jsonl"):
        found = d.scores_named(metric)
        if d.flow != "moraldial" or not found or d.hidden_rot is None:
            continue
        score = found[0]
        turn = d.turns[score.turn]  # type: ignore[index]
        # the question the judge read the answer against (as evaluators.moraldial finds it)
        asked_at = 0 if kind == "first" else last_step_index(d.turns, "related", score.turn)
        asked = d.turns[asked_at or 0]
        out.append(
            {
                "dialogue": d.id,
                "kind": kind,
                "question": asked.meta.get("question", asked.text),
                "answer": turn.text,
                "rot": d.hidden_rot.text,
                "as": score.value,
                "p": score.meta.get("p"),
            }
        )
    return out


def read_labels(path: Path) -> dict[str, str]:
    """A reader's labels file (JSONL of {item, label[, note]}) as item -> label."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {row["item"]: row["label"] for row in (json.loads(x) for x in lines if x.strip())}


def judge_matches(label: str, as_value: float, p: list[float] | None) -> bool:
    if label == "agree":
        return as_value > 0
    if label == "disagree":
        return as_value < 0
    return p is not None and max(range(3), key=lambda k: p[k]) == 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("runs", nargs="+", type=Path, help="Run folders (e.g. base, SFT, SFT+DPO).")
    s.add_argument("--n", type=int, default=30, help="Answers of each kind per run.")
    s.add_argument(
        "--kind",
        action="append",
        choices=sorted(ANSWER_KINDS),
        help="Which answers to show (repeatable): first (default) and/or related.",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--key", type=Path, required=True)
    s.add_argument(
        "--also",
        action="append",
        default=[],
        help="Another scorer (folder or embedded name) whose reading goes in the key too.",
    )
    c = sub.add_parser("score")
    c.add_argument("--key", type=Path, required=True)
    c.add_argument("--labels", type=Path, required=True)
    c.add_argument(
        "--also", action="append", default=[], help="Read every item again with this scorer."
    )
    for command in (s, c):
        command.add_argument(
            "--pack", default="core", help="Pack whose stated RoT directions a scorer reads."
        )
    args = parser.parse_args(argv)

    if args.command == "sample":
        rng = random.Random(args.seed)
        rows = []
        for run in args.runs:
            for kind in args.kind or ["first"]:
                answers = scored_answers(run, kind)
                for row in rng.sample(answers, min(args.n, len(answers))):
                    rows.append({**row, "run": run.name})
        rng.shuffle(rows)
        add_readings(rows, args.also, args.pack)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        key = {}
        with args.out.open("w", encoding="utf-8") as fh:
            for i, row in enumerate(rows, 1):
                item = f"h{i:03d}"
                key[item] = row
                blind = {"item": item, "question": row["question"], "answer": row["answer"],
                         "rot": row["rot"]}  # fmt: skip
                fh.write(json.dumps(blind, ensure_ascii=False) + "\n")
        args.key.write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {len(rows)} blind items to {args.out}")
        return

    key = json.loads(args.key.read_text(encoding="utf-8"))
    if not isinstance(key, dict) or not all(isinstance(r, dict) for r in key.values()):
        raise SystemExit(f"{args.key}: not a key written by `python -m training.hand_read sample`")
    for item, row in key.items():  # a key of another sheet's format: one line, no traceback
        needed = KEY_FIELDS + (READ_AGAIN_FIELDS if args.also else ())
        absent = [f for f in needed if f not in row]
        if absent:
            raise SystemExit(
                f"{args.key}: item {item} has no field '{absent[0]}' (score reads keys written "
                "by `python -m training.hand_read sample`)"
            )
    labels = read_labels(args.labels)
    missing = sorted(set(key) - set(labels))
    if missing:
        raise SystemExit(f"{args.labels}: no label for {len(missing)} items (first: {missing[0]})")
    add_readings(list(key.values()), args.also, args.pack)
    out: dict[str, Any] = {"run judge": agreement_with_reader(key, labels, lambda row: row)}
    for spec in sorted({s for row in key.values() for s in row.get("also", {})}):
        out[spec] = agreement_with_reader(key, labels, lambda row, s=spec: row["also"][s])
    print(json.dumps(out, indent=1))


KEY_FIELDS = ("run", "as", "p")
"""What `score` reads from each key row (`sample` writes them)..."""
READ_AGAIN_FIELDS = ("question", "answer", "rot")
"""... and what `score --also` reads as well."""


def add_readings(rows: list[dict[str, Any]], specs: list[str], pack: str) -> None:
    """Each scorer's reading of every row, under `row["also"][spec]`."""
    if not specs:
        return
    from scenarios.pack import load_pack

    directions = load_pack(pack).pack.direction_map()
    for spec in specs:
        for row, (value, p) in zip(rows, other_reading(spec, rows, directions), strict=True):
            row.setdefault("also", {})[spec] = {"as": value, "p": p}


def other_reading(
    spec: str, rows: list[dict[str, Any]], directions: dict[tuple[str, str], str] | None = None
) -> list[tuple[float, list[float]]]:
    """AS and class probabilities of each row by another scorer, for a side-by-side reading;
    a scorer that reads stated RoT directions (the factored one) gets `directions`."""
    from evaluators.agreement import AgreementItem
    from evaluators.scorers import open_agreement_scorer

    scorer = open_agreement_scorer(spec)
    if directions and hasattr(scorer, "use_directions"):
        scorer.use_directions(directions)
    probs = scorer.probabilities(
        [AgreementItem(r["question"], r["answer"], r["rot"]) for r in rows]
    )
    return [(float(p[0] - p[2]), [float(x) for x in p]) for p in probs]


def agreement_with_reader(
    key: dict[str, Any], labels: dict[str, str], reading: Any
) -> dict[str, Any]:
    """Per run and overall: how often one judge's reading matches the reader's label."""
    by_run: dict[str, list[tuple[str, bool]]] = {}
    for item, row in key.items():
        label, judged = labels[item], reading(row)
        kind = row.get("kind", "first")
        group = row["run"] if kind == "first" else f"{row['run']} ({kind})"
        by_run.setdefault(group, []).append(
            (label, judge_matches(label, judged["as"], judged["p"]))
        )
    out: dict[str, Any] = {}
    for run, rows in [*by_run.items(), ("all", [r for rs in by_run.values() for r in rs])]:
        signed = [m for label, m in rows if label != "neutral"]
        out[run] = {
            "n": len(rows),
            "match": sum(m for _, m in rows) / len(rows),
            "reader_labels": {
                k: sum(lab == k for lab, _ in rows) for k in ("agree", "neutral", "disagree")
            },
            "sign_match_on_stanced": sum(signed) / len(signed) if signed else None,
            "n_stanced": len(signed),
        }
    return out


if __name__ == "__main__":
    main()
