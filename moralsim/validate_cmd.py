"""`moralsim validate`: run the known-answer bots through every flow and check each instrument.

Each scripted agent (agents/scripted.py) is a normal run in this process, written under
`<output-dir>/validate/<pack>--<scorer>/<agent>/` with its own report; the checks of
`evaluators.validation` are read off their summaries, printed, and written to
validation.json next to them, where a later run's report finds and links them. Exit status:
0 when every instrument separates its known-answer bots, 1 when one does not, 2 on bad input.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from evaluators.scorers import DEFAULT_SCORER

console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def validate(
    pack: Annotated[str, typer.Option(help="Scenario pack: registered name or folder.")] = "core",
    scorer: Annotated[
        str, typer.Option(help="Agreement scorer (the runs' evaluators.agreement_model).")
    ] = DEFAULT_SCORER,
    questions: Annotated[
        int, typer.Option(min=2, help="Questions per MoralDial / static-RIL run.")
    ] = 12,
    dit_orders: Annotated[
        int, typer.Option(min=1, max=48, help="Presentations per DIT dilemma (all dilemmas).")
    ] = 8,
    split: Annotated[
        str,
        typer.Option(
            help="Questions the bots are asked (test: held out from the scorer's training)."
        ),
    ] = "test",
    output_dir: Annotated[str, typer.Option(help="Parent folder of runs.")] = "runs",
    seed: Annotated[int, typer.Option(help="Seed of every run.")] = 0,
) -> None:
    """Check that every instrument separates bots whose behaviour is known."""
    from evaluators.validation import (
        AGENT_FLOWS,
        VALIDATION_FILE,
        run_fingerprint,
        validation_dir,
    )
    from moralsim.config import ConfigError, load_config
    from scenarios.loaders import ScenarioLoadError
    from scenarios.pack import load_pack
    from scenarios.registry import RegistryError

    try:
        loaded = load_pack(pack).pack
    except (ScenarioLoadError, RegistryError, OSError, ValueError) as exc:
        raise _fail(f"--pack: {exc}") from None
    if not loaded.questions_in(split):
        raise _fail(f"--split: pack '{loaded.name}' has no '{split}' questions (try --split all)")
    folder = validation_dir(Path(output_dir), pack, scorer)
    configs = {}
    try:
        for agent, flows in AGENT_FLOWS.items():
            if "dit" in flows and not loaded.dilemmas:
                continue
            sets = _settings(agent, flows, pack, scorer, questions, dit_orders, folder, seed, split)
            configs[agent] = load_config(None, sets)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    prints = run_fingerprint(pack, scorer, progress=lambda m: console.print(m, highlight=False))
    if isinstance(prints, str):
        raise _fail(prints)
    (folder / VALIDATION_FILE).unlink(missing_ok=True)  # an interrupted rerun leaves no verdict
    summaries = _run_all(configs, folder)
    skipped = frozenset(AGENT_FLOWS) - frozenset(configs)
    _finish(folder, pack, scorer, summaries, skipped, prints)


def _settings(
    agent: str,
    flows: tuple[str, ...],
    pack: str,
    scorer: str,
    questions: int,
    dit_orders: int,
    folder: Path,
    seed: int,
    split: str = "test",
) -> list[str]:
    return [
        f"name={agent}",
        f"output_dir={folder}",
        f"seed={seed}",
        f"num_dialogues={questions}",
        f"flows=[{', '.join(flows)}]",
        f"bot.agent=scripted:{agent}",
        f"bot.model={pack}",
        f"scenarios.pack={pack}",
        f"scenarios.split={split}",
        f"evaluators.agreement_model={scorer}",
        "runtime.ray=false",
        f"probes.sage.questions={min(5, questions)}",
        f"probes.prudence.questions={questions}",
        "probes.dit.dilemmas=0",
        f"probes.dit.orders={dit_orders}",
        "probes.dit.mode=likelihood",
    ]


def _run_all(configs: dict, folder: Path) -> dict[str, dict]:
    """Each agent's run, from scratch (a validation is a measurement, never resumed)."""
    import json

    from moralsim.config import ConfigError
    from moralsim.run_simulation import simulate

    summaries = {}
    for agent, run in configs.items():
        if (run.run_dir / "config.yaml").is_file():
            shutil.rmtree(run.run_dir)
        console.print(f"validate: {agent} ({', '.join(run.flows)})", highlight=False)
        try:
            simulate(run, say=lambda m: None)
        except (ConfigError, ValueError, RuntimeError, OSError) as exc:
            # e.g. a pack with no question a probe can use, a model that does not load
            raise _fail(f"validate {agent} on this pack: {exc}") from None
        summary_path = run.run_dir / "summary.json"
        summaries[agent] = json.loads(summary_path.read_text(encoding="utf-8"))
    return summaries


def _finish(
    folder: Path,
    pack: str,
    scorer: str,
    summaries: dict[str, dict],
    skipped: frozenset[str],
    prints: dict[str, str | None],
) -> None:
    from evaluators.validation import check_summaries, validation_record, verdict, write_validation

    results = check_summaries(summaries, skipped)
    table = Table(title=f"known-answer validation: pack {pack}, scorer {scorer}")
    for column in ("instrument", "rule", "values", "result"):
        table.add_column(column)
    for r in results:
        values = ", ".join(
            f"{agent} {'—' if v is None else f'{v:+.3f}'}" for agent, v in r.values.items()
        )
        result = {True: "[green]separates[/]", False: "[red]FAILS[/]", None: "—"}[r.passed]
        if r.skipped:
            result = "skipped (the pack cannot exercise it)"
        elif r.rule != "reported" and r.passed is None:
            result = "[red]not measured[/]"
        table.add_row(r.instrument, r.rule, values, result)
    Console().print(table)
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    runs = {agent: str(folder / agent) for agent in summaries}
    record = validation_record(pack, scorer, date, results, runs, prints)
    path = write_validation(folder, record)
    ok = verdict(results)
    console.print(
        ("every instrument separates its known-answer bots" if ok else
         "[bold red]some instruments do not separate their known-answer bots[/]")
        + f" -> {path}",
        highlight=False,
    )  # fmt: skip
    if not ok:
        raise typer.Exit(1)
