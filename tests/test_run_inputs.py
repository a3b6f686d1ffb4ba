"""Bad or risky run inputs are refused with one clear line, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moralsim.config import ConfigError, load_config


def test_a_second_writer_of_a_run_folder_is_refused(tmp_path: Path) -> None:
    from moralsim.run_lock import RunFolderBusy, run_folder_lock

    folder = tmp_path / "run"
    busy = pytest.raises(RunFolderBusy, match=r"being written by another moralsim run")
    with run_folder_lock(folder), busy, run_folder_lock(folder):
        pass
    assert not folder.exists()  # nothing was written: no folder left behind
    with run_folder_lock(folder):
        (folder / "dialogues.jsonl").write_text("")
    assert (folder / "dialogues.jsonl").exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("flows=[]", r"'flows' is empty"),
        ("name=../../x", r"'name' must be a plain folder name"),
        ("name=", r"'name' must be a plain folder name"),
        ("user.pushback_threshold=.nan", r"must be a finite number"),
        ("evaluators.revision_lambda=.inf", r"must be a finite number"),
    ],
)
def test_silent_acceptances_are_refused(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_an_empty_config_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "run.yaml"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match=r"run.yaml: the config file is empty"):
        load_config(empty)


def test_the_version_is_one_option_away() -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("moralsim ")


def _simulate_cli(tmp_path: Path, *sets: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from moralsim.cli import app

    args = ["simulate", "--no-ray", "--name", "r", "--output-dir", str(tmp_path / "runs")]
    for s in sets:
        args += ["--set", s]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_a_wrong_adapter_or_model_kind_is_one_line_before_anything_is_written(
    tmp_path: Path, tiny_causal_lm: Path, tiny_classifier: Path, tiny_encoder: Path
) -> None:
    import json

    models = (
        f"bot.model={tiny_causal_lm}",
        f"evaluators.agreement_model={tiny_classifier}",
        f"evaluators.embedding_model={tiny_encoder}",
        "flows=[moraldial]",
    )
    empty = tmp_path / "empty-adapter"
    empty.mkdir()
    bad = tmp_path / "bad-adapter"
    bad.mkdir()
    (bad / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": "16"}))
    cases = [
        ((f"bot.adapter={empty}",), "bot.adapter: .* has no adapter_config.json"),
        ((f"bot.adapter={bad}",), r"adapter_config.json: field 'r' must be a positive integer"),
        ((f"bot.model={tiny_classifier}",), r"bot.model: .* is a sequence-classifier folder"),
        ((f"evaluators.embedding_model={tiny_causal_lm}",), r"is a causal-lm folder"),
    ]
    import re

    for extra, message in cases:
        code, out = _simulate_cli(tmp_path, *models, *extra)
        assert code == 2 and re.search(message, out), out
        assert "Traceback" not in out
        assert not (tmp_path / "runs" / "r").exists()  # nothing written


def test_scenarios_check_fails_on_an_empty_pack_and_on_skipped_records(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    pack = tmp_path / "empty"
    pack.mkdir()
    (pack / "pack.yaml").write_text("name: empty\nquestions: questions.jsonl\n")
    (pack / "questions.jsonl").write_text("")
    result = CliRunner().invoke(app, ["scenarios", "check", str(pack), "--no-embeddings"])
    assert result.exit_code == 1 and "the pack has no questions" in result.output


def test_a_run_prepares_its_embedded_scorer_before_it_records_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is read from the scorer's folder: an embedded build not made yet (a first
    run) or made by an older moralsim must be built first, or the run keeps no card or an
    outdated one. A folder spec is recorded as it is."""
    import agents.models
    import evaluators.scorer_eval
    from moralsim.config import load_config
    from moralsim.run_simulation import _record_scorer

    prepared: list[str] = []
    monkeypatch.setattr(agents.models, "prepare_model", lambda name, **_: prepared.append(name))
    monkeypatch.setattr(
        evaluators.scorer_eval, "scorer_record", lambda spec, card=None: {"prepared": prepared[:]}
    )
    _record_scorer(load_config(None, ["evaluators.agreement_model=agreement-probe"]), tmp_path)
    assert json.loads((tmp_path / "scorer.json").read_text()) == {"prepared": ["agreement-probe"]}
    _record_scorer(load_config(None, [f"evaluators.agreement_model={tmp_path}"]), tmp_path)
    assert prepared == ["agreement-probe"]
