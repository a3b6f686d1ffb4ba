from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluators.compare import compare_runs, welch_interval
from moralsim.cli import app
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Score, Turn


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


def write_run(folder: Path, values: list[float], answers: list[str] | None = None) -> Path:
    with DialogueWriter(folder / "dialogues.jsonl") as out:
        for i, v in enumerate(values):
            text = answers[i] if answers else f"answer {i}"
            out.write(
                Dialogue(
                    f"d{i}", f"q{i}", "moraldial",
                    turns=[Turn("user", "question?"), Turn("bot", text)],
                    scores=[Score("S_MA", v, 1), Score("S_MR", 1.0)],
                )
            )  # fmt: skip
    return folder


def test_compare_runs_and_cli(tmp_path: Path) -> None:
    a = write_run(tmp_path / "base", [0.0, 0.2, 0.1])
    b = write_run(tmp_path / "moral", [0.5, 0.7, 0.6, 0.6])
    rows = {r.metric: r for r in compare_runs(a, b)}
    assert rows["S_MA"].a.n == 3 and rows["S_MA"].b.n == 4
    assert rows["S_MA"].diff == pytest.approx(0.6 - 0.1)
    assert rows["S_MR"].diff == 0.0 and rows["S_MR"].diff_low == 0.0
    assert "S_ME" not in rows  # neither run has it
    assert rows["S_MA"].method == "Welch t"  # 3 shared scenarios: too few to pair
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


def test_paired_interval_by_hand() -> None:
    from evaluators.compare import paired_interval

    # diffs 1, 2, 3: mean 2, sd 1, se 1/sqrt(3); t(0.975, 2) = 4.302653
    diff, low, high = paired_interval([1.0, 2.0, 3.0])
    half = 4.302653 / 3**0.5
    assert diff == 2.0
    assert low == pytest.approx(2.0 - half, abs=1e-5) and high == pytest.approx(
        2.0 + half, abs=1e-5
    )
    assert paired_interval([]) == (None, None, None) and paired_interval([0.5]) == (0.5, None, None)


def test_pairing_is_by_scenario_and_tighter_than_welch(tmp_path: Path) -> None:
    from evaluators.compare import Unit, unit_row, welch_interval

    # Scenario difficulty varies a lot; B is better by about 0.1 on every one of them.
    a = [Unit("q1", -0.8), Unit("q2", 0.0), Unit("q3", 0.7), Unit("q4", 0.2), Unit("q5", 0.4)]
    b = [Unit("q3", 0.81), Unit("q1", -0.7), Unit("q4", 0.35), Unit("q2", 0.05),
         Unit("q5", 0.52), Unit("q9", 1.0)]  # fmt: skip
    row = unit_row("S_MA", a, b)
    assert row is not None and row.method == "paired t" and row.pairs == 5
    assert row.diff == pytest.approx((0.1 + 0.05 + 0.11 + 0.15 + 0.12) / 5)  # q9 is unmatched
    assert row.b.n == 6  # each side's own estimate keeps all its units
    assert row.diff_low > 0  # paired: clearly better
    _, welch_low, _ = welch_interval([u.value for u in a], [u.value for u in b][:5])
    assert welch_low < 0  # unpaired, the same numbers cannot tell
    assert [c.key for c in row.changes] == ["q4", "q5", "q3", "q1", "q2"]  # largest first


def test_repeats_of_a_scenario_are_averaged_and_few_shared_ones_are_not_paired() -> None:
    from evaluators.compare import Unit, unit_row

    a = [Unit(f"q{i}", 0.0) for i in range(6)] + [Unit("q0", 1.0)]  # q0 twice: mean 0.5
    b = [Unit(f"q{i}", 0.5) for i in range(6)]
    row = unit_row("S_MA", a, b)
    assert row is not None and row.pairs == 6
    assert next(c for c in row.changes if c.key == "q0").a == 0.5
    other = [Unit(f"x{i}", 0.5) for i in range(20)] + b[:5]  # 5 of 25 shared: not one sample
    assert unit_row("S_MA", a, other).method == "Welch t"


def test_cli_json_changes_warnings_and_fail_if(tmp_path: Path) -> None:
    import json

    a = write_run(
        tmp_path / "base", [0.5, 0.2, 0.1, 0.0, 0.3], ["Yes.", "Sure.", "Maybe.", "Hm.", "Ok."]
    )
    b = write_run(
        tmp_path / "moral",
        [0.4, 0.6, 0.1, 0.2, 0.3],
        ["No, don't.", "It's wrong.", "Maybe.", "Better not.", "Ok."],
    )
    (a / "config.yaml").write_text("seed: 1\nevaluators: {agreement_model: agreement-minilm}\n")
    (b / "config.yaml").write_text("seed: 2\nevaluators: {agreement_model: ./judge}\n")
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    s_ma = next(r for r in data["rows"] if r["metric"] == "S_MA")
    assert s_ma["pairs"] == 5 and s_ma["diff"] == pytest.approx(0.1)
    assert s_ma["changes"][0] == {
        "key": "q1", "a": 0.2, "b": 0.6, "diff": pytest.approx(0.4),
        "a_text": "Sure.", "b_text": "It's wrong.",
    }  # fmt: skip
    assert any("different agreement scorers" in w for w in data["warnings"])
    assert any("different seeds" in w for w in data["warnings"])
    table = runner.invoke(app, ["compare", str(a), str(b)], terminal_width=200)
    assert "It's wrong." in table.output and "paired t, 5 pairs" in table.output
    fails = runner.invoke(app, ["compare", str(a), str(b), "--fail-if", "S_MA < 20"])
    assert fails.exit_code == 1 and "failed: S_MA < 20" in fails.output  # +10 < 20
    passes = runner.invoke(app, ["compare", str(a), str(b), "--fail-if", "S_MA.b < 0"])
    assert passes.exit_code == 0, passes.output
    bad = runner.invoke(app, ["compare", str(a), str(b), "--fail-if", "S_XX < 0"])
    assert bad.exit_code == 2 and "no metric 'S_XX'" in bad.output
    same = runner.invoke(app, ["compare", str(a), str(a)])
    assert "both sides are the same run" in same.output


def test_fail_if_conditions_parse() -> None:
    from evaluators.compare_conditions import Condition, ConditionError

    c = Condition.parse("SaGE answers.low <= -2.5")
    assert (c.metric, c.field, c.op, c.value) == ("SaGE answers", "low", "<=", -2.5)
    assert Condition.parse("S_MA<0").field == "diff"
    with pytest.raises(ConditionError, match="expected 'METRIC"):
        Condition.parse("S_MA is bad")
