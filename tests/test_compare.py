from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluators.compare import compare_runs, welch_interval
from moralsim.cli import app
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Score


def test_welch_interval_by_hand() -> None:
    # a = [0, 1]: mean 0.5, var 0.5, var/n 0.25; b = [1, 2, 3]: mean 2, var 1, var/n 1/3
    # se = sqrt(0.25 + 0.33333) = 0.763763; df = 0.583333^2 / (0.0625/1 + 0.111111/2) = 2.88
    diff, low, high = welch_interval([0.0, 1.0], [1.0, 2.0, 3.0])
    assert diff == 1.5
    from scipy.stats import t

    df = (0.25 + 1 / 3) ** 2 / (0.25**2 / 1 + (1 / 3) ** 2 / 2)
    half = t.ppf(0.975, df) * (0.25 + 1 / 3) ** 0.5
    assert low == pytest.approx(1.5 - half) and high == pytest.approx(1.5 + half)
    assert welch_interval([], [1.0]) == (None, None, None)
    assert welch_interval([1.0], [2.0]) == (1.0, None, None)


def write_run(folder: Path, values: list[float]) -> Path:
    with DialogueWriter(folder / "dialogues.jsonl") as out:
        for i, v in enumerate(values):
            out.write(
                Dialogue(
                    f"d{i}", f"q{i}", "moraldial", scores=[Score("S_MA", v, 1), Score("S_MR", 1.0)]
                )
            )
    return folder


def test_compare_runs_and_cli(tmp_path: Path) -> None:
    a = write_run(tmp_path / "base", [0.0, 0.2, 0.1])
    b = write_run(tmp_path / "moral", [0.5, 0.7, 0.6, 0.6])
    rows = {r.metric: r for r in compare_runs(a, b)}
    assert rows["S_MA"].a.n == 3 and rows["S_MA"].b.n == 4
    assert rows["S_MA"].diff == pytest.approx(0.6 - 0.1)
    assert rows["S_MR"].diff == 0.0 and rows["S_MR"].diff_low == 0.0
    assert rows["S_ME"].diff is None
    result = CliRunner().invoke(app, ["compare", str(a), str(b)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "S_MA" in result.output and "+50.0" in result.output
