"""Written direction pairs: from writers' situations and blind ratings to the pack's file.

The probe reads a RoT's direction on a question's act. On flat answers of the sign dev set it
misread a quarter of the RoTs that speak for the act, mostly rules that support the act by
forbidding its opposite ("You shouldn't stay silent when..." for telling) and broad principles
that cover the act by a step of inference. Writers wrote situations for exactly that: a
question about an act A, a question about the opposite choice, and four RoTs with their
direction on A, one of each form:

- `plain` for A ("You should speak up when..."), `negated-opposite` for A ("You shouldn't stay
  silent when..."), `plain` against A ("You shouldn't..."), `positive-opposite` against A
  ("You should keep it to yourself").

Each situation gives eight pairs: the four RoTs on A and, with their directions turned, on the
opposite choice, so one RoT appears with both sides and only the act tells them apart. Every
pair is rated blind by a reader of another batch; a pair is kept when the rating matches the
writer's direction. Splits and leak checks are `training.scorer_data.assemble`'s (a situation's
pairs go to dev together), plus a stricter check against the sign sets: a situation whose
question or RoT retells a sign-set item is dropped whole.

    python -m training.direction_pair_items --situations 'sit_*.jsonl' \
        --ratings 'ratings_*.jsonl' --out scenarios/packs/core/direction_pairs.jsonl \
        --moral-stories ../shared/data/moral_stories/dev.jsonl
"""

from __future__ import annotations

import argparse
import glob
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.factored_data import DIRECTION_LABEL
from training.scorer import EVALUATION_ONLY_SOURCES
from training.scorer_data import assemble, leaking

FORMS: dict[str, str] = {
    "plain-for": "for",
    "negated-opposite": "for",
    "plain-against": "against",
    "positive-opposite": "against",
}
"""Each situation's four RoT forms (the writer's `form`, with `plain` split by side) and
their direction on the act of `q_act`."""
FORMS_WRITTEN = ("plain", "negated-opposite", "positive-opposite")

TURNED = {"for": "against", "against": "for"}
FORM_ON_OPPOSITE = {
    "plain-for": "positive-opposite",
    "negated-opposite": "plain",
    "plain-against": "negated-opposite",
    "positive-opposite": "plain",
}
"""A RoT's form named against the opposite choice: "You shouldn't suffer in silence"
(negated-opposite for telling) is a plain rule against keeping quiet."""
LABEL_DIRECTION = {label: direction for direction, label in DIRECTION_LABEL.items()}
SIGN_QUESTION_SIMILARITY = 0.8
SIGN_ROT_SIMILARITY = 0.85
"""MiniLM cosines at which a question or RoT retells a sign-set item (the thresholds that took
retellings of the sign test out of signs-dev, README "Scorer training data")."""


def form_of(rot: dict[str, Any]) -> str:
    return f"plain-{rot['on_act']}" if rot["form"] == "plain" else str(rot["form"])


def check_situation(situation: dict[str, Any]) -> None:
    """One of each form, each with the direction its form implies; every text written."""
    sid = situation.get("sid")
    if not isinstance(sid, str) or not sid.strip():
        raise ValueError("field 'sid': missing or empty")
    for key in ("q_act", "q_opp"):
        if not isinstance(situation.get(key), str) or not situation[key].strip():
            raise ValueError(f"{sid}: field '{key}': missing or empty")
    rots = situation.get("rots")
    if not isinstance(rots, list) or not all(isinstance(r, dict) for r in rots):
        raise ValueError(f"{sid}: field 'rots': must be a list of objects")
    for n, rot in enumerate(rots):
        if not isinstance(rot.get("rot"), str) or not rot["rot"].strip():
            raise ValueError(f"{sid}: field 'rots[{n}].rot': missing or empty")
        if rot.get("on_act") not in TURNED or rot.get("form") not in FORMS_WRITTEN:
            raise ValueError(
                f"{sid}: field 'rots[{n}]': on_act must be for/against and form one of "
                f"{', '.join(FORMS_WRITTEN)}"
            )
    forms = sorted(form_of(r) for r in rots)
    if forms != sorted(FORMS):
        raise ValueError(f"{sid}: RoT forms {forms}, expected one of each of {sorted(FORMS)}")
    for rot in situation["rots"]:
        if FORMS[form_of(rot)] != rot["on_act"]:
            raise ValueError(f"{sid}: a {rot['form']} RoT cannot be {rot['on_act']} the act")


