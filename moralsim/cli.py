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

from agents.models import quiet_loading
from agents.placement import DEVICE_HELP
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
quiet_loading()


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
    resume: bool = False,
) -> RunConfig:
    """The run's config from --config, --set and the options; with `resume`, the config saved in
    the run folder, refusing any stated setting that differs from it (moralsim.resume)."""
    from moralsim.resume import resumable_config

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
        return resumable_config(config, sets) if resume else load_config(config, sets)
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
    _simulate(_run_config(config, sets, seed, name, output_dir, num_dialogues, resume), resume)


def _simulate(run: RunConfig, resume: bool) -> None:
    from agents.models import ModelError, resolve_model
    from agents.openai_client import AgentError
    from agents.placement import PlacementError
    from evaluators.llm_judge import parse_endpoint_spec
    from evaluators.scorers import SCORER_KINDS, registered_scorer
    from moralsim.backend_specs import local_bot_model, user_policy
    from moralsim.run_simulation import simulate as run_simulation
    from simulators.ray_runtime import RuntimeFailure

    _check_plan(run)
    generative = ("causal-lm", "seq2seq-lm")
    try:
        for key, spec, kinds in (
            ("bot.model", local_bot_model(run), generative),
            (
                "evaluators.embedding_model",
                run.evaluators.embedding_model,
                ("sentence-encoder", "encoder"),
            ),
            (
                "evaluators.agreement_model",
                None
                if registered_scorer(run.evaluators.agreement_model)
                or parse_endpoint_spec(run.evaluators.agreement_model)  # a judge behind a URL
                else run.evaluators.agreement_model,
                SCORER_KINDS,  # a classifier, a factored scorer, or an LLM judge
            ),
            (
                "user.phraser_model",
                run.user.phraser_model if user_policy(run) != run.user.policy else None,
                generative,
            ),
        ):
            if spec is None:
                continue
            try:
                found = resolve_model(spec, progress=lambda m: console.print(m, highlight=False))
            except ModelError as exc:
                raise _fail(f"{key}: {exc}") from None
            if found.kind not in kinds:
                raise _fail(
                    f"{key}: '{spec}' is a {found.kind} folder; this role needs a "
                    f"{' or '.join(kinds)}"
                )
        result = run_simulation(run, resume=resume, say=lambda m: console.print(m, highlight=False))
    except (ConfigError, RuntimeFailure, AgentError, PlacementError) as exc:
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
    flows can run on it, the agent is registered and can run them, the output folder can be
    written."""
    from moralsim.backend_specs import agent_problem, placement_problem
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
    if run.bot.adapter:
        from agents.models import ModelError, check_adapter_folder

        try:
            check_adapter_folder(run.bot.adapter)
        except ModelError as exc:
            raise _fail(f"bot.adapter: {exc}") from None
    problem = agent_problem(run, os.environ) or placement_problem(run)
    if problem:
        raise _fail(problem)
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

    from evaluators.stats import TOO_FEW

    def row(label: str, entry: Any, scale: float = 100.0) -> None:
        if not isinstance(entry, dict) or not entry.get("n"):
            return
        mean, ci = entry.get("mean"), entry.get("ci95")
        table.add_row(
            label,
            "—" if mean is None else f"{scale * mean:+.1f}",
            (entry.get("method") if entry.get("method") == TOO_FEW else "—")
            if not ci
            else f"[{scale * ci[0]:+.1f}, {scale * ci[1]:+.1f}]",
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
    Social-Chem examples added. A pack's sign sets stay out of train and dev (they measure
    scorers), and are in test."""
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
    from training.scorer import trainable

    data = load_pack(pack).pack
    splits = {s: data.agreement_in(s) for s in ("train", "dev", "test")}
    splits["train"], splits["dev"] = trainable(splits["train"]), trainable(splits["dev"])
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
    factored: Annotated[
        bool,
        typer.Option(
            help="Train the factored scorer instead: the answer's stance on the question's act "
            "times the RoT's direction on it (needs the pack's agreement_directions)."
        ),
    ] = False,
    stated: Annotated[
        str | None,
        typer.Option(
            help="Train a stated scorer instead: the factored recipe's stance half times the "
            "pack's stated RoT directions, with this trained classifier (a folder, or "
            "agreement-minilm) reading every pair the pack does not state."
        ),
    ] = None,
    probe: Annotated[
        bool,
        typer.Option(
            help="With --stated: add a linear probe on the frozen SmolLM2-135M that reads the "
            "RoT's direction; with the classifier it reads every pair the pack does not state, "
            "except a bot's own reason (like agreement-probe, the default). On the core pack "
            "it installs the shipped head; on another pack it reads every direction example, "
            "about 13 a second on 2 CPU cores."
        ),
    ] = False,
    probe_examples: Annotated[
        int | None,
        typer.Option(
            help="With --probe: fit the probe on a seeded sample of this many direction "
            "examples (a faster, weaker fit; never the shipped head).",
            min=1,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    device: Annotated[str, typer.Option(help="Where it trains: " + DEVICE_HELP)] = "auto",
    dtype: Annotated[
        str,
        typer.Option(
            help="float32, or bfloat16 (autocast; weights stay float32); auto: "
            "bfloat16 on a GPU, float32 on the CPU."
        ),
    ] = "auto",
) -> None:
    """Fine-tune an encoder as the agree/neutral/disagree answer-RoT classifier.

    On a pack this is the embedded default's recipe (its sources, repeats, caps and frozen
    layers) unless an option changes it, so `--output my-scorer` reproduces agreement-minilm and
    `--independent` gives the same judge without the pack's reference answers. MIC data gets the
    plain recipe (every example, 3 epochs).
    """
    from agents.placement import PlacementError, resolve_placement
    from scenarios.loaders import ScenarioLoadError
    from training.scorer import describe_recipe, scorer_recipe, train_agreement_classifier

    try:
        placement = resolve_placement(device, dtype, prefix="--")
    except PlacementError as exc:
        raise _fail(str(exc)) from None
    if placement.dtype == "float16":
        raise _fail("--dtype float16: scorer training runs in float32 or bfloat16")
    if mic and independent:
        raise _fail("--independent leaves out a pack's reference answers; MIC data has none")
    if probe and not stated:
        raise _fail("--probe adds a probe to a stated scorer: give --stated CLASSIFIER too")
    if probe_examples is not None and not probe:
        raise _fail("--probe-examples sizes the probe's fit: give --probe too")
    if factored or stated:
        flag = "--factored" if factored else "--stated"
        if mic or social_chem or independent or class_balance or (factored and stated):
            raise _fail(
                f"{flag} trains on a pack with stated RoT directions; it takes no --mic, "
                "--social-chem, --independent, --class-balance or the other of --factored "
                "and --stated"
            )
        _train_factored(
            output, pack, placement, seed, stated, probe, probe_examples, base_model=base_model,
            epochs=epochs,
            learning_rate=learning_rate, batch_size=batch_size, max_length=max_length,
            frozen_layers=frozen_layers,
        )  # fmt: skip
        return
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
    console.print(f"recipe: {describe_recipe(cfg)}; on {placement}", highlight=False)
    result = train_agreement_classifier(
        splits["train"],
        splits["dev"],
        splits["test"],
        output,
        cfg,
        progress=lambda m: console.print(m, highlight=False),
        placement=placement,
    )
    line = f"dev accuracy {result.dev.accuracy:.3f}, macro-F1 {result.dev.macro_f1:.3f}"
    if result.test:
        line += f"; test accuracy {result.test.accuracy:.3f}, macro-F1 {result.test.macro_f1:.3f}"
    console.print(f"saved {output} (best epoch {result.best_epoch}, {result.seconds:.0f} s)")
    console.print(line)
    if data is not None:
        from training.scorer import write_pack_card

        _print_card(output, write_pack_card(output, data, str(output)))


def _train_factored(
    output: Path,
    pack: str,
    placement: Any,
    seed: int,
    stated: str | None,
    probe: bool = False,
    probe_examples: int | None = None,
    **options: Any,
) -> None:
    """`train scorer --factored`: stance and direction classifiers, then the pack's card;
    `--stated CLASSIFIER`: the stance classifier beside a copy of CLASSIFIER (and, with
    `--probe`, a frozen-LM probe), and a card measured with and without the pack's stated
    directions."""
    from agents.models import ModelError, resolve_model
    from scenarios.loaders import ScenarioLoadError
    from scenarios.pack import load_pack
    from scenarios.registry import RegistryError
    from training.factored_scorer import (
        factored_recipe,
        train_factored_scorer,
        train_stated_scorer,
    )
    from training.scorer import write_pack_card

    try:
        data = load_pack(pack).pack
        recipe = factored_recipe(seed, **options)
        agreement = None
        if stated:
            if not data.direction_map():
                raise ValueError(
                    f"--stated: pack '{pack}' states no RoT directions "
                    "(pack.yaml: agreement_directions)"
                )
            kind = resolve_model(stated, prepare=False).kind  # refuse before any build
            if kind != "sequence-classifier":
                raise ValueError(
                    f"--stated {stated}: a {kind}, not a trained agreement classifier folder"
                )
            agreement = resolve_model(stated).path
    except (ScenarioLoadError, RegistryError, TypeError, ValueError, ModelError) as exc:
        raise _fail(str(exc)) from None

    def say(message: str) -> None:
        console.print(message, highlight=False)

    try:
        if agreement is not None:
            result = train_stated_scorer(
                data, output, agreement, recipe, agreement_name=stated, progress=say,
                placement=placement,
            )  # fmt: skip
            if probe:
                from training.lm_probe import ProbeRecipe, add_probe

                add_probe(data, output, ProbeRecipe(examples=probe_examples), progress=say)
        else:
            result = train_factored_scorer(data, output, recipe, progress=say, placement=placement)
    except (ValueError, ModelError) as exc:
        raise _fail(str(exc)) from None
    console.print(
        f"saved {output} ("
        + ", ".join(f"{name} {sec:.0f} s" for name, sec in result.seconds.items())
        + ")",
        highlight=False,
    )
    directions = data.direction_map() if agreement is not None else None
    _print_card(output, write_pack_card(output, data, str(output), directions=directions))


def _print_card(output: Path, card: dict[str, Any]) -> None:
    console.print(
        f"scorer card: {output / 'scorer_card.json'} (verdict: "
        f"{card['key_figures'].get('verdict')}); measure it on real text with `moralsim "
        f"scorer eval {output} --moral-stories FILE`",
        highlight=False,
    )


@app.command()
def chat(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    model: Annotated[
        str | None, typer.Option(help="Bot: local folder or embedded name (bot.model).")
    ] = None,
    adapter: Annotated[str | None, typer.Option(help="PEFT LoRA adapter folder.")] = None,
    merge: Annotated[bool, typer.Option(help="Merge the adapter into the weights.")] = False,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="Chat with an OpenAI-compatible server instead: its base URL (bot.agent=openai, "
            "bot.base_url=URL)."
        ),
    ] = None,
    endpoint_model: Annotated[
        str | None, typer.Option(help="Model name on the endpoint [with --endpoint: default].")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the endpoint's API key [with --endpoint: none]."
        ),
    ] = None,
    system_prompt: Annotated[str | None, typer.Option(help="Instruction for the bot.")] = None,
    max_new_tokens: Annotated[int | None, typer.Option(help="Longest reply in tokens.")] = None,
    agreement_model: Annotated[str | None, typer.Option(help="Agreement scorer.")] = None,
    embedding_model: Annotated[str | None, typer.Option(help="Sentence encoder.")] = None,
    scores: Annotated[bool, typer.Option(help="Show live scores after every reply.")] = True,
    seed: Annotated[int | None, typer.Option(help="Seed for decoding and phrases.")] = None,
) -> None:
    """Talk to a bot in the terminal, each reply scored live against a RoT (/help inside).

    The bot and the scorers are a run config's (--config, --set), built as `simulate` builds
    them; the options are shortcuts for its keys and, when given, win over the config.
    """
    from agents.models import ModelError, cache_dir
    from agents.openai_client import AgentError
    from moralsim.repl import ChatSession, run_repl
    from scenarios.registry import RegistryError

    sets = _chat_sets(
        model=model, adapter=adapter, endpoint=endpoint, endpoint_model=endpoint_model,
        api_key_env=api_key_env, system_prompt=system_prompt, max_new_tokens=max_new_tokens,
        agreement_model=agreement_model, embedding_model=embedding_model,
    )  # fmt: skip
    run = _run_config(config, [*sets, *(set_ or [])], seed)
    try:
        agent = _chat_agent(run, merge)
    except (ModelError, AgentError, RegistryError) as exc:
        raise _fail(str(exc)) from None
    evaluators, unavailable, scorer_info = None, "", None
    if scores:
        from evaluators.scorer_eval import scorer_record, scorer_summary
        from evaluators.stack import load_evaluators

        e = run.evaluators
        try:
            evaluators = load_evaluators(
                e.agreement_model, e.embedding_model, device=e.device, dtype=e.dtype
            )
            scorer_info = scorer_summary(scorer_record(e.agreement_model, e.agreement_card))
        except (ModelError, OSError, ValueError) as exc:
            unavailable = f"scorer unavailable: {exc}"
    else:
        unavailable = "scores off (--no-scores)"
    session = ChatSession(
        agent, evaluators, unavailable=unavailable, seed=run.seed, scorer=scorer_info
    )
    run_repl(session, history_file=cache_dir() / "chat_history")


