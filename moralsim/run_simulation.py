"""One simulation run from a RunConfig: pick questions, run dialogues and probes, write the
run folder.

Outputs in `<output_dir>/<name>/`: config.yaml (everything needed to repeat the run),
dialogues.jsonl (every turn and score of every flow), probes.json (question-level probe
results, rebuilt from the records), summary.json and report.html.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moralsim.backend_specs import evaluator_and_agent_specs, phraser, ray_options, user_policy
from moralsim.config import ConfigError, RunConfig, save_config


@dataclass
class RunResult:
    run_dir: Path
    dialogues_written: int
    skipped: int
    bot_turns: int
    seconds: float
    runtime: str = ""
    retried: int = 0


def _record_scorer(run: RunConfig, run_dir: Path, say: Callable[[str], None] = print) -> None:
    """Keep the scorer and its card with the run, so every later report shows its validity.

    An embedded scorer is prepared first: the run's evaluators would build it anyway, and a
    card read before that would be none (a first run) or an outdated build's."""
    from agents.models import embedded_models, prepare_model
    from evaluators.scorer_eval import RUN_SCORER_FILE, scorer_record

    if run.evaluators.agreement_model in embedded_models():
        prepare_model(run.evaluators.agreement_model, progress=say)
    record = scorer_record(run.evaluators.agreement_model, run.evaluators.agreement_card)
    path = run_dir / RUN_SCORER_FILE
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def simulate(run: RunConfig, resume: bool = False, say: Callable[[str], None] = print) -> RunResult:
    """Run every flow of the config into its run folder, which no other run may write meanwhile
    (a second one is refused with ConfigError)."""
    from moralsim.run_lock import RunFolderBusy, run_folder_lock

    try:
        with run_folder_lock(run.run_dir):
            return _simulate_locked(run, resume, say)
    except RunFolderBusy as exc:
        raise ConfigError(str(exc)) from None


def _simulate_locked(run: RunConfig, resume: bool, say: Callable[[str], None]) -> RunResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from scenarios.flow_api import FlowRun, flows_in_order
    from scenarios.jsonl import DialogueWriter, read_dialogues
    from scenarios.pack import load_pack
    from simulators.backend import open_backend
    from simulators.live import LiveStats

    run_dir = run.run_dir
    records = run_dir / "dialogues.jsonl"
    log = _log_file(run_dir / "run.log")
    say = _both(say, log)
    done: set[str] = set()
    if records.exists() and records.stat().st_size > 0:
        if not resume:
            raise ConfigError(
                f"{records} already holds dialogues; pass --resume to continue that run, "
                "or choose another --name"
            )
        done = _finished_ids(records, say)
    pack = load_pack(run.scenarios.pack).pack
    pool = pack.questions_in(run.scenarios.split)
    if not pool:
        raise ConfigError(
            f"'scenarios.split': pack '{pack.name}' has no {run.scenarios.split} questions"
        )
    flows = flows_in_order(run.flows)
    check_flows(run, flows, pack)
    random.Random(run.seed).shuffle(pool)
    questions = pool[: run.num_dialogues]
    if len(questions) < run.num_dialogues:
        say(
            f"only {len(questions)} {run.scenarios.split} questions in '{pack.name}'; running those"
        )
    save_config(run, run_dir / "config.yaml")
    say(f"run {run.name}: {len(questions)} questions, flows {', '.join(f.name for f in flows)}")
    _record_scorer(run, run_dir, say)
    safety_rots = [s.rot.text for s in pack.safety_rots]
    if not safety_rots:
        say(f"pack '{pack.name}' has no safety RoTs; S_MA uses the core pack's safety RoTs")
    stated = [(d.question, d.rot, d.direction) for d in pack.rot_directions]
    agent_spec, evaluator_spec = evaluator_and_agent_specs(run, safety_rots, stated)
    meta = {"bot": run.bot.model, "adapter": run.bot.adapter, "run": run.name}
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[live]}"),
    )
    result = RunResult(run_dir, 0, 0, 0, 0.0)
    with (
        open_backend(
            agent_spec, evaluator_spec, seed=run.seed, meta=meta, batch_size=run.bot.batch_size,
            ray=ray_options(run), phraser=phraser(run), user_policy=user_policy(run),
        ) as backend,
        Progress(*columns) as bar,
        DialogueWriter(records) as writer,
    ):  # fmt: skip
        result.runtime = backend.description
        if done:
            check_same_placements(run_dir, backend.placements)
        say(f"models: {backend.description}")
        write_runtime(run_dir, backend.description, backend.placements)
        live = LiveStats()
        counted = [0]
        for flow in flows:
            ctx = FlowRun(
                run, run.probes.get(flow.name), pack, questions, pool, backend, writer, done,
                meta, _stepper(bar, counted, say, log), bar, live, say,
            )  # fmt: skip
            started = time.perf_counter()
            flow.run(ctx)
            say(f"{flow.name}: done in {time.perf_counter() - started:.0f} s")
            result.skipped += ctx.outcome.get("skipped", 0)
            result.retried += ctx.outcome.get("retried", 0)
        result.seconds = live.seconds
        written = sorted(read_dialogues(records), key=lambda d: d.id)
        sections = _sections(run, flows, pack, written, backend)
    result.dialogues_written = len(written) - len(done)
    result.bot_turns = live.bot_turns + counted[0]
    probes_path = run_dir / "probes.json"
    known = _earlier_sections(probes_path, say)
    known.update(sections)
    probes_path.write_text(json.dumps(known, indent=2) + "\n", encoding="utf-8")
    from evaluators.report import write_report

    write_report(run_dir)
    return result


