"""`moralsim train discussions`: build the MoralDial training discussions, show and save them.

The body lives here, not in cli.py, so the command line stays a list of thin registrations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

NO_PACK = "none"


def _fail(console: Console, message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def train_discussions(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for the dataset and stats.json.")
    ] = Path("data/discussions"),
    pack: Annotated[
        str, typer.Option(help=f"Scenario pack (name or folder); '{NO_PACK}' for no pack.")
    ] = "core",
    flows: Annotated[
        str, typer.Option(help="Comma-separated flows: MA,ME,MR,RIL,PT,GD.")
    ] = "MA,ME,MR,RIL,PT,GD",
    mic: Annotated[
        list[Path] | None, typer.Option(help="MIC CSV file (repeatable).", dir_okay=False)
    ] = None,
    social_chem: Annotated[
        list[Path] | None,
        typer.Option(
            help="Social-Chem-101 TSV/CSV file, used for PT (repeatable).", dir_okay=False
        ),
    ] = None,
    gd: Annotated[
        list[Path] | None,
        typer.Option(
            help="General-dialogue JSONL file, messages format (repeatable).", dir_okay=False
        ),
    ] = None,
    verdicts: Annotated[
        int,
        typer.Option(
            help="Verdict answers from the pack's written corpus added as MA rows "
            "(training.verdict_answers)."
        ),
    ] = 0,
    seed: Annotated[int, typer.Option(help="Seed for phrases, pairings and PT forms.")] = 0,
    max_per_flow: Annotated[
        int | None, typer.Option(help="Most rows per flow and split (random subset).")
    ] = None,
    pt_situation_prob: Annotated[
        float, typer.Option(help="Chance a PT statement keeps its situation clause.")
    ] = 0.5,
    pt_swap_prob: Annotated[
        float, typer.Option(help="Chance a PT statement puts the situation first.")
    ] = 0.5,
) -> None:
    """Build MA/ME/MR/RIL/PT/GD training discussions, print per-flow counts, save them."""
    from scenarios.loaders import ScenarioLoadError
    from scenarios.registry import RegistryError
    from training.discussions import (
        BuildReport,
        DiscussionConfig,
        DiscussionError,
        build_discussions,
        discussion_stats,
        save_discussions,
        stats_table,
    )

    console = Console(stderr=True, soft_wrap=True)
    try:
        config = DiscussionConfig(
            flows=tuple(flows.split(",")),
            pack=None if pack.lower() == NO_PACK else pack,
            mic_files=tuple(str(p) for p in mic or ()),
            social_chem_files=tuple(str(p) for p in social_chem or ()),
            gd_files=tuple(str(p) for p in gd or ()),
            verdicts=verdicts,
            seed=seed,
            max_per_flow=max_per_flow,
            pt_include_situation_prob=pt_situation_prob,
            pt_swap_prob=pt_swap_prob,
        )
        report = BuildReport()
        dataset = build_discussions(config, report=report)
    except (DiscussionError, ScenarioLoadError, RegistryError) as exc:
        raise _fail(console, str(exc)) from None
    stats = discussion_stats(dataset)
    Console(width=120).print(stats_table(stats))
    for title, counts in (
        ("left out", report.dropped),
        ("PT statements", report.pt_statements),
        ("capped (rows removed)", report.capped),
    ):
        for reason, n in sorted(counts.items()):
            console.print(f"{title}: {reason}: {n}", highlight=False)
    path = save_discussions(dataset, out, report=report, config=config)
    console.print(f"saved {out} (load with datasets.load_from_disk) and {path}", highlight=False)
