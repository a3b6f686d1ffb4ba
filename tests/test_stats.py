from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluators.stats import grouped, mean_ci


def test_t_interval_on_a_known_sample() -> None:
    # x = 1..5: mean 3, sample sd sqrt(10/4) = 1.58114, se = 0.70711,
    # t(0.975, df=4) = 2.776445, half-width = 1.96324 -> [1.03676, 4.96324]
    est = mean_ci([5, 1, 4, 2, 3])
    assert est.mean == 3.0 and est.n == 5
    assert est.ci_low == pytest.approx(1.03676, abs=1e-5)
    assert est.ci_high == pytest.approx(4.96324, abs=1e-5)


def test_constant_sample_has_zero_width() -> None:
    est = mean_ci([0.5] * 10)
    assert (est.ci_low, est.mean, est.ci_high) == (0.5, 0.5, 0.5)


def test_small_and_empty_samples() -> None:
    assert mean_ci([]).to_dict() == {"mean": None, "ci95": None, "n": 0, "method": "t"}
    one = mean_ci([0.2])
    assert one.mean == 0.2 and one.ci_low is None and one.n == 1


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([0.1, math.nan])


def test_bootstrap_interval_covers_the_mean_and_is_seeded() -> None:
    values = [0.1 * i for i in range(20)]
    a = mean_ci(values, method="bootstrap", seed=1)
    b = mean_ci(values, method="bootstrap", seed=1)
    assert a == b
    assert a.ci_low < a.mean < a.ci_high
    # a bootstrap percentile interval is close to the t interval for a symmetric sample
    t = mean_ci(values)
    assert abs((a.ci_high - a.ci_low) - (t.ci_high - t.ci_low)) < 0.15


def test_grouped_estimates() -> None:
    out = grouped([1.0, 0.0, 0.5, 0.5], ["b", "a", "b", "a"])
    assert list(out) == ["a", "b"]
    assert out["a"].mean == 0.25 and out["b"].mean == 0.75 and out["a"].n == 2


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=40), st.randoms())
def test_aggregates_do_not_depend_on_order(values, rnd) -> None:
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert mean_ci(values) == mean_ci(shuffled)
