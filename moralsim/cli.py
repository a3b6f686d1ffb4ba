"""The `moralsim` command line. Commands stay thin: they parse, then call the packages."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from moralsim.config import ConfigError, RunConfig, describe_fields, load_config
from moralsim.scenarios_cli import scenarios_app
from moralsim.scorer_cmd import scorer_app
from moralsim.serve_cmd import serve
from moralsim.train_data_cmd import train_discussions
from moralsim.train_dpo_cmd import train_dpo
from moralsim.train_sft_cmd import train_sft
from moralsim.validate_cmd import validate

app = typer.Typer(
    name="moralsim",
    help="Train and evaluate moral dialogue systems by simulation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="List and prepare the embedded offline models.", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(scenarios_app, name="scenarios")
app.add_typer(scorer_app, name="scorer")
app.command("serve")(serve)
app.command("validate")(validate)

console = Console(stderr=True, soft_wrap=True)


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"moralsim {version('moralsim')}")
        except PackageNotFoundError:
            print("moralsim (not installed as a package)")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Train and evaluate moral dialogue systems by simulation."""


ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML run config.", dir_okay=False)
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Override a config key: --set bot.model=./my-model (repeatable)."
    ),
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def _not_yet(command: str, issue: str) -> typer.Exit:
    return _fail(f"`moralsim {command}` is not available yet: it arrives with {issue}.")


def _run_config(
    config: Path | None,
    overrides: list[str] | None,
    seed: int | None = None,
    name: str | None = None,
    output_dir: str | None = None,
    num_dialogues: int | None = None,
) -> RunConfig:
    sets = list(overrides or [])
    for key, value in (
        ("seed", seed),
        ("name", name),
        ("output_dir", output_dir),
        ("num_dialogues", num_dialogues),
    ):
        if value is not None:
            sets.append(f"{key}={value}")
    try:
        return load_config(config, sets)
    except ConfigError as exc:
        raise _fail(str(exc)) from None


def _print_config_fields() -> None:
    table = Table(title="run config keys (YAML or --set key=value)")
    table.add_column("key", no_wrap=True)
    table.add_column("default")
    table.add_column("meaning")
    for key, default, help_text in describe_fields(RunConfig):
        table.add_row(key, default, help_text)
    Console().print(table)
    from scenarios.flow_api import flows_in_order

    names = ", ".join(f.name for f in flows_in_order())
    Console().print(
        f"registered flows (flows: [...]): {names}; a plugin adds more", highlight=False
    )


@app.command()
def simulate(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option(help="Seed (overrides the config).")] = None,
    name: Annotated[str | None, typer.Option(help="Run name (overrides the config).")] = None,
    output_dir: Annotated[str | None, typer.Option(help="Parent folder of runs.")] = None,
    num_dialogues: Annotated[int | None, typer.Option(help="Dialogues to simulate.")] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue a run; finished dialogues are kept.")
    ] = False,
    show_config: Annotated[bool, typer.Option(help="Print every config key and exit.")] = False,
    no_ray: Annotated[
        bool, typer.Option("--no-ray", help="Run in this process (same as runtime.ray=false).")
    ] = False,
) -> None:
    """Simulate users discussing moral questions with a bot, scoring every bot turn live."""
    if show_config:
        _print_config_fields()
        return
    sets = [*(set_ or []), *(["runtime.ray=false"] if no_ray else [])]
    _simulate(_run_config(config, sets, seed, name, output_dir, num_dialogues), resume)