def _chat_sets(**options: Any) -> list[str]:
    """`moralsim chat`'s options as config overrides: only the ones given win over the config.

    Values are JSON, which the overrides read as YAML, so a prompt with a colon stays text.
    `--endpoint` keeps the meaning it had before chats read configs: no API key unless
    `--api-key-env` names one, and the served model `default` unless one is named.
    """
    keys = {
        "model": "bot.model", "adapter": "bot.adapter", "system_prompt": "bot.system_prompt",
        "max_new_tokens": "bot.generation.max_new_tokens",
        "agreement_model": "evaluators.agreement_model",
        "embedding_model": "evaluators.embedding_model", "endpoint_model": "bot.model",
        "api_key_env": "bot.api_key_env",
    }  # fmt: skip
    values: dict[str, Any] = {}
    if options["endpoint"] is not None:
        values = {"bot.agent": "openai", "bot.base_url": options["endpoint"]}
        values.update({"bot.model": "default", "bot.api_key_env": None})
    for option, key in keys.items():  # endpoint_model after model: it names the served one
        if options[option] is not None:
            values[key] = options[option]
    return [f"{key}={json.dumps(value)}" for key, value in values.items()]


def _chat_agent(run: RunConfig, merge: bool) -> Any:
    """The config's bot, built from the same spec a run builds (moralsim.backend_specs), so a
    chat answers as the simulated dialogues' bot does."""
    import dataclasses

    from moralsim.backend_specs import agent_spec, endpoint_problem, placement_problem

    problem = endpoint_problem(run.bot, os.environ) or placement_problem(run, on_ray=False)
    if problem:
        raise _fail(problem)
    spec = agent_spec(run, on_ray=False)
    if merge:
        if run.bot.agent != "transformers":
            raise _fail(
                f"--merge folds a local adapter into its model; bot.agent is {run.bot.agent}"
            )
        spec = dataclasses.replace(spec, kwargs={**spec.kwargs, "merge": True})
    return spec.build()


