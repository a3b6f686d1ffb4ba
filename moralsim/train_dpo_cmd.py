"""`moralsim train dpo`: a preset, then a YAML file, then `--set` overrides, then flags.

The same layering, key checks and error lines as `moralsim train sft`; rerunning the same
command after an interruption resumes from the last checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from moralsim.config import ConfigError, apply_override, build_config, describe_fields
from training.dpo_config import PRESETS, DPORunConfig, preset
from training.sft_config import SFTConfigError

console = Console(stderr=True, soft_wrap=True)


def load_dpo_config(
    path: Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    preset_name: str | None = None,
) -> DPORunConfig:
    """The validated DPO config; errors name the file (if any) and the key."""
    try:
        data: dict[str, Any] = preset(preset_name) if preset_name else {}
    except SFTConfigError as exc:
        raise ConfigError(f"--preset: {exc}") from None
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
            raise ConfigError(f"{path}: a DPO config must be a mapping of keys")
        data.update(loaded or {})
    for assignment in overrides:
        apply_override(data, assignment)
    try:
        return build_config(DPORunConfig, data).validate()
    except (ConfigError, SFTConfigError) as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def train_dpo(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML DPO config.", dir_okay=False)
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override a key: --set beta=0.2 (repeatable)."),
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
    """LoRA DPO of a moral bot on stance preference pairs from a pack (TRL + PEFT, CPU-safe)."""
    if show_config:
        table = Table(title="DPO config keys (YAML or --set key=value)")
        for column in ("key", "default", "meaning"):
            table.add_column(column, no_wrap=column == "key")
        for key, default, help_text in describe_fields(DPORunConfig):
            table.add_row(key, default, help_text)
        Console().print(table)
        return
    sets = list(set_ or [])
    if output_dir is not None:
        sets.append(f"output_dir={output_dir}")
    if overwrite:
        sets.append("overwrite=true")
    try:
        cfg = load_dpo_config(config, sets, preset_name)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if (
        cfg.sft_adapter
        and not (Path(cfg.sft_adapter).expanduser() / "adapter_config.json").is_file()
    ):
        raise _fail(
            f"'sft_adapter': {cfg.sft_adapter} holds no adapter_config.json (train it first "
            "with `moralsim train sft --preset moral-smollm2`, or set sft_adapter=null)"
        )

    from agents.models import ModelError
    from scenarios.loaders import ScenarioLoadError
    from scenarios.registry import RegistryError
    from training.dpo import train_dpo as run_training

    try:
        result = run_training(cfg, say=lambda m: console.print(m, highlight=False))
    except (
        SFTConfigError,
        ModelError,
        ScenarioLoadError,
        RegistryError,
        ValueError,
        OSError,
    ) as exc:
        raise _fail(str(exc)) from None
    console.print(
        f"saved {result.output_dir} ({result.global_step} steps, {result.seconds:.0f} s)",
        highlight=False,
    )
