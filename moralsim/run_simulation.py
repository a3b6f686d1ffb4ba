"""One simulation run from a RunConfig: pick questions, run dialogues, write the run folder.

Outputs in `<output_dir>/<name>/`: config.yaml (everything needed to repeat the run),
dialogues.jsonl (every turn and score), summary.json and report.html.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from moralsim.config import ConfigError, RunConfig, save_config

SUPPORTED_FLOWS = ("moraldial", "sage")


@dataclass
class RunResult:
    run_dir: Path
    dialogues_written: int
    skipped: int
    bot_turns: int
    seconds: float


def check_runnable(run: RunConfig) -> None:
    """Refuse, with the key to change, what this version cannot run yet."""
    if run.runtime.ray:
        raise ConfigError(
            "'runtime.ray' is true, but the Ray runtime is not built yet; "
            "run in this process with --set runtime.ray=false"
        )
    for flow in run.flows:
        if flow not in SUPPORTED_FLOWS:
            raise ConfigError(
                f"'flows': '{flow}' is not available yet (available: {', '.join(SUPPORTED_FLOWS)})"
            )


def simulate(run: RunConfig, resume: bool = False, say: Callable[[str], None] = print) -> RunResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from agents.base import GenerationSettings
    from evaluators.moraldial import MoralDialParams
    from evaluators.report import write_report
    from evaluators.stack import load_evaluators
    from scenarios.jsonl import DialogueWriter, read_dialogues
    from scenarios.pack import load_pack
    from scenarios.registry import AGENTS
    from simulators.inprocess import InProcessRunner, RunStats
    from simulators.sage_probe import run_sage_probe, sage_section

    check_runnable(run)
    run_dir = run.run_dir
    records = run_dir / "dialogues.jsonl"
    done: set[str] = set()
    if records.exists() and records.stat().st_size > 0:
        if not resume:
            raise ConfigError(
                f"{records} already holds dialogues; pass --resume to continue that run, "
                "or choose another --name"
            )
        done = {d.id for d in read_dialogues(records)}
    pack = load_pack(run.scenarios.pack).pack
    pool = pack.questions_in(run.scenarios.split)
    if not pool:
        raise ConfigError(
            f"'scenarios.split': pack '{pack.name}' has no {run.scenarios.split} questions"
        )
    random.Random(run.seed).shuffle(pool)
    questions = pool[: run.num_dialogues]
    if len(questions) < run.num_dialogues:
        say(
            f"only {len(questions)} {run.scenarios.split} questions in '{pack.name}'; running those"
        )
    save_config(run, run_dir / "config.yaml")
    g = run.bot.generation
    settings = GenerationSettings(
        max_new_tokens=g.max_new_tokens, do_sample=g.do_sample, temperature=g.temperature,
        top_p=g.top_p, num_beams=g.num_beams, seed=run.seed,
    )  # fmt: skip
    agent = AGENTS.get(run.bot.agent)(
        run.bot.model,
        adapter=run.bot.adapter,
        system_prompt=run.bot.system_prompt,
        generation=settings,
        batch_size=run.bot.batch_size,
    )
    params = MoralDialParams(
        pushback_below=run.user.pushback_threshold,
        firm_below=run.user.firm_threshold,
        revision_lambda=run.evaluators.revision_lambda,
        safety_k=run.evaluators.safety_k,
    )
    safety_rots = [s.rot.text for s in pack.safety_rots]
    if not safety_rots:
        say(f"pack '{pack.name}' has no safety RoTs; S_MA uses the core pack's safety RoTs")
    stack = load_evaluators(
        run.evaluators.agreement_model, run.evaluators.embedding_model, safety_rots or None, params
    )
    meta = {"bot": run.bot.model, "adapter": run.bot.adapter, "run": run.name}
    runner = InProcessRunner(
        agent, stack.moraldial, params, seed=run.seed,
        meta=meta,
    )  # fmt: skip
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    started = time.perf_counter()
    with Progress(*columns) as bar, DialogueWriter(records) as writer:
        stats = RunStats()
        if "moraldial" in run.flows:
            task = bar.add_task("moraldial dialogues", total=None)
            stats = runner.run(
                questions,
                writer,
                done,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )
        if "sage" in run.flows:
            probe_questions = questions[: run.probes.sage_questions]
            for rot_prompt in (False, True) if run.probes.sage_rot_prompt else (False,):
                label = "sage probe (RoT prompted)" if rot_prompt else "sage probe"
                probe_task = bar.add_task(label, total=None)
                written = run_sage_probe(
                    probe_questions, agent, writer, run.seed, rot_prompt, done, meta
                )
                stats.dialogues += written
                stats.bot_turns += 2 * written
                bar.update(probe_task, completed=1, total=1)
        stats.seconds = time.perf_counter() - started
    if "sage" in run.flows:
        probes_path = run_dir / "probes.json"
        probes = (
            json.loads(probes_path.read_text(encoding="utf-8")) if probes_path.is_file() else {}
        )
        section = sage_section(read_dialogues(records), stack.embed, run.probes.sage_variant)
        if section is not None:
            probes["sage"] = section
        probes_path.write_text(json.dumps(probes, indent=2) + "\n", encoding="utf-8")
    write_report(run_dir)
    return RunResult(run_dir, stats.dialogues, stats.skipped, stats.bot_turns, stats.seconds)
