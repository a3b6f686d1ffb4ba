"""`--resume` continues the run on disk with its own settings, and records are never lost,
counted twice or silently mixed (issue 12), on tiny random models in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from moralsim.cli import app
from moralsim.config import ConfigError, load_config
from moralsim.resume import resumable_config
from scenarios.jsonl import read_dialogues, repair_torn_tail
from tests.test_simulate_e2e import tiny_config, write_config

runner = CliRunner()


@pytest.fixture
def models(tiny_causal_lm: Path, tiny_classifier: Path, tiny_encoder: Path) -> dict[str, Path]:
    return {"bot": tiny_causal_lm, "agreement": tiny_classifier, "encoder": tiny_encoder}


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["simulate", "--no-ray", *args])
    return result.exit_code, result.output


@pytest.fixture
def finished_run(models: dict[str, Path], tmp_path: Path) -> Path:
    """A finished 4-dialogue run; its folder."""
    config = write_config(tmp_path, tiny_config(tmp_path, models, "exp1", num_dialogues=4))
    code, out = _run("--config", str(config))
    assert code == 0, out
    return tmp_path / "runs" / "exp1"


def _drop_last_record(records: Path) -> None:
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    records.write_text("".join(lines[:-1]), encoding="utf-8")


# --------------------------------------------------------------------------- resume settings


def test_a_resumed_config_is_the_saved_one_with_the_stated_runtime(tmp_path: Path) -> None:
    from moralsim.config import save_config

    folder = ["name=r", f"output_dir={tmp_path}"]
    saved = load_config(None, [*folder, "seed=3", "num_dialogues=7", "runtime.bot_replicas=2"])
    save_config(saved, tmp_path / "r" / "config.yaml")
    run = resumable_config(None, [*folder, "runtime.ray=false"])
    # only the stated runtime key changes; the saved replicas stay
    assert (run.seed, run.num_dialogues, run.runtime.ray, run.runtime.bot_replicas) == (
        3, 7, False, 2,
    )  # fmt: skip
    with pytest.raises(ConfigError) as info:
        resumable_config(None, [*folder, "seed=4", "flows=[sage]"])
    message = str(info.value)
    assert "seed: saved 3, given 4" in message
    assert "flows: saved [moraldial, sage, dit, prudence], given [sage]" in message
    assert "name:" not in message and "runtime" not in message
    with pytest.raises(ConfigError, match=r"nothing to resume in .*other"):
        resumable_config(None, ["name=other", f"output_dir={tmp_path}"])


def test_a_stated_value_equal_to_the_saved_one_is_accepted(tmp_path: Path) -> None:
    from moralsim.config import save_config

    folder = ["name=r", f"output_dir={tmp_path}"]
    save_config(load_config(None, [*folder, "user.policy=llm", "user.phraser_model=m"]),
                tmp_path / "r" / "config.yaml")  # fmt: skip
    # stated alone, user.policy=llm would need its phraser_model: the saved one completes it
    run = resumable_config(None, [*folder, "user.policy=llm"])
    assert run.user.phraser_model == "m"


def test_resume_alone_repeats_the_runs_settings(finished_run: Path) -> None:
    records = finished_run / "dialogues.jsonl"
    _drop_last_record(records)
    saved = (finished_run / "config.yaml").read_text()
    code, out = _run("--name", "exp1", "--output-dir", str(finished_run.parent), "--resume")
    assert code == 0, out
    assert "1 dialogues (3 already done)" in out
    assert (finished_run / "config.yaml").read_text() == saved  # not the defaults
    ids = [d.id for d in read_dialogues(records)]
    assert len(ids) == 4 == len(set(ids))


def test_resume_with_a_differing_setting_is_refused_and_writes_nothing(
    finished_run: Path,
) -> None:
    records = finished_run / "dialogues.jsonl"
    _drop_last_record(records)
    before = records.read_bytes()
    code, out = _run(
        "--name", "exp1", "--output-dir", str(finished_run.parent), "--resume", "--seed", "5",
        "--set", "bot.generation.max_new_tokens=9",
    )  # fmt: skip
    assert code == 2
    assert (
        "seed: saved 3, given 5" in out and "bot.generation.max_new_tokens: saved 6, given 9" in out
    )
    assert "Traceback" not in out
    assert records.read_bytes() == before


def test_a_complete_last_record_without_a_newline_is_kept(finished_run: Path) -> None:
    records = finished_run / "dialogues.jsonl"
    _drop_last_record(records)
    records.write_bytes(records.read_bytes().rstrip(b"\n"))  # 3 whole records, no final newline
    code, out = _run("--name", "exp1", "--output-dir", str(finished_run.parent), "--resume")
    assert code == 0, out
    assert "1 dialogues (3 already done)" in out
    ids = [d.id for d in read_dialogues(records)]
    assert len(ids) == 4 == len(set(ids))


def test_repeated_records_are_reported_and_counted_once(finished_run: Path) -> None:
    records = finished_run / "dialogues.jsonl"
    summary = json.loads((finished_run / "summary.json").read_text())
    first = records.read_text().splitlines(keepends=True)[0]
    with records.open("a") as fh:
        fh.write(first)
    result = runner.invoke(app, ["report", str(finished_run)])
    assert result.exit_code == 0, result.output
    assert "1 repeated dialogue record(s) ignored" in result.output
    again = json.loads((finished_run / "summary.json").read_text())
    assert again["metrics"] == summary["metrics"] and again["dialogues"] == summary["dialogues"]
    code, out = _run("--name", "exp1", "--output-dir", str(finished_run.parent), "--resume")
    assert code == 0 and "1 repeated dialogue record(s) ignored" in out
    assert "0 dialogues (4 already done)" in out


def test_a_corrupt_middle_record_stops_resume_with_one_line(finished_run: Path) -> None:
    records = finished_run / "dialogues.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    records.write_text(lines[0] + "{not json}\n" + "".join(lines[1:]))
    before = records.read_bytes()
    code, out = _run("--name", "exp1", "--output-dir", str(finished_run.parent), "--resume")
    assert code == 2 and "dialogues.jsonl:2: corrupt JSON" in out and "Traceback" not in out
    assert records.read_bytes() == before


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("probes", r"probes.json: not valid JSON"),
        ("empty", r"dialogues.jsonl: the file is empty"),
    ],
)
def test_report_of_a_damaged_folder_is_one_line(
    finished_run: Path, damage: str, message: str
) -> None:
    if damage == "probes":
        (finished_run / "probes.json").write_text('{"sage": ')
    else:
        (finished_run / "dialogues.jsonl").write_text("")
    result = runner.invoke(app, ["report", str(finished_run)])
    assert result.exit_code == 2
    assert message.replace("\\", "") in result.output and "Traceback" not in result.output


def test_repair_keeps_a_whole_last_record_and_cuts_a_torn_one(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    assert repair_torn_tail(path) == 0
    assert path.read_text() == '{"a": 1}\n{"a": 2}\n'
    path.write_text('{"a": 1}\n{"a": 2')
    assert repair_torn_tail(path) == len('{"a": 2')
    assert path.read_text() == '{"a": 1}\n'


def test_saved_configs_round_trip_through_yaml(finished_run: Path) -> None:
    data = yaml.safe_load((finished_run / "config.yaml").read_text())
    assert data["seed"] == 3 and data["num_dialogues"] == 4


def test_the_run_log_has_a_line_per_phase(finished_run: Path) -> None:
    log = (finished_run / "run.log").read_text()
    assert "run exp1: 4 questions, flows moraldial" in log
    assert "moraldial: done in" in log


def test_a_damaged_probes_file_is_rebuilt_on_resume(finished_run: Path) -> None:
    (finished_run / "probes.json").write_text('{"sage": ')
    code, out = _run("--name", "exp1", "--output-dir", str(finished_run.parent), "--resume")
    assert code == 0, out
    assert "probes.json: not valid JSON" in out and "rewritten from the records" in out
    json.loads((finished_run / "probes.json").read_text())