def _simulate(run: RunConfig, resume: bool) -> None:
    from agents.models import ModelError, resolve_model
    from evaluators.scorers import registered_scorer
    from moralsim.backend_specs import user_policy
    from moralsim.run_simulation import simulate as run_simulation
    from simulators.ray_runtime import RuntimeFailure

    _check_plan(run)
    try:
        scripted = run.bot.agent.startswith("scripted:")  # its model names a pack, not weights
        for key, spec in (
            ("bot.model", None if scripted else run.bot.model),
            ("evaluators.embedding_model", run.evaluators.embedding_model),
            (
                "evaluators.agreement_model",
                None
                if registered_scorer(run.evaluators.agreement_model)
                else run.evaluators.agreement_model,
            ),
            (
                "user.phraser_model",
                run.user.phraser_model if user_policy(run) != run.user.policy else None,
            ),
        ):
            if spec is None:
                continue
            try:
                resolve_model(spec, progress=lambda m: console.print(m, highlight=False))
            except ModelError as exc:
                raise _fail(f"{key}: {exc}") from None
        result = run_simulation(run, resume=resume, say=lambda m: console.print(m, highlight=False))
    except (ConfigError, RuntimeFailure) as exc:
        raise _fail(str(exc)) from None
    _print_summary(result.run_dir)
    console.print(
        f"{result.dialogues_written} dialogues ({result.skipped} already done), "
        f"{result.bot_turns} bot turns in {result.seconds:.0f} s ({result.runtime}"
        + (f", {result.retried} dialogues re-run after an actor failure" if result.retried else "")
        + f") -> {result.run_dir}/report.html",
        highlight=False,
    )


def _check_plan(run: RunConfig) -> None:
    """What can be checked before any model loads or any file is written: the pack loads, the
    flows can run on it, the agent is registered, the output folder can be written."""
    from moralsim.run_simulation import check_flows
    from scenarios.flow_api import flows_in_order
    from scenarios.pack import load_pack
    from scenarios.registry import AGENTS, RegistryError

    try:
        pack = load_pack(run.scenarios.pack).pack
    except (RegistryError, OSError, ValueError, KeyError) as exc:
        raise _fail(f"scenarios.pack: {exc}") from None
    try:
        check_flows(run, flows_in_order(run.flows), pack)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if run.bot.agent not in AGENTS and ":" not in run.bot.agent:
        raise _fail(
            f"bot.agent: unknown agent {run.bot.agent!r}; registered: {', '.join(AGENTS.names())}"
        )
    parent = Path(run.output_dir)
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise _fail(f"output_dir: {parent} is not writable")