def expand(situation: dict[str, Any]) -> list[dict[str, Any]]:
    """The situation's eight pairs as labelled items (label = the direction as an agreement
    label, so scorer_data's second rating and splits apply unchanged)."""
    check_situation(situation)
    sid = situation["sid"]
    items = []
    for side, key in (("a", "q_act"), ("o", "q_opp")):
        for n, rot in enumerate(situation["rots"], start=1):
            on_act = side == "a"
            direction = rot["on_act"] if on_act else TURNED[rot["on_act"]]
            form = rot["form"] if on_act else FORM_ON_OPPOSITE[form_of(rot)]
            items.append(
                {
                    "id": f"{sid}-{side}{n}",
                    "sid": sid,
                    "question": situation[key].strip(),
                    "answer": "",
                    "rot": rot["rot"].strip(),
                    "label": DIRECTION_LABEL[direction],
                    "phenomenon": form,
                }
            )
    return items


def retelling_sign_sets(
    items: Sequence[dict[str, Any]],
    pack: Any,
    embed: Callable[[Sequence[str]], np.ndarray],
) -> set[str]:
    """Situations (sids) with a question or RoT near one of the sign sets' items."""
    held = [e for e in pack.agreement_examples if e.source in EVALUATION_ONLY_SOURCES]
    near = leaking(items, [e.question for e in held], [], embed, SIGN_QUESTION_SIMILARITY)
    near |= leaking(items, [], [e.rot for e in held], embed, SIGN_ROT_SIMILARITY)
    return {items[i]["sid"] for i in near}


def pair_rows(kept: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """scorer_data's rows back in the direction-pair format (scenarios.loaders.direction_pairs)."""
    return [
        {
            "id": row["id"],
            "question": row["question"],
            "rot": row["rot"],
            "direction": LABEL_DIRECTION[row["label"]],
            "split": row["split"],
            "form": row["phenomenon"],
            "source": "directions",
        }
        for row in kept
    ]


def _rating(row: dict[str, Any]) -> tuple[str, str]:
    """(pair id, the rating as an agreement label)."""
    if not isinstance(row.get("id"), str) or row.get("direction") not in DIRECTION_LABEL:
        raise ValueError(f"field 'direction': must be one of {', '.join(DIRECTION_LABEL)}")
    return row["id"], DIRECTION_LABEL[row["direction"]]


def _rows(patterns: Sequence[str], parse: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """Each JSON line of the files the globs match, parsed; an error names file and line."""
    out = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    out.append(parse(json.loads(line)))
                except (ValueError, AttributeError) as exc:
                    raise ValueError(f"{path}: line {number}: {exc}") from None
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--situations", nargs="+", required=True)
    parser.add_argument("--ratings", nargs="+", required=True, help="{id, direction} rows.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--moral-stories", type=Path, default=None)
    parser.add_argument("--pack", default="core")
    args = parser.parse_args(argv)

    from agents.models import load_sentence_encoder
    from evaluators.stack import encode_normalized
    from scenarios.pack import load_pack

    try:
        items = [item for situation in _rows(args.situations, expand) for item in situation]
        rated = _rows(args.ratings, _rating)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    ratings = dict(rated)
    if len(ratings) != len(rated):
        raise SystemExit("error: a pair id is rated twice")
    pack = load_pack(args.pack).pack
    encoder = load_sentence_encoder("minilm-l6")

    def embed(texts: Sequence[str]) -> np.ndarray:
        return encode_normalized(encoder, texts)

    retold = retelling_sign_sets(items, pack, embed)
    kept_items = [i for i in items if i["sid"] not in retold]
    norms: list[str] = []
    if args.moral_stories:
        from scenarios.loaders import load_moral_stories

        norms = sorted({p.norm for p in load_moral_stories(args.moral_stories)[0]})
    result = assemble(
        kept_items, ratings, pack, embed, "directions",
        extra_held_rots=norms, dev_group="sid",
    )  # fmt: skip
    rows = pair_rows(result.kept)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    report = {
        "situations": len({i["sid"] for i in items}),
        "situations_retelling_sign_sets": len(retold),
        **result.report,
        "by_direction": dict(Counter(r["direction"] for r in rows)),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.report:
        args.report.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