@app.command(name="eval")
def eval_(
    model: Annotated[
        str | None,
        typer.Option(
            help="Bot: local model folder or embedded name [default: the config's bot.model, "
            "smollm2-135m-instruct; with --resume, the run's own]."
        ),
    ] = None,
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

    chosen = [p.strip() for p in probes.split(",") if p.strip()]
    sets: list[str] = []
    # A resumed eval keeps its own model and flows unless they are stated again.
    if model is not None:
        sets.append(f"bot.model={model}")
    if chosen or not resume:
        chosen = chosen or [f.name for f in flows_in_order() if f.probe]
        sets.append(f"flows=[{', '.join(chosen)}]")
    if adapter:
        sets.append(f"bot.adapter={adapter}")
    if no_ray:
        sets.append("runtime.ray=false")
    run = _run_config(config, [*sets, *(set_ or [])], seed, name, output_dir, resume=resume)
    _simulate(run, resume)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (with dialogues.jsonl).")],
) -> None:
    """Rebuild summary.json and report.html of a run folder from its records."""
    from evaluators.report import write_report
    from scenarios.plugins import PluginError

    def warn(message: str) -> None:
        console.print(f"[bold yellow]warning:[/] {message}", highlight=False)

    try:
        summary, html = write_report(run_dir, warn=warn)
    except (FileNotFoundError, ValueError, PluginError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {summary} and {html}", highlight=False)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="First run folder (e.g. the base bot).")],
    run_b: Annotated[Path, typer.Argument(help="Second run folder (e.g. the moral bot).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON on stdout.")
    ] = False,
    top: Annotated[
        int, typer.Option(min=0, help="Largest per-scenario changes shown per metric.")
    ] = 3,
    fail_if: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-if",
            help="Exit 1 when this holds, e.g. 'S_MA < 0' (B - A, x100) or 'S_MR1.low < 0' "
            "(lower bound of its 95% interval); fields: diff, low, high, a, b. Repeatable.",
        ),
    ] = None,
) -> None:
    """Which bot is better, and where: each metric with its 95% CI and the difference B - A,
    paired by scenario where both runs asked the same questions."""
    from evaluators.compare import compare_runs, compare_warnings
    from evaluators.compare_conditions import Condition
    from scenarios.plugins import PluginError

    try:
        conditions = [Condition.parse(c) for c in fail_if or []]
        rows = compare_runs(run_a, run_b)
        failed = [c.text for c in conditions if c.holds(rows)]
    except (FileNotFoundError, ValueError, PluginError) as exc:
        raise _fail(str(exc)) from None
    warnings = compare_warnings(run_a, run_b)
    if as_json:
        out = {
            "a": str(run_a), "b": str(run_b), "warnings": warnings, "failed": failed,
            "rows": [r.to_dict() for r in rows],
        }  # fmt: skip
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        _print_comparison(run_a, run_b, rows, top)
    for warning in warnings:
        console.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    for text in failed:
        console.print(f"[bold red]failed:[/] {text}", highlight=False)
    if failed:
        raise typer.Exit(1)


