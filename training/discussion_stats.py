"""Per-flow counts of a discussion set (like MoralDial's Table 1), its table, and saving it.

Lengths are in words (whitespace-separated), not tokens, so the numbers do not depend on which
model's tokenizer trains on the data. Context = every message before the last; response = the
last (modelled) message. A PT row has no context (length 0).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datasets import DatasetDict
from rich.table import Table

from training.discussion_sources import FLOWS

if TYPE_CHECKING:
    from training.discussions import BuildReport, DiscussionConfig

LENGTH_UNIT = "words (whitespace-separated)"


def _words(text: str) -> int:
    return len(text.split())


def _cell(conversations: list[list[dict[str, str]]]) -> dict[str, Any]:
    n = len(conversations)
    turns = sum(len(m) for m in conversations)
    context = sum(_words(x["content"]) for m in conversations for x in m[:-1])
    response = sum(_words(m[-1]["content"]) for m in conversations)
    return {
        "dialogues": n,
        "turns": turns,
        "turns_per_dialogue": turns / n if n else None,
        "mean_context_length": context / n if n else None,
        "mean_response_length": response / n if n else None,
    }


def discussion_stats(dataset: DatasetDict) -> dict[str, Any]:
    """Counts per flow and split (plus "all"), and over all flows; lengths in words."""
    by_flow: dict[str, dict[str, list[list[dict[str, str]]]]] = {}
    for split, part in dataset.items():
        for flow, messages in zip(part["flow"], part["messages"], strict=True):
            by_flow.setdefault(flow, {}).setdefault(split, []).append(messages)
    order = [f for f in FLOWS if f in by_flow] + sorted(set(by_flow) - set(FLOWS))
    flows: dict[str, dict[str, Any]] = {}
    for flow in order:
        cells = {split: _cell(by_flow[flow].get(split, [])) for split in dataset}
        cells["all"] = _cell([m for split in dataset for m in by_flow[flow].get(split, [])])
        flows[flow] = cells
    everything = [m for f in by_flow.values() for msgs in f.values() for m in msgs]
    return {
        "length_unit": LENGTH_UNIT,
        "splits": {split: len(part) for split, part in dataset.items()},
        "flows": flows,
        "total": _cell(everything),
    }


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def stats_table(stats: dict[str, Any], title: str = "discussion flows") -> Table:
    """The Table-1-style view: dialogues per split, turns and mean lengths over all splits."""
    splits = list(stats["splits"])
    table = Table(title=f"{title} (lengths in {stats['length_unit']})")
    for column in ("flow", *splits, "dialogues", "turns", "turns/dial.", "context", "response"):
        table.add_column(column, justify="left" if column == "flow" else "right", no_wrap=True)
    rows = [(flow, cells) for flow, cells in stats["flows"].items()]
    totals = {split: {"dialogues": n} for split, n in stats["splits"].items()}
    for name, cells, all_ in [(f, c, c["all"]) for f, c in rows] + [
        ("total", totals, stats["total"])
    ]:
        table.add_row(
            name,
            *(str(cells[s]["dialogues"]) for s in splits),
            str(all_["dialogues"]),
            str(all_["turns"]),
            _num(all_["turns_per_dialogue"]),
            _num(all_["mean_context_length"]),
            _num(all_["mean_response_length"]),
        )
    return table


def save_discussions(
    dataset: DatasetDict,
    folder: str | Path,
    *,
    report: BuildReport | None = None,
    config: DiscussionConfig | None = None,
) -> Path:
    """Save the DatasetDict (`load_from_disk(folder)` reads it) and `stats.json` beside it.

    stats.json holds the per-flow counts, and when given, the build report (what was dropped
    and why, how PT statements were made) and the config that rebuilds the set.
    """
    folder = Path(folder)
    dataset.save_to_disk(str(folder))
    payload: dict[str, Any] = {"stats": discussion_stats(dataset)}
    if report is not None:
        payload["build"] = report.to_dict()
    if config is not None:
        payload["config"] = asdict(config)
    path = folder / "stats.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path
