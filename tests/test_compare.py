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


def test_probe_rows_compare_per_unit_values_where_stored(tmp_path: Path) -> None:
    import json

    a = write_run(tmp_path / "base", [0.0, 0.2])
    b = write_run(tmp_path / "moral", [0.5, 0.7])
    (a / "probes.json").write_text(
        json.dumps(
            {
                "sage": {"per_question": {"q1": {"answer": 0.2, "rot": 0.1},
                                          "q2": {"answer": 0.4, "rot": 0.3}}},
                "dit": {"p_values": [20.0, 40.0]},
                "prudence": {"prudence": {"mean": 0.25, "ci95": None, "n": 4}},
            }
        )
    )  # fmt: skip
    (b / "probes.json").write_text(
        json.dumps(
            {
                "sage": {"per_question": {"q1": {"answer": 0.6, "rot": 0.5},
                                          "q2": {"answer": 0.8, "rot": 0.5}}},
                "dit": {"p_values": [50.0, 70.0, 60.0]},
                "prudence": {"prudence": {"mean": 0.75, "ci95": None, "n": 4}},
            }
        )
    )  # fmt: skip
    rows = {r.metric: r for r in compare_runs(a, b)}
    assert rows["SaGE answers"].diff == pytest.approx(0.7 - 0.3)
    assert rows["SaGE answers"].diff_low is not None
    assert rows["SaGE RoTs"].a.mean == pytest.approx(0.2)
    assert rows["DIT P-score"].diff == pytest.approx(0.6 - 0.3) and rows["DIT P-score"].b.n == 3
    assert rows["prudence"].diff == pytest.approx(0.5) and rows["prudence"].diff_low is None
    assert "SaGE RoTs (RoT-prompted)" not in rows and "S_RIL (static)" not in rows