def _print_comparison(run_a: Path, run_b: Path, rows: list[Any], top: int) -> None:
    """The metric table, then each paired metric's largest per-scenario changes side by side."""

    def cell(est: Any) -> str:
        if est.mean is None:
            return "—"
        ci = "" if est.ci_low is None else f" [{100 * est.ci_low:+.1f}, {100 * est.ci_high:+.1f}]"
        return f"{100 * est.mean:+.1f}{ci} (n={est.n})"

    def diff_cell(r: Any) -> str:
        if r.diff is None:
            return "—"
        if r.diff_low is None:
            return f"{100 * r.diff:+.1f}"
        return f"{100 * r.diff:+.1f} [{100 * r.diff_low:+.1f}, {100 * r.diff_high:+.1f}]"

    same = run_a.name == run_b.name
    name_a, name_b = (str(run_a), str(run_b)) if same else (run_a.name, run_b.name)
    table = Table(title="x100, 95% CI; B - A paired by scenario where both runs have it")
    for column in ("metric", name_a, name_b, "B - A", "interval"):
        table.add_column(column, no_wrap=True)
    for r in rows:
        how = f"{r.method}, {r.pairs} pairs" if r.pairs else r.method or "—"
        table.add_row(r.metric, cell(r.a), cell(r.b), diff_cell(r), how)
    out = Console(width=200)
    out.print(table)
    changes = Table(title=f"largest per-scenario changes (top {top} per metric, x100)")
    for column in ("metric", "scenario", "A", "B", "B - A", f"answer {name_a}", f"answer {name_b}"):
        changes.add_column(column, overflow="fold", max_width=48)
    shown = 0
    for r in rows:
        for c in r.changes[:top]:
            changes.add_row(
                r.metric, c.key, f"{100 * c.a:+.0f}", f"{100 * c.b:+.0f}", f"{100 * c.diff:+.0f}",
                _clip(c.a_text), _clip(c.b_text),
            )  # fmt: skip
            shown += 1
    if shown:
        out.print(changes)


