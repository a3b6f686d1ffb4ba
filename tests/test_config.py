from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from moralsim.config import (
    ConfigError,
    RunConfig,
    config_to_dict,
    describe_fields,
    load_config,
    save_config,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_defaults_are_valid() -> None:
    config = load_config()
    assert config == RunConfig()
    assert config.bot.model == "smollm2-135m-instruct"


def test_yaml_and_overrides_combine(tmp_path: Path) -> None:
    path = write(
        tmp_path, "name: exp1\nseed: 3\nbot:\n  model: ./m\n  generation:\n    num_beams: 10\n"
    )
    config = load_config(path, ["seed=7", "flows=[moraldial]", "bot.adapter=./lora"])
    assert (config.name, config.seed, config.flows) == ("exp1", 7, ["moraldial"])
    assert config.bot.model == "./m" and config.bot.adapter == "./lora"
    assert config.bot.generation.num_beams == 10
    assert config.run_dir == Path("runs/exp1")


def test_saved_config_reloads_identically(tmp_path: Path) -> None:
    config = load_config(None, ["seed=11", "bot.system_prompt=Be kind."])
    saved = save_config(config, tmp_path / "out" / "config.yaml")
    assert load_config(saved) == config
    assert yaml.safe_load(saved.read_text()) == config_to_dict(config)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sed: 1\n", "unknown key 'sed' (did you mean 'seed'?)"),
        ("bot:\n  modle: x\n", "unknown key 'bot.modle' (did you mean 'bot.model'?)"),
        ("seed: one\n", "'seed' must be an integer, got 'one'"),
        ("seed: true\n", "'seed' must be an integer"),
        ("runtime:\n  ray: 1\n", "'runtime.ray' must be true or false"),
        ("flows: moraldial\n", "'flows' must be list of str"),
        ("flows: [1]\n", "'flows[0]' must be a string"),
        ("bot: x\n", "'bot' must be a mapping"),
        ("bot:\n  generation:\n    top_p: 2\n", "'bot.generation.top_p' must be between 0 and 1"),
        ("scenarios:\n  split: val\n", "'scenarios.split' must be one of"),
        ("- a\n- b\n", "must be a mapping of keys"),
        ("seed: [\n", "not valid YAML"),
    ],
)
def test_bad_configs_name_the_key_and_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_bad_override_is_reported() -> None:
    with pytest.raises(ConfigError, match="must look like key=value"):
        load_config(None, ["seed"])
    with pytest.raises(ConfigError, match="'seed' is not a section"):
        load_config(None, ["seed=1", "seed.x=2"])
    with pytest.raises(ConfigError, match="command-line options: 'num_dialogues' must be >= 1"):
        load_config(None, ["num_dialogues=0"])


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_every_field_has_help() -> None:
    rows = describe_fields()
    assert {key for key, _, _ in rows} >= {"seed", "bot.model", "bot.generation.max_new_tokens"}
    assert all(help_text for _, _, help_text in rows)
