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


def _specs(run: RunConfig, safety_rots: list[str]) -> tuple[Any, Any]:
    from agents.base import GenerationSettings
    from evaluators.moraldial import MoralDialParams
    from simulators.ray_actors import AgentSpec, EvaluatorSpec

    g = run.bot.generation
    settings = GenerationSettings(
        max_new_tokens=g.max_new_tokens, do_sample=g.do_sample, temperature=g.temperature,
        top_p=g.top_p, num_beams=g.num_beams, seed=run.seed,
    )  # fmt: skip
    agent = AgentSpec(
        run.bot.agent,
        run.bot.model,
        {
            "adapter": run.bot.adapter,
            "system_prompt": run.bot.system_prompt,
            "generation": settings,
            "batch_size": run.bot.batch_size,
            **(
                {"max_context_tokens": run.bot.max_context_tokens}
                if run.bot.agent == "transformers"
                else {}
            ),
        },
        response_cache=run.bot.response_cache,
    )
    params = MoralDialParams(
        pushback_below=run.user.pushback_threshold,
        firm_below=run.user.firm_threshold,
        revision_lambda=run.evaluators.revision_lambda,
        safety_k=run.evaluators.safety_k,
    )
    evaluators = EvaluatorSpec(
        run.evaluators.agreement_model,
        run.evaluators.embedding_model,
        tuple(safety_rots) if safety_rots else None,
        params,
    )
    return agent, evaluators


def _ray_options(run: RunConfig) -> Any:
    from simulators.ray_runtime import RayOptions

    if not run.runtime.ray:
        return None
    r = run.runtime
    return RayOptions(
        address=r.address,
        bot_replicas=r.bot_replicas,
        evaluator_replicas=r.evaluator_replicas,
        bot_num_cpus=r.bot_num_cpus,
        evaluator_num_cpus=r.evaluator_num_cpus,
        bot_threads=r.bot_threads,
        evaluator_threads=r.evaluator_threads,
        max_wait_ms=r.max_wait_ms,
        max_concurrent_dialogues=r.max_concurrent_dialogues,
        max_retries=r.max_retries,
    )


def _phraser(run: RunConfig) -> Any:
    if run.user.policy != "llm" or not run.user.phraser_model:
        return None
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from simulators.llm_user import LLMUserPhraser

    user_model = TransformersAgent(
        run.user.phraser_model,
        generation=GenerationSettings(max_new_tokens=60, seed=run.seed),
        batch_size=run.bot.batch_size,
    )
    return LLMUserPhraser(user_model)


def _record_scorer(run: RunConfig, run_dir: Path) -> None:
    """Keep the scorer and its card with the run, so every later report shows its validity."""
    from evaluators.scorer_eval import RUN_SCORER_FILE, scorer_record

    record = scorer_record(run.evaluators.agreement_model, run.evaluators.agreement_card)
    path = run_dir / RUN_SCORER_FILE
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def simulate(run: RunConfig, resume: bool = False, say: Callable[[str], None] = print) -> RunResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from scenarios.jsonl import DialogueWriter, read_dialogues
    from scenarios.pack import load_pack
    from simulators.backend import open_backend
    from simulators.live import LiveStats

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
    if "dit" in run.flows and not pack.dilemmas:
        raise ConfigError(f"'flows': pack '{pack.name}' has no DIT dilemmas; remove 'dit'")
    random.Random(run.seed).shuffle(pool)
    questions = pool[: run.num_dialogues]
    if len(questions) < run.num_dialogues:
        say(
            f"only {len(questions)} {run.scenarios.split} questions in '{pack.name}'; running those"
        )
    save_config(run, run_dir / "config.yaml")
    _record_scorer(run, run_dir)
    safety_rots = [s.rot.text for s in pack.safety_rots]
    if not safety_rots:
        say(f"pack '{pack.name}' has no safety RoTs; S_MA uses the core pack's safety RoTs")
    agent_spec, evaluator_spec = _specs(run, safety_rots)
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
            ray=_ray_options(run), phraser=_phraser(run),
        ) as backend,
        Progress(*columns) as bar,
        DialogueWriter(records) as writer,
    ):  # fmt: skip
        result.runtime = backend.description
        live = LiveStats()
        if "moraldial" in run.flows:
            task = bar.add_task("moraldial dialogues", total=None, live="")
            live.on_change = _progress_updater(bar, task, say)
            stats = backend.runner.run(questions, writer, done, live)
            result.skipped += stats.skipped
            result.retried += stats.retried
        probes = _run_probes(run, pack, pool, questions, backend, writer, done, meta, bar)
        result.seconds = live.seconds
        written = sorted(read_dialogues(records), key=lambda d: d.id)
        sections = _probe_sections(run, pack, written, backend)
    result.dialogues_written = len(written) - len(done)
    result.bot_turns = live.bot_turns + probes
    probes_path = run_dir / "probes.json"
    known = json.loads(probes_path.read_text(encoding="utf-8")) if probes_path.is_file() else {}
    known.update(sections)
    probes_path.write_text(json.dumps(known, indent=2) + "\n", encoding="utf-8")
    from evaluators.report import write_report

    write_report(run_dir)
    return result


