from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from moralsim.cli import app
from moralsim.config import load_config, save_config
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, Score, Turn
from scenarios.rot import RoT


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "demo"
    save_config(load_config(None, ["name=demo", "seed=4"]), run / "config.yaml")
    with DialogueWriter(run / "dialogues.jsonl") as out:
        for i, (mr1, mr) in enumerate([(0.5, 1.0), (-0.5, 0.0)]):
            out.write(
                Dialogue(
                    id=f"d{i}",
                    scenario_id=f"q{i}",
                    flow="moraldial",
                    turns=[
                        Turn("user", "Q?", {"step": "question"}),
                        Turn("bot", "A", {"step": "answer"}),
                    ],
                    hidden_rot=RoT("It's wrong to lie.", ("fairness",), consensus=4, severity=3),
                    scores=[Score("S_MR1", mr1, turn=1), Score("S_MR", mr)],
                    meta={"split": "test"},
                )
            )
    (run / "probes.json").write_text(
        json.dumps({"dit": {"p_score": 40.0, "random_baseline": 33.3}})
    )
    return run


def test_report_rebuilds_summary_and_html(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run"]["name"] == "demo" and summary["run"]["seed"] == 4
    assert summary["metrics"]["S_MR1"]["mean"] == 0.0 and summary["metrics"]["S_MR1"]["n"] == 2
    assert summary["metrics"]["S_MR"]["by"]["foundation"]["fairness"]["mean"] == 0.5
    assert summary["metrics"]["S_MR"]["by"]["consensus"]["4"]["n"] == 2
    assert summary["dit"]["p_score"] == 40.0
    html = (run / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html


def test_report_without_records_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "no dialogues in this run folder" in result.output