def _print_summary(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    table = Table(title=f"{summary['run'].get('name')}: metrics (x100, 95% CI)")
    for column in ("metric", "mean", "95% CI", "n"):
        table.add_column(column, no_wrap=True)

    def row(label: str, entry: Any, scale: float = 100.0) -> None:
        if not isinstance(entry, dict) or not entry.get("n"):
            return
        mean, ci = entry.get("mean"), entry.get("ci95")
        table.add_row(
            label,
            "—" if mean is None else f"{scale * mean:+.1f}",
            "—" if not ci else f"[{scale * ci[0]:+.1f}, {scale * ci[1]:+.1f}]",
            str(entry["n"]),
        )

    from scenarios.flow_api import flows_in_order

    flows = flows_in_order()
    for flow in flows:
        entry = summary.get(flow.key())
        if isinstance(entry, dict):
            for r in flow.rows(entry):
                row(r.label, r.estimate, r.scale)
    Console().print(table)
    for flow in flows:
        entry = summary.get(flow.key())
        for note in flow.notes(entry) if isinstance(entry, dict) else ():
            prefix = "[bold yellow]warning:[/] " if note.warning else ""
            console.print(prefix + note.text, highlight=False)
    _print_validation(summary.get("validation"))
    _print_scorer(summary.get("scorer"))


def _print_validation(validation: Any) -> None:
    """Whether the instruments of this pack and scorer passed their known-answer checks."""
    if not isinstance(validation, dict):
        return
    if validation.get("stale"):
        console.print(
            f"[bold yellow]warning:[/] the known-answer validation in {validation.get('path')} is "
            "of another build of this pack or scorer; rerun `moralsim validate`",
            highlight=False,
        )
    elif validation.get("passed"):
        console.print(f"instruments validated {validation.get('date')}", highlight=False)
    else:
        failed = ", ".join(validation.get("failed") or [])
        console.print(
            f"[bold yellow]warning:[/] known-answer validation ({validation.get('date')}) "
            f"failed for: {failed}; see {validation.get('path')}",
            highlight=False,
        )


def _print_scorer(scorer: Any) -> None:
    """The scorer line under the metrics, and its warning when its validity is in doubt."""
    if not isinstance(scorer, dict):
        return
    keys = scorer.get("key_figures") or {}

    def pct(value: Any) -> str:
        return "not measured" if value is None else f"{100 * value:.1f}%"

    console.print(
        f"agreement scorer: {scorer.get('model')} ({scorer.get('kind')}); real-data pairwise "
        f"accuracy {pct(keys.get('real_data_pairwise_accuracy'))}, in-domain macro-F1 "
        f"{pct(keys.get('in_domain_macro_f1'))}",
        highlight=False,
    )
    if scorer.get("warning"):
        console.print(f"[bold yellow]warning:[/] {scorer['warning']}", highlight=False)


train_app = typer.Typer(help="Train moral bots and agreement scorers.", no_args_is_help=True)
app.add_typer(train_app, name="train")
train_app.command("discussions")(train_discussions)


train_app.command("sft")(train_sft)
train_app.command("dpo")(train_dpo)


def _scorer_data(
    pack: str, mic: list[Path] | None, social_chem: list[Path] | None, seed: int
) -> tuple[dict[str, list[Any]], Any]:
    """Labelled examples per split for `train scorer`, and the pack they came from (None for
    MIC data): MIC rows with their neutral augmentations, or the pack's examples with any
    Social-Chem examples added."""
    from scenarios.agreement_examples import augment_agreement_examples
    from scenarios.loaders import load_mic
    from scenarios.pack import load_pack

    if mic:
        rows = [r.to_example(f"mic-{path.stem}") for path in mic for r in load_mic(path)[0]]
        examples = augment_agreement_examples(rows, seed)
        splits = {s: [e for e in examples if e.split == s] for s in ("train", "dev", "test")}
        console.print(
            f"{len(rows)} MIC rows + {len(examples) - len(rows)} neutral augmentations "
            f"(train {len(splits['train'])}, dev {len(splits['dev'])}, "
            f"test {len(splits['test'])})",
            highlight=False,
        )
        return splits, None
    data = load_pack(pack).pack
    splits = {s: data.agreement_in(s) for s in ("train", "dev", "test")}
    if social_chem:
        from scenarios.loaders import load_social_chem
        from scenarios.social_chem_agreement import social_chem_examples

        held = [q.rot.text for q in data.questions if q.split != "train"]
        rows = [r for path in social_chem for r in load_social_chem(path)[0]]
        extra = social_chem_examples(rows, held, seed)
        for split in ("train", "dev"):
            splits[split] += [e for e in extra if e.split == split]
        console.print(f"{len(extra)} Social-Chem examples added", highlight=False)
    return splits, data


@train_app.command("scorer")
def train_scorer(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the trained scorer.")],
    pack: Annotated[str, typer.Option(help="Pack whose agreement examples to use.")] = "core",
    mic: Annotated[
        list[Path] | None,
        typer.Option(help="MIC-format CSV(s) to train on instead of the pack (repeatable)."),
    ] = None,
    social_chem: Annotated[
        list[Path] | None,
        typer.Option(
            help="Social-Chem-101 CSV/TSV(s): add question/answer examples built from its "
            "actions and judgments to the pack's (repeatable)."
        ),
    ] = None,
    base_model: Annotated[
        str | None, typer.Option(help="Encoder folder or embedded name [recipe: minilm-l6].")
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Passes over the training split.")] = None,
    max_length: Annotated[int | None, typer.Option(help="Tokens per (QA, RoT) pair.")] = None,
    class_balance: Annotated[
        bool, typer.Option(help="Weight the loss by inverse label frequency.")
    ] = False,
    learning_rate: Annotated[float | None, typer.Option(help="Peak learning rate.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Examples per step.")] = None,
    frozen_layers: Annotated[
        int | None, typer.Option(help="Lowest encoder layers kept fixed (faster on CPU).")
    ] = None,
    independent: Annotated[
        bool,
        typer.Option(
            help="Leave out the pack's reference answers (a moral bot's SFT targets): a judge "
            "for comparing bots trained on them."
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
) -> None:
    """Fine-tune an encoder as the agree/neutral/disagree answer-RoT classifier.

    On a pack this is the embedded default's recipe (its sources, repeats, caps and frozen
    layers) unless an option changes it, so `--output my-scorer` reproduces agreement-minilm and
    `--independent` gives the same judge without the pack's reference answers. MIC data gets the
    plain recipe (every example, 3 epochs).
    """
    from scenarios.loaders import ScenarioLoadError
    from training.scorer import describe_recipe, scorer_recipe, train_agreement_classifier

    if mic and independent:
        raise _fail("--independent leaves out a pack's reference answers; MIC data has none")
    try:
        splits, data = _scorer_data(pack, mic, social_chem, seed)
    except ScenarioLoadError as exc:
        raise _fail(str(exc)) from None
    if not splits["train"] or not splits["dev"]:
        raise _fail(
            "the scorer needs train and dev examples; the data has "
            + ", ".join(f"{k} {len(v)}" for k, v in splits.items())
        )
    cfg = scorer_recipe(
        pack_recipe=not mic,
        extra_sources=("social-chem",) if social_chem else (),
        independent=independent,
        base_model=base_model,
        epochs=epochs,
        learning_rate=learning_rate,
        batch_size=batch_size,
        seed=seed,
        max_length=max_length,
        frozen_layers=frozen_layers,
        class_balance=class_balance or None,
    )
    console.print(f"recipe: {describe_recipe(cfg)}", highlight=False)
    result = train_agreement_classifier(
        splits["train"],
        splits["dev"],
        splits["test"],
        output,
        cfg,
        progress=lambda m: console.print(m, highlight=False),
    )
    line = f"dev accuracy {result.dev.accuracy:.3f}, macro-F1 {result.dev.macro_f1:.3f}"
    if result.test:
        line += f"; test accuracy {result.test.accuracy:.3f}, macro-F1 {result.test.macro_f1:.3f}"
    console.print(f"saved {output} (best epoch {result.best_epoch}, {result.seconds:.0f} s)")
    console.print(line)
    if data is not None:
        from training.scorer import write_pack_card

        card = write_pack_card(output, data, str(output))
        console.print(
            f"scorer card: {output / 'scorer_card.json'} (verdict: "
            f"{card['key_figures'].get('verdict')}); measure it on real text with `moralsim "
            f"scorer eval {output} --moral-stories FILE`",
            highlight=False,
        )


@app.command()
def chat(
    model: Annotated[str, typer.Option(help="Bot: local folder or embedded name.")] = (
        "smollm2-135m-instruct"
    ),
    adapter: Annotated[str | None, typer.Option(help="PEFT LoRA adapter folder.")] = None,
    merge: Annotated[bool, typer.Option(help="Merge the adapter into the weights.")] = False,
    endpoint: Annotated[
        str | None, typer.Option(help="Chat with an OpenAI-compatible server instead (base URL).")
    ] = None,
    endpoint_model: Annotated[str, typer.Option(help="Model name on the endpoint.")] = "default",
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the endpoint's API key.")
    ] = None,
    system_prompt: Annotated[str | None, typer.Option(help="Instruction for the bot.")] = None,
    max_new_tokens: Annotated[int, typer.Option(help="Longest reply in tokens.")] = 60,
    agreement_model: Annotated[str, typer.Option(help="Agreement scorer.")] = "agreement-minilm",
    embedding_model: Annotated[str, typer.Option(help="Sentence encoder.")] = "minilm-l6",
    scores: Annotated[bool, typer.Option(help="Show live scores after every reply.")] = True,
    seed: Annotated[int, typer.Option(help="Seed for decoding and phrases.")] = 0,
) -> None:
    """Talk to a bot in the terminal, each reply scored live against a RoT (/help inside)."""
    from agents.base import GenerationSettings
    from agents.models import ModelError, cache_dir
    from moralsim.repl import ChatSession, run_repl

    settings = GenerationSettings(max_new_tokens=max_new_tokens, seed=seed)
    try:
        if endpoint:
            from agents.openai_client import OpenAIChatAgent

            agent = OpenAIChatAgent(
                endpoint, endpoint_model, api_key_env=api_key_env, generation=settings,
                system_prompt=system_prompt,
            )  # fmt: skip
        else:
            from agents.hf import TransformersAgent

            agent = TransformersAgent(
                model,
                adapter=adapter,
                merge=merge,
                system_prompt=system_prompt,
                generation=settings,
            )
    except ModelError as exc:
        raise _fail(str(exc)) from None
    evaluators, unavailable, scorer_info = None, "", None
    if scores:
        from evaluators.scorer_eval import scorer_record, scorer_summary
        from evaluators.stack import load_evaluators

        try:
            evaluators = load_evaluators(agreement_model, embedding_model)
            scorer_info = scorer_summary(scorer_record(agreement_model))
        except (ModelError, OSError, ValueError) as exc:
            unavailable = f"scorer unavailable: {exc}"
    else:
        unavailable = "scores off (--no-scores)"
    session = ChatSession(agent, evaluators, unavailable=unavailable, seed=seed, scorer=scorer_info)
    run_repl(session, history_file=cache_dir() / "chat_history")


@app.command(name="eval")
def eval_(
    model: Annotated[
        str, typer.Option(help="Bot: local model folder or embedded name.")
    ] = "smollm2-135m-instruct",
    adapter: Annotated[str | None, typer.Option(help="PEFT LoRA adapter folder.")] = None,
    probes: Annotated[
        str,
        typer.Option(
            help="Comma-separated flows to run (default: the flows registered as probes, "
            "which need no simulated user)."
        ),
    ] = "",
    config: ConfigOpt = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option(help="Seed (overrides the config).")] = None,
    name: Annotated[str, typer.Option(help="Run name.")] = "eval",
    output_dir: Annotated[str | None, typer.Option(help="Parent folder of runs.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted eval.")] = False,
    no_ray: Annotated[
        bool, typer.Option("--no-ray", help="Run in this process (same as runtime.ray=false).")
    ] = False,
) -> None:
    """Probe a bot without interactive dialogues (the flows registered as probes).

    The same run folder, config and report as `simulate`, with the probe flows only.
    """
    from scenarios.flow_api import flows_in_order

    chosen = [p.strip() for p in probes.split(",") if p.strip()] or [
        f.name for f in flows_in_order() if f.probe
    ]
    sets = [f"bot.model={model}", f"flows=[{', '.join(chosen)}]"]
    if adapter:
        sets.append(f"bot.adapter={adapter}")
    if no_ray:
        sets.append("runtime.ray=false")
    _simulate(_run_config(config, [*sets, *(set_ or [])], seed, name, output_dir), resume)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (with dialogues.jsonl).")],
) -> None:
    """Rebuild summary.json and report.html of a run folder from its records."""
    from evaluators.report import write_report
    from scenarios.jsonl import JsonlError
    from scenarios.plugins import PluginError

    try:
        summary, html = write_report(run_dir)
    except (FileNotFoundError, JsonlError, PluginError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {summary} and {html}", highlight=False)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="First run folder (e.g. the base bot).")],
    run_b: Annotated[Path, typer.Argument(help="Second run folder (e.g. the moral bot).")],
) -> None:
    """Two runs side by side: each metric with its 95% CI, and the difference B - A."""
    from evaluators.compare import compare_runs
    from scenarios.jsonl import JsonlError
    from scenarios.plugins import PluginError

    try:
        rows = compare_runs(run_a, run_b)
    except (FileNotFoundError, JsonlError, PluginError) as exc:
        raise _fail(str(exc)) from None

    def cell(est: Any) -> str:
        if est.mean is None:
            return "—"
        ci = "" if est.ci_low is None else f" [{100 * est.ci_low:+.1f}, {100 * est.ci_high:+.1f}]"
        return f"{100 * est.mean:+.1f}{ci} (n={est.n})"

    table = Table(title="x100, 95% CI; difference with a Welch t interval")
    same = run_a.name == run_b.name
    for column in (
        "metric",
        str(run_a) if same else run_a.name,
        str(run_b) if same else run_b.name,
        "B - A",
    ):
        table.add_column(column, no_wrap=True)
    for r in rows:
        if r.diff is None:
            diff = "—"
        elif r.diff_low is None:
            diff = f"{100 * r.diff:+.1f}"
        else:
            diff = f"{100 * r.diff:+.1f} [{100 * r.diff_low:+.1f}, {100 * r.diff_high:+.1f}]"
        table.add_row(r.metric, cell(r.a), cell(r.b), diff)
    Console(width=200).print(table)


@models_app.command("list")
def models_list() -> None:
    """Show the embedded models, where they live and whether they are prepared."""
    from agents.models import MARKER, ModelError, cache_dir, embedded_models

    table = Table(title=f"embedded models (cache: {cache_dir()})")
    table.add_column("name", no_wrap=True)
    for column in ("kind", "package", "status", "path"):
        table.add_column(column, overflow="fold")
    for model in embedded_models().values():
        version = model.package_version()
        package = f"{model.package}=={version}" if version else f"{model.package} (missing)"
        try:
            source = model.locate()
        except ModelError:
            table.add_row(model.name, model.kind, package, f"install: {model.install_hint()}", "")
            continue
        if model.build is None:
            table.add_row(model.name, model.kind, package, "ready (in package)", str(source))
            continue
        target = cache_dir() / "models" / model.name
        status = (
            "prepared" if (target / MARKER).is_file() else "not prepared (moralsim models prepare)"
        )
        metrics_file = target / "metrics.json"
        if status == "prepared" and metrics_file.is_file():
            metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
            for split in ("dev", "test"):
                if metrics.get(split):
                    status += (
                        f"\n{split}: acc {metrics[split]['accuracy']:.3f}, "
                        f"macro-F1 {metrics[split]['macro_f1']:.3f}"
                    )
        table.add_row(model.name, model.kind, package, status, str(target))
    Console().print(table)


@models_app.command("prepare")
def models_prepare(
    names: Annotated[
        list[str] | None, typer.Argument(help="Models to prepare (default: all embedded).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the cache is valid.")] = False,
) -> None:
    """Build the caches of the embedded models (a no-op for ready ones)."""
    from agents.models import ModelError, embedded_models, prepare_model

    chosen = names or list(embedded_models())
    try:
        for model_name in chosen:
            result = prepare_model(
                model_name, force=force, progress=lambda m: console.print(m, highlight=False)
            )
            state = "built" if result.built else "ready"
            console.print(
                f"{model_name}: {state} ({result.seconds:.2f} s) {result.path}", highlight=False
            )
    except ModelError as exc:
        raise _fail(str(exc)) from None


def main() -> None:
    app()


def simulate_script(argv: list[str] | None = None) -> None:
    """Entry of the root `simulate.py` (the Ray job script): `moralsim simulate` by another name."""
    args = sys.argv[1:] if argv is None else argv
    app(args=["simulate", *args], prog_name="simulate.py")
