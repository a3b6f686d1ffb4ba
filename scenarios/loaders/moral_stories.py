"""Moral Stories norm/action pairs (Emelin et al., 2021), for validating agreement scorers.

Each line is one action judged against a norm: `{"ID", "norm", "moral_action", "label": "1"}`
or `{"ID", "norm", "immoral_action", "label": "0"}`. The two actions of one story share the ID
up to its last character (…1 for the moral, …0 for the immoral one), and the same norm. A pair
is what the pairwise check needs: an action that follows the norm and one that breaks it.

Moral Stories is used by moralsim for validation only; never put it in a training set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenarios.loaders._common import Collector, LoadIssue, ScenarioLoadError, read_json_lines


@dataclass(frozen=True)
class NormPair:
    """A norm, an action that follows it and an action that breaks it."""

    id: str
    norm: str
    follow: str
    break_: str


_SIDES = {"1": "moral_action", "0": "immoral_action"}


def load_moral_stories(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[NormPair], list[LoadIssue]]:
    """Pairs in file order; a story with only one of its two actions is reported."""
    collector = Collector(Path(path), skip_invalid)
    halves: dict[str, dict[str, tuple[str, str, int]]] = {}
    order: list[str] = []
    for number, data in read_json_lines(collector):
        where = f"line {number}"
        if not isinstance(data, dict):
            collector.problem(where, None, "expected a JSON object")
            continue
        ident, label = data.get("ID"), str(data.get("label", ""))
        if not isinstance(ident, str) or len(ident) < 2:
            collector.problem(where, "ID", "missing or too short")
            continue
        if label not in _SIDES:
            collector.problem(
                where, "label", f"must be '1' (moral) or '0' (immoral), got {label!r}"
            )
            continue
        key = _SIDES[label]
        norm, action = data.get("norm"), data.get(key)
        for name, value in (("norm", norm), (key, action)):
            if not isinstance(value, str) or not value.strip():
                collector.problem(where, name, "missing or empty")
                break
        else:
            story = ident[:-1]
            if story not in halves:
                halves[story] = {}
                order.append(story)
            if label in halves[story]:
                collector.problem(where, "ID", f"second {key} for story {story}")
                continue
            halves[story][label] = (norm.strip(), " ".join(action.split()), number)
    pairs: list[NormPair] = []
    for story in order:
        sides = halves[story]
        if set(sides) != {"0", "1"}:
            have = next(iter(sides.values()))
            collector.problem(f"line {have[2]}", "ID", f"story {story} has only one action")
            continue
        if sides["0"][0] != sides["1"][0]:
            collector.problem(f"line {sides['0'][2]}", "norm", f"story {story}: norms differ")
            continue
        pairs.append(NormPair(story, sides["1"][0], sides["1"][1], sides["0"][1]))
    if not pairs:
        raise ScenarioLoadError(collector.path, "file", None, "no complete norm/action pairs")
    return pairs, collector.issues
