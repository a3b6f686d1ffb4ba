"""`moralsim train sft`: a preset, then a YAML file, then `--set` overrides, then flags.

Values layer in that order, so `--preset moral-smollm2 --set max_steps=10` is the preset with
one change. The loading reuses the run config's override syntax and type checks, so a bad key
or value is reported the same way as in `moralsim simulate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import yaml
from rich.console import Console
from rich.table import Table

from moralsim.config import ConfigError, apply_override, build_config, describe_fields
from training.sft_config import PRESETS, SFTConfigError, SFTRunConfig, preset_values

console = Console(stderr=True, soft_wrap=True)
T = TypeVar("T")


def load_layered_config(
    cls: type[T],
    presets: dict[str, dict[str, Any]],
    path: Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    preset_name: str | None = None,
) -> T:
    """A training config (SFT, DPO) from a preset, a YAML file and `--set` overrides, in that
    order, validated; errors name the file (if any) and the key (an unknown preset raises
    SFTConfigError, everything else ConfigError)."""
    data: dict[str, Any] = preset_values(presets, preset_name) if preset_name else {}
    source = f"preset {preset_name}" if preset_name else "command-line options"
    if path is not None:
        source = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: not a readable YAML file ({exc})") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: a training config must be a mapping of keys")
        data.update(loaded or {})
    for assignment in overrides:
        apply_override(data, assignment)
    try:
        return build_config(cls, data).validate()  # type: ignore[attr-defined,no-any-return]
    except (ConfigError, SFTConfigError) as exc:
        raise ConfigError(f"{source}: {exc}") from None


def load_sft_config(
    path: Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    preset_name: str | None = None,
) -> SFTRunConfig:
    """The validated SFT config; errors name the file (if any) and the key."""
    return load_layered_config(SFTRunConfig, PRESETS, path, overrides, preset_name)


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def print_config_keys(title: str, cls: type, resolved: Any = None) -> None:
    """Every key with its default and meaning; with a resolved config (a --preset, --config or
    --set was given), also the value that run would use, marked * where it is not the default."""
    table = Table(title=title)
    columns = ("key", "default", *(("value",) if resolved is not None else ()), "meaning")
    for column in columns:
        table.add_column(column, no_wrap=column == "key")
    for key, default, help_text in describe_fields(cls):
        if resolved is None:
            table.add_row(key, default, help_text)
            continue
        value = repr(_dotted(resolved, key))
        table.add_row(key, default, value + (" *" if value != default else ""), help_text)
    Console().print(table)


def _dotted(obj: Any, key: str) -> Any:
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def command_config(
    title: str,
    cls: type[T],
    presets: dict[str, dict[str, Any]],
    config: Path | None,
    set_: list[str] | None,
    preset_name: str | None,
    output_dir: str | None,
    overwrite: bool,
    show_config: bool,
) -> T | None:
    """What `train sft` and `train dpo` share: the flags as overrides, then the layered config;
    with `--show-config`, the keys are printed instead (with the resolved values when anything
    was given) and None comes back. Errors are the usual one line."""
    sets = list(set_ or [])
    if output_dir is not None:
        sets.append(f"output_dir={output_dir}")
    if overwrite:
        sets.append("overwrite=true")
    given = bool(preset_name or config or sets)
    try:
        cfg = load_layered_config(cls, presets, config, sets, preset_name)
    except (ConfigError, SFTConfigError) as exc:
        if not show_config or given:
            raise _fail(str(exc)) from None
        cfg = None
    if show_config:
        print_config_keys(title, cls, cfg if given else None)
        return None
    return cfg


def train_sft(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML SFT config.", dir_okay=False)
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override a key: --set max_steps=50 (repeatable)."),
    ] = None,
    preset_name: Annotated[
        str | None,
        typer.Option("--preset", help=f"Start from a preset: {', '.join(sorted(PRESETS))}."),
    ] = None,
    output_dir: Annotated[
        str | None, typer.Option(help="Adapter folder (overrides the config).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Replace a finished run in the output folder.")
    ] = False,
    show_config: Annotated[bool, typer.Option(help="Print every config key and exit.")] = False,
) -> None:
    """LoRA multi-task SFT of a moral bot on constructed discussions (TRL + PEFT, CPU-safe).

    Rerunning the same command after an interruption resumes from the last checkpoint.
    """
    cfg = command_config(
        "SFT config keys (YAML or --set key=value)", SFTRunConfig, PRESETS,
        config, set_, preset_name, output_dir, overwrite, show_config,
    )  # fmt: skip
    if cfg is None:
        return

    from agents.models import ModelError
    from scenarios.loaders import ScenarioLoadError
    from training.discussions import DiscussionError
    from training.sft import train_sft as run_training
    from training.sft_data import SFTDataError

    def say(message: str) -> None:
        console.print(message, highlight=False)

    try:
        result = run_training(cfg, say=say)
    except (SFTConfigError, SFTDataError, ModelError, ScenarioLoadError, DiscussionError) as exc:
        raise _fail(str(exc)) from None
    best = "n/a" if result.best_dev_loss is None else f"{result.best_dev_loss:.4f}"
    console.print(
        f"saved {result.output_dir} ({result.global_step} steps, best dev loss {best}, "
        f"{result.seconds:.0f} s)",
        highlight=False,
    )
