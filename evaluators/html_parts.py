"""Small HTML pieces every report section is built from: numbers, estimates, tables, figures.

report.html and every flow's own section use the same formatting, so a number reads the same
wherever it appears: "—" for a missing or non-finite value, no "-0.0", estimates as
"mean [low, high] (n)". Nothing here knows a metric or a flow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from evaluators.stats import TOO_FEW
from evaluators.svg_charts import histogram

DASH = "—"
NOT_RUN = "not run"


def scaled(value: object, scale: float = 1.0) -> float | None:
    """value x scale, or None for None, NaN, bools and anything else that is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) * scale


def num(value: object, scale: float = 1.0, digits: int = 1, suffix: str = "") -> str:
    """A number to show, or "—" where `_scaled` finds none."""
    x = scaled(value, scale)
    if x is None:
        return DASH
    text = f"{x:.{digits}f}"
    return (text.lstrip("-") if float(text) == 0 else text) + suffix  # no "-0.0"


def estimate(value: object) -> dict[str, Any]:
    """The estimate dict, or an empty one: a missing or malformed estimate renders as "—"."""
    return dict(value) if isinstance(value, Mapping) else {}


def bounds(est: Mapping[str, Any]) -> tuple[object, object]:
    ci = est.get("ci95")
    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2:
        return None, None
    return ci[0], ci[1]


def ci_text(est: Mapping[str, Any], scale: float, digits: int) -> str:
    """'[lo, hi]', or why there is none (fewer values than an interval needs)."""
    lo, hi = (num(b, scale, digits) for b in bounds(est))
    if DASH in (lo, hi):
        return TOO_FEW if est.get("method") == TOO_FEW else DASH
    return f"[{lo}, {hi}]"


def n_text(est: Mapping[str, Any]) -> str:
    n = est.get("n")
    return str(n) if isinstance(n, int) and not isinstance(n, bool) else DASH


def cell(est: Mapping[str, Any], scale: float = 100.0, digits: int = 1) -> str:
    """'mean [lo, hi] (n)' for a breakdown table; the interval is left out when there is none
    (n below what an interval needs: the small n in brackets says why)."""
    mean = num(est.get("mean"), scale, digits)
    if mean == DASH:
        return DASH
    interval = ci_text(est, scale, digits)
    if interval in (DASH, TOO_FEW):
        return f"{mean} ({n_text(est)})"
    return f"{mean} {interval} ({n_text(est)})"


def est_row(label: str, est: Mapping[str, Any], scale: float, digits: int) -> list[str]:
    return [label, num(est.get("mean"), scale, digits), ci_text(est, scale, digits), n_text(est)]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def not_run(what: str) -> str:
    return f'<p class="note">{escape(what)}: {NOT_RUN}.</p>'


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def hist(section: Mapping[str, Any], title: str, x_title: str, scale: float) -> str:
    data = mapping(section)
    edges, counts = data.get("edges"), data.get("counts")
    if not isinstance(edges, Sequence) or not isinstance(counts, Sequence):
        edges, counts = [], []
    return figure(histogram(edges, counts, title=title, x_title=x_title, scale=scale), title)


def group_order(key: str, group: str) -> tuple[bool, bool, str]:
    """Groups by name, "unknown" last; consensus bands run contested, 4, 5 (low to high)."""
    return group == "unknown", key == "consensus" and not group.startswith("contested"), group
