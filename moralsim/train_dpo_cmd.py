"""`moralsim train dpo`: a preset, then a YAML file, then `--set` overrides, then flags.

The same layering, key checks and error lines as `moralsim train sft`; rerunning the same
command after an interruption resumes from the last checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from moralsim.train_sft_cmd import command_config, load_layered_config
from training.dpo_config import PRESETS, DPORunConfig
from training.sft_config import SFTConfigError

console = Console(stderr=True, soft_wrap=True)


def load_dpo_config(
    path: Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    preset_name: str | None = None,
) -> DPORunConfig:
    """The validated DPO config (the same layering and errors as `train sft`)."""
    return load_layered_config(DPORunConfig, PRESETS, path, overrides, preset_name)


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
    cfg = command_config(
        "DPO config keys (YAML or --set key=value)", DPORunConfig, PRESETS,
        config, set_, preset_name, output_dir, overwrite, show_config,
    )  # fmt: skip
    if cfg is None:
        return
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
