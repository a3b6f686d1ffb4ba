"""The command line's own behaviour (commands that need no real model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moralsim.cli import app
from moralsim.config import load_config


def run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def test_simulate_validates_saves_the_config_and_says_what_is_missing(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path
) -> None:
    result = run(
        "simulate", "--output-dir", str(tmp_path), "--name", "t1", "--seed", "5",
        "--set", f"bot.model={tiny_causal_lm}",
        "--set", f"evaluators.agreement_model={tiny_classifier}",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "simulation runtime is not built yet" in result.output
    saved = tmp_path / "t1" / "config.yaml"
    config = load_config(saved)
    assert config.seed == 5 and config.bot.model == str(tiny_causal_lm)


def test_simulate_rejects_a_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "run.yaml"
    bad.write_text("bot:\n  modle: x\n")
    result = run("simulate", "--config", str(bad))
    assert result.exit_code == 2
    assert "unknown key 'bot.modle' (did you mean 'bot.model'?)" in result.output


def test_show_config_lists_keys() -> None:
    result = run("simulate", "--show-config")
    assert result.exit_code == 0 and "bot.generation.num_beams" in result.output


@pytest.mark.parametrize(
    ("args", "message"), [(["eval"], "moralsim eval"), (["train", "sft"], "moralsim train sft")]
)
def test_unbuilt_commands_say_so(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2 and f"`{message}` is not available yet" in result.output


def test_models_list_runs() -> None:
    result = run("models", "list")
    assert result.exit_code == 0 and "smollm2-135m-instruct" in result.output
