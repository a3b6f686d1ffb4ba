"""`moralsim scorer eval`: how far an agreement scorer can be trusted, on data it never saw."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

scorer_app = typer.Typer(
    help="Evaluate agreement scorers and write their cards.", no_args_is_help=True
)
out = Console()
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


@scorer_app.command("eval")
def eval_scorer(
    model: Annotated[
        str,
        typer.Argument(
            help="Scorer: an embedded name (agreement-probe, the default; agreement-stated; "
            "agreement-minilm; agreement-factored), a factored or stated scorer folder (train "
            "scorer --factored / --stated [--probe]), a sequence-classifier folder, a "
            "causal-LM folder (used as an LLM judge), or openai:MODEL@BASE_URL."
        ),
    ],
    data: Annotated[
        list[Path] | None,
        typer.Option(help="JSONL of {question, answer, rot, label[, phenomenon]} (repeatable)."),
    ] = None,
    moral_stories: Annotated[
        Path | None,
        typer.Option(help="Moral Stories norm/action JSONL (pairwise accuracy on real text)."),
    ] = None,
    pack: Annotated[str, typer.Option(help="Pack whose evaluation sets to use.")] = "core",
    no_pack: Annotated[bool, typer.Option("--no-pack", help="Skip the pack's sets.")] = False,
    card: Annotated[
        Path | None,
        typer.Option(
            help="Where to write the card (default: scorer_card.json in the model folder)."
        ),
    ] = None,
    no_card: Annotated[bool, typer.Option("--no-card", help="Do not write a card.")] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write every figure to this JSON file.")
    ] = None,
    predictions_out: Annotated[
        Path | None,
        typer.Option(
            "--predictions",
            help="Also write one JSONL row per scored item (its text, gold label, the three "
            "probabilities, AS, and whether the figures count it right), to audit the scorer.",
        ),
    ] = None,
    device: Annotated[
        str,
        typer.Option(
            help="Where a local scorer runs (auto, cpu, cuda, cuda:N); the default keeps card "
            "figures comparable across machines."
        ),
    ] = "cpu",
    dtype: Annotated[
        str, typer.Option(help="A local scorer's precision (auto, float32, bfloat16, float16).")
    ] = "float32",
    stated_directions: Annotated[
        bool,
        typer.Option(
            help="Give a factored, stated or probe scorer the pack's stated RoT directions, as a "
            "run of the pack does; its pack sets are then named SET+stated."
        ),
    ] = False,
) -> None:
    """Accuracy, macro-F1, sign and pairwise accuracy, per phenomenon, with the confusion matrix."""
    from agents.models import ModelError
    from agents.placement import PlacementError, resolve_placement
    from evaluators.llm_judge import JudgeError
    from evaluators.scorer_eval import (
        LabelledSet,
        PairSet,
        evaluate_scorer,
        merge_card,
        pack_sets,
        read_card,
        user_set,
        warning_text,
        write_card,
    )
    from evaluators.scorers import ScorerSpecError, open_agreement_scorer
    from scenarios.loaders import ScenarioLoadError, load_moral_stories
    from scenarios.pack import load_pack

    # Validate every input before loading the model.
    try:
        placement = resolve_placement(device, dtype, prefix="--")
    except PlacementError as exc:
        raise _fail(str(exc)) from None
    labelled: list[LabelledSet] = []
    pairs: list[PairSet] = []
    stated: dict[tuple[str, str], str] = {}
    try:
        if stated_directions:
            stated = _stated_directions(model, pack, no_pack)
        if not no_pack:
            labelled += [
                replace(s, name=f"{s.name}+stated") if stated else s
                for s in pack_sets(load_pack(pack).pack)
            ]
        for path in data or []:
            labelled.append(user_set(path))
        if moral_stories is not None:
            pairs.append(PairSet("moral-stories", load_moral_stories(moral_stories)[0]))
    except (ScenarioLoadError, ModelError, ValueError) as exc:
        raise _fail(str(exc)) from None
    if not labelled and not pairs:
        raise _fail("nothing to evaluate: give --data or --moral-stories, or drop --no-pack")
    for path, option in ((json_out, "--json"), (predictions_out, "--predictions")):
        if path is not None and not path.expanduser().parent.is_dir():
            raise _fail(f"{option} {path}: folder {path.expanduser().parent} does not exist")
    rows: list[dict[str, Any]] | None = [] if predictions_out is not None else None
    try:
        scorer = open_agreement_scorer(model, device=placement.device, dtype=placement.dtype)
        if stated:
            scorer.use_directions(stated)
        figures = evaluate_scorer(scorer, labelled, pairs, predictions=rows)
    except (ModelError, ScorerSpecError, JudgeError) as exc:
        raise _fail(str(exc)) from None
    _print_figures(figures)
    folder = getattr(scorer, "path", None)
    target = card if card is not None else (Path(folder) if folder else None)
    if not no_card:
        if target is None:
            raise _fail("this scorer has no folder: name a card file with --card")
        card_dir = target.parent if target.suffix == ".json" else target
        old = read_card(card_dir) if target.suffix != ".json" else _read_json(target)
        new = merge_card(
            old, model, figures, _training_record(folder),
            probe_reading=getattr(scorer, "probe_reading", None),
        )  # fmt: skip
        path = _write(target, new, write_card)
        dropped = sorted(set((old or {}).get("figures", {})) - set(new["figures"]))
        if dropped:  # merge_card keeps every old figure unless it was read another way
            out.print(
                f"card: dropped {len(dropped)} figure(s) measured with another probe reading: "
                + ", ".join(dropped),
                highlight=False,
            )
        keys = new["key_figures"]
        out.print(
            f"card: {path} (real-data pairwise {_pct(keys['real_data_pairwise_accuracy'])}, "
            f"in-domain macro-F1 {_pct(keys['in_domain_macro_f1'])}: {keys['verdict']})",
            highlight=False,
        )
        warning = warning_text(keys)
        if warning:
            out.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    if json_out is not None:
        json_out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if predictions_out is not None and rows is not None:  # rows: a list exactly then
        with predictions_out.expanduser().open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        out.print(f"predictions: {predictions_out} ({len(rows)} rows)", highlight=False)


def _stated_directions(model: str, pack: str, no_pack: bool) -> dict[tuple[str, str], str]:
    """The pack's stated directions for `--stated-directions`, checked before any model loads."""
    from evaluators.scorer_eval import FACTORED_KINDS, scorer_kind
    from scenarios.pack import load_pack

    if no_pack:
        raise ValueError("--stated-directions reads the pack's directions; drop --no-pack")
    if scorer_kind(model) not in FACTORED_KINDS.values():
        raise ValueError("--stated-directions: only a factored scorer reads stated directions")
    stated = load_pack(pack).pack.direction_map()
    if not stated:
        raise ValueError(f"--stated-directions: pack '{pack}' states no RoT directions")
    return stated


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write(target: Path, card: dict[str, Any], write_card: Any) -> Path:
    if target.suffix == ".json":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        return target
    return write_card(target, card)


