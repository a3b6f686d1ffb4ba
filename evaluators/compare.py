"""Two runs side by side: which bot is better, and where.

Every registered flow contributes its rows (`Flow.compare`). A flow that knows which unit a value
belongs to (the scenario of a dialogue, the question of a probe score) gives `Unit`s: the two runs
are then paired by that key and the difference B - A gets a paired t interval over the matched
units, which is far tighter than comparing two independent means when the same questions were
asked of both bots; the largest per-unit changes are kept with what each bot said. Values without
keys get a Welch t interval; a summary-only figure gets the difference of means without one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.stats import MIN_N_FOR_CI, Estimate, mean_ci
from scenarios.jsonl import read_dialogues


@dataclass(frozen=True)
class Unit:
    """One unit's value (a dialogue's metric, a question's score) and what the bot said there."""

    key: str
    value: float
    text: str = ""


@dataclass(frozen=True)
class Change:
    """One matched unit's value in both runs, with both answers, for the side-by-side table."""

    key: str
    a: float
    b: float
    a_text: str = ""
    b_text: str = ""

    @property
    def diff(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: Estimate
    b: Estimate
    diff: float | None
    diff_low: float | None
    diff_high: float | None
    method: str = ""
    """How the interval of the difference was made: 'paired t', 'Welch t' or '' (none)."""
    pairs: int = 0
    changes: tuple[Change, ...] = field(default=())
    """Matched units, largest |B - A| first."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "diff": self.diff,
            "diff_ci95": None if self.diff_low is None else [self.diff_low, self.diff_high],
            "method": self.method,
            "pairs": self.pairs,
            "changes": [
                {"key": c.key, "a": c.a, "b": c.b, "diff": c.diff, "a_text": c.a_text,
                 "b_text": c.b_text}
                for c in self.changes
            ],
        }  # fmt: skip


def _t_half(se: float, df: float, level: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df)) * se


def welch_interval(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(mean(b) - mean(a), low, high); the interval is None when either side has n < 2."""
    if not a or not b:
        return None, None, None
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    diff = mb - ma
    if len(a) < 2 or len(b) < 2:
        return diff, None, None
    va = math.fsum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = math.fsum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = _t_half(se, df, level)
    return diff, diff - half, diff + half


def paired_interval(
    diffs: Sequence[float], level: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(mean difference, low, high) of matched units; the interval is None when n < 2."""
    if not diffs:
        return None, None, None
    n = len(diffs)
    mean = math.fsum(diffs) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1))
    if sd == 0:
        return mean, mean, mean
    half = _t_half(sd / math.sqrt(n), n - 1, level)
    return mean, mean - half, mean + half


def unit_row(label: str, a: Sequence[Unit], b: Sequence[Unit]) -> Comparison | None:
    """A row from keyed values: paired by key when at least two keys match, else Welch.

    Each side's own estimate uses all its units; the difference uses the matched ones only, so
    a run that is missing a few scenarios is still compared on what both have.
    """
    if not (a or b):
        return None
    by_key_a, by_key_b = _one_per_key(a), _one_per_key(b)
    matched = [k for k in by_key_a if k in by_key_b]
    ea, eb = mean_ci([u.value for u in a]), mean_ci([u.value for u in b])
    # Pair only when the runs mostly asked the same things: a few shared scenarios of two
    # otherwise different samples would make a paired interval of the wrong population.
    mostly = 2 * len(matched) >= max(len(by_key_a), len(by_key_b))
    if len(matched) < MIN_N_FOR_CI or not mostly:
        return Comparison(
            label, ea, eb, *welch_interval([u.value for u in a], [u.value for u in b]),
            method="Welch t",
        )  # fmt: skip
    changes = sorted(
        (
            Change(k, by_key_a[k].value, by_key_b[k].value, by_key_a[k].text, by_key_b[k].text)
            for k in matched
        ),
        key=lambda c: (-abs(c.diff), c.key),
    )
    diff, low, high = paired_interval([c.diff for c in changes])
    return Comparison(label, ea, eb, diff, low, high, "paired t", len(matched), tuple(changes))


def _one_per_key(units: Sequence[Unit]) -> dict[str, Unit]:
    """One unit per key: a key seen more than once (repeats of a scenario) is their mean, with
    the first one's text, so no repeat is silently dropped from the pairing."""
    groups: dict[str, list[Unit]] = {}
    for u in units:
        groups.setdefault(u.key, []).append(u)
    return {
        k: Unit(k, math.fsum(u.value for u in g) / len(g), g[0].text) for k, g in groups.items()
    }


def per_unit_row(label: str, a: Sequence[float], b: Sequence[float]) -> Comparison | None:
    """A row from per-unit values without keys (e.g. rankings): Welch interval included."""
    if not (a or b):
        return None
    return Comparison(
        label, mean_ci(list(a)), mean_ci(list(b)), *welch_interval(a, b), method="Welch t"
    )


def summary_only_row(label: str, a: Any, b: Any) -> Comparison | None:
    """A row from two stored estimates (mean, ci95, n) when no per-unit values exist: the
    difference of means, without an interval."""
    ea, eb = _estimate(a), _estimate(b)
    if ea.mean is None and eb.mean is None:
        return None
    diff = None if ea.mean is None or eb.mean is None else eb.mean - ea.mean
    return Comparison(label, ea, eb, diff, None, None)


def compare_runs(run_a: str | Path, run_b: str | Path) -> list[Comparison]:
    """Every registered flow's rows, in flow order (a flow neither run has adds none)."""
    from evaluators.report import check_records, load_run_plugins
    from scenarios.flow_api import RunData, flows_in_order

    for run in (run_a, run_b):
        load_run_plugins(Path(run))
        check_records(Path(run) / "dialogues.jsonl")
    a, b = (
        RunData(read_dialogues(Path(r) / "dialogues.jsonl"), _probes(Path(r)))
        for r in (run_a, run_b)
    )
    return [row for flow in flows_in_order() for row in flow.compare(a, b)]


def compare_warnings(run_a: str | Path, run_b: str | Path) -> list[str]:
    """What makes a comparison of these two runs misleading: the same run twice, or runs that
    differ in what measured them (scorer, pack, split) or in their seed."""
    from evaluators.report import saved_config

    a, b = Path(run_a), Path(run_b)
    if a.resolve() == b.resolve() or _same_file(a / "dialogues.jsonl", b / "dialogues.jsonl"):
        return ["both sides are the same run: every difference is zero by construction"]
    ca, cb = saved_config(a) or {}, saved_config(b) or {}
    out = []
    for what, path in (
        ("agreement scorers", ("evaluators", "agreement_model")),
        ("scenario packs", ("scenarios", "pack")),
        ("question splits", ("scenarios", "split")),
        ("seeds", ("seed",)),
    ):
        va, vb = _at(ca, path), _at(cb, path)
        if va != vb:
            out.append(
                f"the runs used different {what} ({'.'.join(path)}: {va!r} vs {vb!r}); "
                "differences mix the bots with that change"
            )
    return out


def _same_file(a: Path, b: Path) -> bool:
    return a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()


def _at(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _probes(run: Path) -> dict[str, Any]:
    from evaluators.report import read_json_file

    return read_json_file(run / "probes.json") or {}


def _estimate(entry: Any) -> Estimate:
    if not isinstance(entry, dict) or entry.get("mean") is None:
        return Estimate(None, None, None, 0)
    ci = entry.get("ci95") or [None, None]
    return Estimate(entry["mean"], ci[0], ci[1], int(entry.get("n", 0)))
