"""Mean, 95% confidence interval and n: the one way every metric is aggregated.

The t interval is the default (metric values are bounded and n is usually in the tens to
thousands); the percentile bootstrap is there for skewed metrics and small n, seeded so that
a summary is reproducible. Aggregates never depend on the order of the values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Method = Literal["t", "bootstrap"]


@dataclass(frozen=True)
class Estimate:
    """A metric's mean with its confidence interval; the interval is None when n < 2."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    method: str = "t"

    def to_dict(self) -> dict[str, object]:
        return {
            "mean": self.mean,
            "ci95": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "n": self.n,
            "method": self.method,
        }


MIN_N_FOR_CI = 5
"""Below this many values no interval is given: a t interval on 2-4 bounded values is mostly
a statement about the t distribution's tails, and reads as far more certain than it is."""

TOO_FEW = "n too small"
"""`Estimate.method` of a mean whose interval was left out because n < MIN_N_FOR_CI."""


def mean_ci(
    values: Iterable[float],
    level: float = 0.95,
    method: Method = "t",
    resamples: int = 10_000,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
) -> Estimate:
    """Mean and two-sided confidence interval of `values` (NaN is an error, not skipped).

    `bounds` is the metric's range: the interval is clipped to it (a t interval around a mean
    near +1 of a metric in [-1, 1] would otherwise claim values the metric cannot take). With
    fewer than MIN_N_FOR_CI values there is no interval, and `method` says so.
    """
    x = np.sort(np.asarray(list(values), dtype=np.float64))  # sorted: order-independent sums
    n = int(x.size)
    if n == 0:
        return Estimate(None, None, None, 0, method)
    if np.isnan(x).any():
        raise ValueError("metric values contain NaN; an unscorable turn must be left out upstream")
    mean = float(math.fsum(x) / n)
    if n < MIN_N_FOR_CI:
        return Estimate(mean, None, None, n, TOO_FEW)
    est = _interval(x, mean, level, method, resamples, seed)
    if bounds is None:
        return est
    return Estimate(mean, _clip(est.ci_low, bounds), _clip(est.ci_high, bounds), n, method)


def _clip(value: float | None, bounds: tuple[float, float]) -> float | None:
    return None if value is None else min(max(value, bounds[0]), bounds[1])


def _interval(
    x: np.ndarray, mean: float, level: float, method: Method, resamples: int, seed: int
) -> Estimate:
    n = int(x.size)
    if method == "t":
        from scipy.stats import t

        sd = float(np.sqrt(math.fsum((x - mean) ** 2) / (n - 1)))
        half = float(t.ppf(0.5 + level / 2, df=n - 1)) * sd / math.sqrt(n)
        return Estimate(mean, mean - half, mean + half, n, method)
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(resamples, n))
        means = x[idx].mean(axis=1)
        low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
        return Estimate(mean, float(low), float(high), n, method)
    raise ValueError(f"unknown CI method {method!r}; use 't' or 'bootstrap'")


def histogram(values: Sequence[float], low: float, high: float, bins: int = 20) -> dict[str, list]:
    """Counts of `values` in equal bins over [low, high], as plain lists for JSON."""
    counts, edges = np.histogram(np.asarray(values, dtype=np.float64), bins=bins, range=(low, high))
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def grouped(values: Sequence[float], keys: Sequence[str], **options: object) -> dict[str, Estimate]:
    """mean_ci per group, groups sorted by name."""
    if len(values) != len(keys):
        raise ValueError(f"{len(values)} values but {len(keys)} group keys")
    groups: dict[str, list[float]] = {}
    for value, key in zip(values, keys, strict=True):
        groups.setdefault(key, []).append(value)
    return {key: mean_ci(groups[key], **options) for key in sorted(groups)}  # type: ignore[arg-type]