def _progress_updater(bar: Any, task: Any, say: Callable[[str], None]) -> Callable[[Any], None]:
    """Live bar on a terminal; without one (a `ray job submit` log, nohup) a bar would show
    nothing until the end, so a plain status line is printed every 15 s instead."""
    last = [time.perf_counter()]

    def update(s: Any) -> None:
        bar.update(task, completed=s.dialogues, total=s.total, live=s.line())
        now = time.perf_counter()
        if not bar.console.is_terminal and (now - last[0] >= 15 or s.dialogues == s.total):
            last[0] = now
            say(f"moraldial {s.dialogues}/{s.total} dialogues · {s.line()}")

    return update


def _run_probes(
    run: RunConfig,
    pack: Any,
    pool: list[Any],
    questions: list[Any],
    backend: Any,
    writer: Any,
    done: set[str],
    meta: dict[str, Any],
    bar: Any,
) -> int:
    """Every probe the config names, after the interactive dialogues; returns bot turns."""
    turns = 0

    def step(label: str, work: Callable[[], int], per_dialogue: int) -> None:
        nonlocal turns
        task = bar.add_task(label, total=None, live="")
        written = work()
        turns += per_dialogue * written
        bar.update(task, completed=1, total=1, live=f"{written} dialogues")

    if "static-ril" in run.flows:
        from simulators.static_ril import run_static_ril

        step(
            "static RIL",
            lambda: run_static_ril(
                questions,
                backend.agent,
                backend.turn_scorer,
                writer,
                seed=run.seed,
                done=done,
                meta=meta,
            ),
            1,
        )
    if "sage" in run.flows:
        from simulators.sage_probe import run_sage_probe

        probe_questions = questions[: run.probes.sage_questions]
        for rot_prompt in (False, True) if run.probes.sage_rot_prompt else (False,):
            label = "sage probe (RoT prompted)" if rot_prompt else "sage probe"
            step(
                label,
                lambda rp=rot_prompt: run_sage_probe(
                    probe_questions, backend.agent, writer, run.seed, rp, done, meta
                ),
                2,
            )
    if "dit" in run.flows:
        from simulators.dit_probe import run_dit_probe

        dilemmas = pack.dilemmas[: run.probes.dit_dilemmas or None]
        step(
            f"DIT probe ({run.probes.dit_mode})",
            lambda: run_dit_probe(
                dilemmas,
                backend.agent,
                writer,
                seed=run.seed,
                orders=run.probes.dit_orders,
                mode=run.probes.dit_mode,
                done=done,
                meta=meta,
            ),
            3,
        )
    if "prudence" in run.flows:
        from simulators.prudence_probe import run_prudence_probe

        step(
            "prudence probe",
            lambda: run_prudence_probe(
                pool,
                backend.agent,
                backend.agreement,
                writer,
                seed=run.seed,
                n_questions=run.probes.prudence_questions,
                done=done,
                meta=meta,
            ),
            1,
        )
    return turns


def _probe_sections(
    run: RunConfig, pack: Any, dialogues: list[Any], backend: Any
) -> dict[str, Any]:
    """probes.json sections rebuilt from every record of the run (so --resume is exact)."""
    sections: dict[str, Any] = {}
    if "sage" in run.flows:
        from simulators.sage_probe import sage_section

        section = sage_section(dialogues, backend.embed, run.probes.sage_variant)
        if section is not None:
            sections["sage"] = section
    if "dit" in run.flows:
        from simulators.dit_probe import dit_section

        section = dit_section(dialogues, pack.dilemmas, mode=run.probes.dit_mode)
        if section is not None:
            sections["dit"] = section
    if "prudence" in run.flows:
        from simulators.prudence_probe import prudence_section

        section = prudence_section(dialogues, seed=run.seed)
        if section is not None:
            sections["prudence"] = section
    return sections
