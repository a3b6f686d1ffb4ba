"""Verdict preference pairs for DPO, from a pack's written corpus and Social-Chem-101 judgments.

Why: the pack's own pairs (training.dpo_pairs) prefer its agreeing reference answer, which
mostly opens with a decisive "Yes" / "No", over its disagreeing one, which mostly hedges
(README, "Preference training"), so they teach a style as much as a side. A verdict pair
differs only in the side: the same question, the same reason (the RoT), and the verdict on the
act that the RoT takes (chosen) or the opposite one (rejected), worded as in
training.verdict_answers. Items come from

- the pack's written corpus: direct questions with a RoT whose stated direction on the asked
  act is for or against (training.verdict_answers.verdict_items), and
- Social-Chem-101 rows: the action ("helping your friends when they're down") asked about as
  "Is helping your friends when they're down okay?" (or two other wordings, seeded), its side
  from the crowd's action-moral-judgment (good or very good: for; bad or very bad: against;
  neutral and unrated rows, RoTs flagged as bad or contested (consensus controversial or
  below) and judgments fewer than about 75% of annotators share are left out).

Only train-split items are written, and any pair holding text of a held-out pack question is
dropped (the check `moralsim train dpo` repeats on `extra_pairs`). The file holds TRL
preference rows for `extra_pairs`:

    python -m training.verdict_pairs --written 3000 --social-chem sc.tsv --limit 6000 --out vp.jsonl
    moralsim train dpo --preset moral-smollm2-dpo --set extra_pairs=vp.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from training.dpo_pairs import PreferencePair, held_out_pair_texts, leaked_text
from training.verdict_answers import VerdictItem, opposite, side_phrases, verdict_items

STEP = "verdict"
MIN_ACTION_AGREE = 3
"""Social-Chem-101's 0-4 share of annotators who agree with the action's judgment; 3 is
"common" (about 75-90%). Below it the crowd's side is too uncertain to prefer."""
QUESTION_FORMS: tuple[str, ...] = (
    "Is {action} okay?",
    "Would {action} be wrong?",
    "What do you think about {action}?",
)


def social_chem_items(rows: Sequence[Any], seed: int) -> list[VerdictItem]:
    """Social-Chem-101 rows with an action and a good or bad judgment, as questions."""
    rng = random.Random(f"{seed}:social-chem-questions")
    items = []
    for row in rows:
        action = (row.rot.action or "").strip().rstrip(".!?").strip()
        judgment = row.action_moral_judgment
        if not action or not judgment or row.rot_bad or row.rot.contested:
            continue
        if row.action_agree is None or row.action_agree < MIN_ACTION_AGREE:
            continue
        action = action[0].lower() + action[1:]
        items.append(
            VerdictItem(
                example_id=f"social-chem:{row.rot_id}",
                question=rng.choice(QUESTION_FORMS).format(action=action),
                rot=row.rot.text,
                direction="for" if judgment > 0 else "against",
                split=row.split,
            )
        )
    return items


def verdict_pair(item: VerdictItem, rng: random.Random) -> PreferencePair:
    """Chosen: the RoT's side, then the RoT. Rejected: the other side, then the same RoT."""
    reason = item.rot.strip()
    return PreferencePair(
        prompt=(("user", item.question),),
        chosen=f"{rng.choice(side_phrases(item.direction))} {reason}",
        rejected=f"{rng.choice(side_phrases(opposite(item.direction)))} {reason}",
        step=STEP,
        question_id=item.example_id,
    )


def build_verdict_pairs(
    items: Sequence[VerdictItem], held_out: Sequence[Any], limit: int | None, seed: int
) -> tuple[list[PreferencePair], Counter[str]]:
    """Pairs of the train-split items (a seeded sample of `limit`), with what was left out."""
    rng = random.Random(f"{seed}:verdict-pairs")
    train = [i for i in items if i.split == "train"]
    rng.shuffle(train)
    held = held_out_pair_texts(held_out)
    dropped: Counter[str] = Counter({"not train split": len(items) - len(train)})
    pairs = []
    for item in train:
        if limit is not None and len(pairs) >= limit:
            break
        pair = verdict_pair(item, rng)
        if leaked_text(pair, held) is not None:
            dropped["holds held-out text"] += 1
            continue
        pairs.append(pair)
    return pairs, dropped


def main(argv: list[str] | None = None) -> None:
    from scenarios.loaders import ScenarioLoadError, load_social_chem
    from scenarios.pack import load_pack
    from scenarios.registry import RegistryError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pack", default="core", help="Pack: held-out questions, written corpus")
    parser.add_argument("--written", type=int, default=0, help="Written-corpus items to use")
    parser.add_argument("--social-chem", type=Path, action="append", default=[])
    parser.add_argument("--limit", type=int, default=None, help="Most pairs in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.written < 0 or (args.limit is not None and args.limit < 1):
        parser.error("--written must be >= 0 and --limit >= 1")
    try:
        pack = load_pack(args.pack).pack
        rows = [row for path in args.social_chem for row in load_social_chem(path)[0]]
    except (ScenarioLoadError, RegistryError) as exc:
        raise SystemExit(f"error: {exc}") from None
    written = [
        replace(i, example_id=f"written:{i.example_id}")
        for i in verdict_items(pack)
        if i.split == "train"
    ]
    random.Random(f"{args.seed}:written").shuffle(written)
    items = written[: args.written] + social_chem_items(rows, args.seed)
    if not items:
        parser.error("no items: give --written N and/or --social-chem FILE")
    held_out = pack.questions_in("dev") + pack.questions_in("test")
    pairs, dropped = build_verdict_pairs(items, held_out, args.limit, args.seed)
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(p.to_row()) + "\n" for p in pairs), encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"error: cannot write {args.out}: {exc.strerror or exc}") from None
    sides = Counter(p.question_id.split(":", 1)[0] for p in pairs)
    print(f"wrote {len(pairs)} pairs to {args.out} ({dict(sides)}); left out: {dict(dropped)}")


if __name__ == "__main__":
    main()
