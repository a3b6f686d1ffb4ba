"""`moralsim compare --fail-if "S_MA < 0"`: conditions on a comparison, for CI pipelines.

A condition is `METRIC[.FIELD] OP NUMBER`. METRIC is a row of the compare table (quote names
with spaces: "SaGE answers.low < 0"); FIELD is what is tested, on the table's x100 scale:
`diff` (B - A, the default), `low`/`high` (the bounds of its 95% interval), `a` or `b` (each
run's mean). A condition that holds makes `compare` exit 1; a metric neither run has, or a
field without a value (no interval), is an error rather than a silent pass.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluators.compare import Comparison

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
FIELDS = ("diff", "low", "high", "a", "b")
_PATTERN = re.compile(r"^\s*(?P<lhs>.+?)\s*(?P<op><=|>=|<|>)\s*(?P<num>[-+]?\d+(\.\d*)?)\s*$")


class ConditionError(ValueError):
    """A condition that cannot be read or evaluated (the message says which and why)."""


@dataclass(frozen=True)
class Condition:
    text: str
    metric: str
    field: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Condition:
        found = _PATTERN.match(text)
        if found is None:
            raise ConditionError(
                f"--fail-if {text!r}: expected 'METRIC[.FIELD] OP NUMBER', e.g. 'S_MA < 0' or "
                "'S_MR1.low < 0' (OP one of < <= > >=)"
            )
        lhs = found["lhs"]
        metric, dot, field = lhs.rpartition(".")
        if not dot or field not in FIELDS:
            metric, field = lhs, "diff"
        return cls(text, metric.strip(), field, found["op"], float(found["num"]))

    def value_in(self, rows: Sequence[Comparison]) -> float:
        """The tested quantity, x100 like the table."""
        row = next((r for r in rows if _same_name(r.metric, self.metric)), None)
        if row is None:
            names = ", ".join(r.metric for r in rows)
            raise ConditionError(f"--fail-if {self.text!r}: no metric {self.metric!r} ({names})")
        value = {
            "diff": row.diff,
            "low": row.diff_low,
            "high": row.diff_high,
            "a": row.a.mean,
            "b": row.b.mean,
        }[self.field]
        if value is None:
            raise ConditionError(
                f"--fail-if {self.text!r}: {self.metric} has no {self.field} value in these runs"
            )
        return 100.0 * value

    def holds(self, rows: Sequence[Comparison]) -> bool:
        return _OPS[self.op](self.value_in(rows), self.value)


def _same_name(label: str, given: str) -> bool:
    """A table label, also typed without its Greek letter (dS_MR for ΔS_MR) in a shell."""
    return given in (label, label.replace("Δ", "d"))
