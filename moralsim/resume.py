"""`--resume` continues the run that is on disk, with the settings it was started with.

A run folder keeps its fully resolved `config.yaml`. Resuming reads it back, so `simulate
--name exp1 --resume` alone repeats exp1's settings. Anything the user states again (keys of
`--config`, `--set`, `--seed`, ...) is applied on top of the saved config and the result must
equal it: a resumed run that quietly changed its seed, flows, model or pack would mix two
experiments in one set of records. Where and how the run executes (`runtime.*`: Ray or not,
replicas, batching waits) does not change what is computed, so it may differ, and the stated
value is used.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from moralsim.config import (
    ConfigError,
    RunConfig,
    config_from_dict,
    config_to_dict,
    load_config,
    read_config_data,
)

FREE_SECTIONS: tuple[str, ...] = ("runtime", "name", "output_dir")
"""Settings a resumed run may change: where it runs (and the keys that found the folder)."""
FREE_KEYS: tuple[str, ...] = ("bot.device", "bot.dtype", "evaluators.device", "evaluators.dtype")
"""Also free as written: what they resolve to (runtime.json) must match the first part's,
which the run checks once its models are loaded (`auto` may mean another device elsewhere)."""


def resumable_config(config_path: Path | None, overrides: list[str]) -> RunConfig:
    """The config to resume with: the run folder's saved config.yaml with the stated values on
    top. Raises ConfigError listing every stated setting that changes what the run computes,
    or when the folder holds nothing to resume."""
    stated, source = read_config_data(config_path, overrides)
    defaults = RunConfig()
    run_dir = Path(str(stated.get("output_dir", defaults.output_dir))) / str(
        stated.get("name", defaults.name)
    )
    saved_path = run_dir / "config.yaml"
    if not saved_path.is_file():
        if (run_dir / "dialogues.jsonl").is_file():  # a run of a release that kept no config
            return load_config(config_path, overrides)
        raise ConfigError(
            f"--resume: nothing to resume in {run_dir} (it has no config.yaml); leave out "
            "--resume to start this run, or check --name / --output-dir"
        )
    try:
        saved = load_config(saved_path)
        saved_data = config_to_dict(saved)
        base = Path(config_path).parent if config_path is not None else None
        resumed = config_from_dict(_merged(copy.deepcopy(saved_data), stated), base)
    except ConfigError as exc:
        raise ConfigError(f"cannot resume {run_dir}: {exc}") from None
    differing = [
        key
        for key in _leaf_differences(saved_data, config_to_dict(resumed))
        if key.split(".")[0] not in FREE_SECTIONS and key not in FREE_KEYS
    ]
    if differing:
        shown = "; ".join(
            f"{key}: saved {_show(_at(saved_data, key))}, "
            f"given {_show(_at(config_to_dict(resumed), key))}"
            for key in differing
        )
        raise ConfigError(
            f"--resume continues {run_dir} with the settings in {saved_path}, and {source} "
            f"change them: {shown}. Drop them to resume, or start a new run with another --name"
        )
    return resumed


def _merged(base: dict[str, Any], stated: dict[str, Any]) -> dict[str, Any]:
    """`stated` laid over `base`, section by section (a stated key replaces only itself)."""
    for key, value in stated.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merged(base[key], value)
        else:
            base[key] = value
    return base


def _leaf_differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in dict.fromkeys([*a, *b]):
            out.extend(_leaf_differences(a.get(key), b.get(key), f"{prefix}{key}."))
        return out
    return [] if a == b else [prefix.rstrip(".")]


def _at(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _show(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    text = text.removesuffix("...").strip()
    return text if len(text) <= 60 else text[:57] + "..."