RUNTIME_FILE = "runtime.json"
"""Where the run's models ran (devices and precisions as resolved, Ray resources): the
config says `auto`, the report says what that turned out to be."""


EARLIER_PLACEMENT = "cpu float32"
"""Where every model of a run saved before runtime.json existed ran: releases without a GPU
path loaded them all on the CPU in float32."""


def write_runtime(run_dir: Path, description: str, placements: dict[str, str | None]) -> None:
    text = json.dumps({"models": description, **placements}, indent=2) + "\n"
    (run_dir / RUNTIME_FILE).write_text(text, encoding="utf-8")


def check_same_placements(run_dir: Path, now: dict[str, str | None]) -> None:
    """A resumed run must run its models where its first part did: bfloat16 on a GPU gives
    other replies and scores than float32 on the CPU, and one run's records must not mix them.
    Raises ConfigError naming the keys to set; nothing has been written yet."""
    try:
        before = json.loads((run_dir / RUNTIME_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        before = {"bot": EARLIER_PLACEMENT if now.get("bot") else None}
        before["scorers"] = EARLIER_PLACEMENT
    except (OSError, ValueError):
        return  # an unreadable runtime.json is rewritten below; the records are the run
    for part, keys in (
        ("bot", "bot.device / bot.dtype"),
        ("scorers", "evaluators.device / evaluators.dtype"),
    ):
        if before.get(part) != now.get(part):
            raise ConfigError(
                f"cannot resume {run_dir}: its {part} ran on {before.get(part)}, this run would "
                f"run it on {now.get(part)}; set {keys} to match (e.g. --set bot.device=cpu "
                "--set bot.dtype=float32)"
            )


def _earlier_sections(path: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """probes.json as it was: sections of flows this run did not rerun are kept. A damaged file
    holds nothing to keep (every section of this run is rebuilt from the records), so it is
    replaced, with a warning, rather than ending a finished run with a traceback."""
    from evaluators.report import RunFileError, read_json_file

    try:
        known = read_json_file(path)
    except RunFileError as exc:
        say(f"warning: {exc}; it is rewritten from the records")
        return {}
    return known if isinstance(known, dict) else {}


def _finished_ids(records: Path, say: Callable[[str], None]) -> set[str]:
    """Ids of the dialogues already on disk; a repeated id is reported (and counted once), a
    corrupt line is one clear error naming it, before anything is loaded or written."""
    from scenarios.jsonl import JsonlError, describe_duplicates, read_dialogues

    duplicates: list[str] = []
    try:
        finished = read_dialogues(records, duplicates=duplicates)
    except JsonlError as exc:
        raise ConfigError(
            f"cannot resume: {exc}. Fix or delete that line (the other records are kept)"
        ) from None
    if duplicates:
        say(f"warning: {describe_duplicates(records, duplicates)}")
    return {d.id for d in finished}


def check_flows(run: RunConfig, flows: list[Any], pack: Any) -> None:
    """Every flow's own check of this plan, before any model loads or any file is written."""
    from scenarios.flow_api import FlowPlan

    for flow in flows:
        try:
            flow.check(FlowPlan(run, run.probes.get(flow.name), pack))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _stepper(
    bar: Any, counted: list[int], say: Callable[[str], None], log: Callable[[str], None]
) -> Callable[[str, Callable[[], int], int], None]:
    """A flow's unit of work under its own progress line, with a line when it starts and ends:
    printed where no live bar shows (a `ray job` log), always kept in the run's log; its bot
    turns go into `counted`."""
    line = log if bar.console.is_terminal else say

    def step(label: str, work: Callable[[], int], per_record: int) -> None:
        task = bar.add_task(label, total=None, live="")
        line(f"{label}: started")
        start = time.perf_counter()
        written = work()
        counted[0] += per_record * written
        bar.update(task, completed=1, total=1, live=f"{written} dialogues")
        line(f"{label}: {written} dialogues in {time.perf_counter() - start:.0f} s")

    return step


def _log_file(path: Path) -> Callable[[str], None]:
    """Appends a line with its time to the run's log, so a run's progress and warnings can be
    read afterwards (or followed with `tail -f`); the file appears with its first line."""

    def write(message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {message}\n")

    return write


def _both(say: Callable[[str], None], log: Callable[[str], None]) -> Callable[[str], None]:
    def both(message: str) -> None:
        say(message)
        log(message)

    return both


def _sections(
    run: RunConfig, flows: list[Any], pack: Any, dialogues: list[Any], backend: Any
) -> dict[str, Any]:
    """probes.json entries rebuilt from every record of the run (so --resume is exact)."""
    from scenarios.flow_api import SectionContext

    out: dict[str, Any] = {}
    for flow in flows:
        ctx = SectionContext(
            run, run.probes.get(flow.name), pack.dilemmas, dialogues, backend.embed
        )
        section = flow.section(ctx)
        if section is not None:
            out[flow.key()] = section.to_dict()
    return out
