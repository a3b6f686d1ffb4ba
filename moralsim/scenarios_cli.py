"""`moralsim scenarios ...`: check a pack the way a benchmark curator would."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

scenarios_app = typer.Typer(help="Inspect and validate scenario packs.", no_args_is_help=True)
out = Console()
err = Console(stderr=True, soft_wrap=True)


@scenarios_app.command("check")
def check(
    pack: Annotated[str, typer.Argument(help="Pack folder or registered pack name (e.g. core).")],
    skip_invalid: Annotated[
        bool,
        typer.Option(
            help="Load the valid records and report the invalid ones instead of stopping."
        ),
    ] = False,
    embeddings: Annotated[
        bool, typer.Option(help="Run the embedding checks (near-duplicates, paraphrase distance).")
    ] = True,
    encoder: Annotated[
        str, typer.Option(help="Sentence encoder for the embedding checks.")
    ] = "minilm-l6",
) -> None:
    """Print a pack's counts and fail on leaks, duplicates and bad paraphrases."""
    from scenarios.loaders import ScenarioLoadError
    from scenarios.pack import load_pack
    from scenarios.registry import RegistryError
    from scenarios.validate import validate_pack

    try:
        loaded = load_pack(pack, skip_invalid=skip_invalid)
    except (ScenarioLoadError, RegistryError) as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    embed = None
    if embeddings:
        from agents.models import load_sentence_encoder

        model = load_sentence_encoder(encoder)

        from evaluators.stack import encode_normalized

        def embed(texts):
            return encode_normalized(model, texts)

    report = validate_pack(loaded.pack, embed)
    where = loaded.pack.path or Path(pack)
    out.print(f"[bold]{loaded.pack.name}[/] ({where})", highlight=False)
    totals = Table(show_header=False)
    for key, value in report.totals.items():
        totals.add_row(key, str(value))
    out.print(totals)
    for title, counter in report.counts.items():
        if not counter:
            continue
        table = Table(title=title, show_header=False, min_width=len(title) + 4)
        for key, value in sorted(counter.items()):
            table.add_row(str(key), str(value))
        out.print(table)
    for issue in loaded.issues:
        out.print(f"[yellow]skipped[/] {issue}", highlight=False, soft_wrap=True)
    for warning in report.warnings:
        out.print(f"[yellow]warning[/] {warning}", highlight=False, soft_wrap=True)
    for error in report.errors:
        out.print(f"[red]error[/] {error}", highlight=False, soft_wrap=True)
    if not report.similarity_checked:
        out.print("[yellow]embedding checks skipped[/]")
    # A skipped record is data the pack claims but a run would not use: not a clean pack.
    ok = report.ok and not loaded.issues
    verdict = "[green]pack OK[/]" if ok else f"[red]{len(report.errors)} error(s)[/]"
    out.print(
        f"{verdict}: {len(report.warnings)} warning(s), {len(loaded.issues)} skipped record(s)"
    )
    if not ok:
        raise typer.Exit(1)