def _clip(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@models_app.command("list")
def models_list() -> None:
    """Show the embedded models, where they live and whether they are prepared."""
    from agents.models import MARKER, ModelError, cache_dir, embedded_models, is_current

    table = Table(title=f"embedded models (cache: {cache_dir()})")
    table.add_column("name", no_wrap=True)
    for column in ("kind", "package", "status", "path"):
        table.add_column(column, overflow="fold")
    for model in embedded_models().values():
        package = ", ".join(
            f"{name}=={version}" if version else f"{name} (missing)"
            for name, version in model.packages().items()
        )
        try:
            source = model.locate()
        except ModelError:
            source = None
        if source is None or model.missing_packages():  # an also-needed package counts too
            table.add_row(model.name, model.kind, package, f"install: {model.install_hint()}", "")
            continue
        if model.build is None:
            table.add_row(model.name, model.kind, package, "ready (in package)", str(source))
            continue
        target = cache_dir() / "models" / model.name
        command = f"moralsim models prepare{' ' + model.name if model.optional else ''}"
        if not (target / MARKER).is_file():
            status = f"not prepared ({command})"
        elif is_current(model, source):
            status = "prepared"
        else:  # built from another pack, recipe or derivation: the next use rebuilds it
            status = f"stale: rebuilt on next use ({command})"
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
        list[str] | None,
        typer.Argument(help="Models to prepare (default: every embedded model but the optional)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the cache is valid.")] = False,
) -> None:
    """Build the caches of the embedded models (a no-op for ready ones)."""
    from agents.models import ModelError, embedded_models, prepare_model

    chosen = names or [name for name, m in embedded_models().items() if not m.optional]
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