def _training_record(folder: Any) -> dict[str, Any] | None:
    """What the scorer was trained on and how: its folder's metrics.json (a factored scorer's
    factored.json), when there is one."""
    if not folder:
        return None
    metrics = _read_json(Path(folder) / "metrics.json") or _read_json(
        Path(folder) / "factored.json"
    )
    if not metrics:
        return None
    if "stated_directions" in metrics:
        return metrics
    return {k: metrics[k] for k in ("base_model", "data", "config", "train_examples", "seconds",
                                     "best_epoch") if k in metrics}  # fmt: skip


def _print_figures(figures: dict[str, dict[str, Any]]) -> None:
    summary = Table(title="agreement scorer: figures per set (%)")
    for column in ("set", "n", "accuracy", "macro-F1", "sign acc.", "pairwise acc."):
        summary.add_column(column, no_wrap=True)
    for name, f in figures.items():
        if f["kind"] == "pairs":
            summary.add_row(
                name, f"{f['n_pairs']} pairs", "—", "—", _pct(f["sign_accuracy"]),
                _pct(f["pairwise_accuracy"]),
            )  # fmt: skip
        else:
            summary.add_row(
                name, str(f["n"]), _pct(f["accuracy"]), _pct(f["macro_f1"]),
                _pct(f["sign_accuracy"]), "—",
            )  # fmt: skip
    out.print(summary)
    for name, f in figures.items():
        if f["kind"] != "labelled":
            continue
        if len(f["by_phenomenon"]) > 1:
            table = Table(title=f"{name}: per phenomenon (%)")
            for column in ("phenomenon", "n", "accuracy", "sign acc."):
                table.add_column(column, no_wrap=True)
            for phenomenon, g in f["by_phenomenon"].items():
                table.add_row(
                    phenomenon, str(g["n"]), _pct(g["accuracy"]), _pct(g["sign_accuracy"])
                )
            out.print(table)
        matrix = Table(title=f"{name}: confusion (rows gold, columns predicted)")
        matrix.add_column("gold \\ predicted")
        labels = list(f["confusion"])
        for label in labels:
            matrix.add_column(label, justify="right")
        for gold in labels:
            matrix.add_row(gold, *(str(f["confusion"][gold][p]) for p in labels))
        out.print(matrix)
