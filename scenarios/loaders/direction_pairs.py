"""Written direction pairs: one JSON object per line.

Keys: id, question, rot, direction (for / against / unrelated: which way the RoT points on the
act the question asks about), split (train / dev / test), and optionally form (how the RoT
says its side: `plain`, `negated-opposite` — "You shouldn't stay silent when..." for telling —
or `positive-opposite` — "You should keep it private" against telling) and source (default
`directions`). The questions are written for these pairs, not taken from the pack's
questions, so the pairs train a direction reader (training.factored_data) and are never read
as a statement about a question a run asks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.loaders._common import LoadIssue, RecordInvalid, load_jsonl_records, text_field
from scenarios.loaders.directions import DIRECTIONS
from scenarios.types import SPLITS, DirectionPair

PAIR_DIRECTIONS: tuple[str, ...] = tuple(d for d in DIRECTIONS if d != "open")
"""A pair's question always proposes an act, so `open` is not a pair's direction."""
KEYS = ("id", "question", "rot", "direction", "split", "form", "source")


def parse_direction_pair(data: dict[str, Any]) -> DirectionPair:
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    direction = data.get("direction")
    if direction not in PAIR_DIRECTIONS:
        raise RecordInvalid(
            "direction", f"must be one of {', '.join(PAIR_DIRECTIONS)}, got {direction!r}"
        )
    split = data.get("split")
    if split not in SPLITS:
        raise RecordInvalid("split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
    optional = {key: _word(data, key) for key in ("form", "source") if key in data}
    return DirectionPair(
        id=text_field(data, "id"),
        question=text_field(data, "question"),
        rot=text_field(data, "rot"),
        direction=direction,
        split=split,
        **optional,
    )


EXAMPLE_NAME = {"form": "negated-opposite", "source": "directions"}


def _word(data: dict[str, Any], key: str) -> str:
    """A name to slice figures by: one token without ':' (the kind is `source:form`)."""
    value = data[key]
    if not isinstance(value, str) or len(value.split()) != 1 or ":" in value:
        raise RecordInvalid(
            key, f"must be a name without spaces or ':', such as {EXAMPLE_NAME[key]}, got {value!r}"
        )
    return value.strip()


def load_direction_pairs(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[DirectionPair], list[LoadIssue]]:
    return load_jsonl_records(path, parse_direction_pair, skip_invalid)
