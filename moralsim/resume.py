"""`--resume` continues the run that is on disk, with the settings it was started with.

A run folder keeps its fully resolved `config.yaml`. Resuming reads it back, so `simulate
--name exp1 --resume` alone repeats exp1's settings. Anything the user states explicitly (a key
of `--config`, a `--set`, `--seed`, `--num-dialogues`...) must agree with the saved value: a
resumed run that quietly changed its seed, flows, model or pack would mix two experiments in one
set of records. Where and how the run executes (`runtime.*`: Ray or not, replicas, batching
waits) does not change what is computed, so it may differ, and the command line's value is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from moralsim.config import ConfigError, RunConfig, config_to_dict, load_config

FREE_PREFIXES: tuple[str, ...] = ("runtime",)
"""Settings a resumed run may change: where it runs, not what it computes."""

FOLDER_KEYS: frozenset[str] = frozenset({"name", "output_dir"})
"""Keys that choose the folder: equal by construction once the folder is found."""


def stated_keys(config_path: Path | None, overrides: Iterable[str]) -> list[str]:
    """The dotted keys a user set explicitly: every leaf of the --config file, every --set."""
    keys: list[str] = []
    if config_path is not None:
        data = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            keys.extend(_leaves(data))
    keys.extend(a.partition("=")[0].strip() for a in overrides)
    return list(dict.fromkeys(keys))


def _leaves(data: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(_leaves(value, dotted + "."))
        else:
            out.append(dotted)
    return out


def resumed_config(run_dir: Path, given: RunConfig, stated: Iterable[str]) -> RunConfig:
    """The saved config of `run_dir`, with the stated runtime settings; raises ConfigError listing
    every stated key whose value differs from the saved one."""
    saved_path = run_dir / "config.yaml"
    try:
        saved = load_config(saved_path)
    except ConfigError as exc:
        raise ConfigError(f"cannot resume: {exc}") from None
    saved_data, given_data = config_to_dict(saved), config_to_dict(given)
    differing = [
        key
        for key in stated
        if key not in FOLDER_KEYS
        and key.split(".")[0] not in FREE_PREFIXES
        and _value_at(given_data, key) != _value_at(saved_data, key)
    ]
    if differing:
        lines = "; ".join(
            f"{key}: saved {_show(_value_at(saved_data, key))}, "
            f"given {_show(_value_at(given_data, key))}"
            for key in differing
        )
        raise ConfigError(
            f"--resume continues {run_dir} with the settings in {saved_path}, and these differ: "
            f"{lines}. Drop them to resume, or start a new run with another --name"
        )
    if any(key.split(".")[0] in FREE_PREFIXES for key in stated):
        saved = replace(saved, runtime=given.runtime)
    return saved


def _value_at(data: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted key; for a key the saved form spells differently (an earlier flat
    probe key), the deepest section both spell the same way."""
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return node
        node = node[part]
    return node


def _show(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    text = text.removesuffix("...").strip()
    return text if len(text) <= 60 else text[:57] + "..."
