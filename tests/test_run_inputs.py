"""Bad or risky run inputs are refused with one clear line, before anything is written."""

from __future__ import annotations

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
